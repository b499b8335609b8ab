"""The README's "Running against Apache Kafka" tables say what the suite checks on Kafka.

- every module named on a row with ✓ under Apache Kafka runs its tests on Kafka (its
  broker fixture takes ``broker_under_test``, it uses the ``kafka``/``kafka_cluster``
  fixtures, or it starts a ``KafkaCluster`` of its own), and every module that does is
  named on such a row;
- every module named on any row exists;
- every tool with ✓ on pyq is run by the tools' test module (or by the module its row
  names), and a tool with ✗ is not run there; a ✗ row that names a module is where the
  tool's refusal is checked, so that module runs it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
TOOLS_TEST = ROOT / "tests" / "reference" / "test_kafka_tools_on_pyq.py"
_RUNS_ON_KAFKA = re.compile(
    r"\bbroker_under_test\b|def \w+\([^)]*\bkafka(_cluster)?\b|\bKafkaCluster\(")


def _section() -> str:
    text = README.read_text()
    start = text.index("## Running against Apache Kafka")
    return text[start:text.index("\n## ", start + 1)]


def _rows(header: str) -> list[list[str]]:
    section = _section()
    table = section[section.index(header):]
    rows = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def _runs_on_kafka(module: Path) -> bool:
    return bool(_RUNS_ON_KAFKA.search(module.read_text()))


def test_the_feature_matrix_names_exactly_the_modules_that_run_on_kafka() -> None:
    claimed: set[Path] = set()
    for _feature, pyq, kafka, tests in _rows("| feature | pyq | Apache Kafka | tests |"):
        modules = [ROOT / m for m in re.findall(r"`(tests/[\w/]+\.py)`", tests)]
        assert modules, f"a row names no test module: {tests}"
        for module in modules:
            assert module.exists(), f"{module} named in the README does not exist"
        assert pyq == "✓"
        if kafka == "✓":
            for module in modules:
                assert _runs_on_kafka(module), f"{module} is marked ✓ on Kafka but does not run there"
                claimed.add(module)
    running = {m for m in (ROOT / "tests").rglob("test_*.py")
               if m.parent.name != "reference" and m != Path(__file__).resolve() and _runs_on_kafka(m)}
    assert running == claimed, f"modules running on Kafka but not listed: {running - claimed}"


def test_every_tool_marked_verified_is_run_by_the_tools_tests() -> None:
    rows = _rows("| tool | on pyq | what is checked |")
    assert rows
    def runs(modules: list[Path]) -> set[str]:
        source = "\n".join(m.read_text() for m in modules)
        return set(re.findall(r'(?:tool|run_tool|acls|JavaTool)\(\s*(?:[\w.]+,\s*)*"(kafka-[\w-]+)"', source))

    for tools, verdict, what in rows:
        # the module a row names: where a ✓ tool is run, or where a ✗ tool's refusal is checked
        named_modules = [ROOT / m for m in re.findall(r"`(tests/[\w/]+\.py)`", what)]
        for name in re.findall(r"`(kafka-[\w-]+)`", tools):
            if verdict == "✓":
                assert name in runs([TOOLS_TEST, *named_modules]), \
                    f"{name} is marked ✓ but tests/reference does not run it"
            else:
                assert name not in runs([TOOLS_TEST]), f"{name} is marked ✗ but {TOOLS_TEST.name} runs it"
                assert not named_modules or name in runs(named_modules), \
                    f"{name}'s row names where its refusal is checked, but that module does not run it"
