"""The import direction between pyq's packages, checked on the source (see docs/architecture.md).

The broker must run without the connector (it is embedded in tests of applications that
never load Spark), the codec must be usable without sockets or files, and the timing wheel
knows nothing of the operations that wait on it. A forbidden import anywhere — at module
level or inside a function — fails this test with the file and line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# (importing package, imported package): a module in the first may not import the second.
FORBIDDEN: tuple[tuple[str, str], ...] = (
    ("broker_sim", "connector"),
    ("broker_sim", "jobs"),
    ("broker_sim", "reference"),
    ("broker_sim", "pyspark"),
    ("broker_sim.protocol", "broker_sim.network"),
    ("broker_sim.protocol", "broker_sim.log"),
    ("broker_sim.protocol", "broker_sim.server"),
    ("broker_sim.timer", "broker_sim.purgatory"),
    ("broker_sim.timer", "broker_sim.server"),
    ("broker_sim.purgatory", "broker_sim.server"),
    ("broker_sim.coordinator", "broker_sim.server"),
    ("broker_sim.coordinator", "broker_sim.network"),
    ("connector", "jobs"),
    ("connector", "reference"),
    ("connector.client", "connector.source"),
    ("connector.client", "connector.sink"),
)
# broker_sim.common is the bottom layer: it may import nothing else from pyq.
BOTTOM = "broker_sim.common"
OURS = ("broker_sim", "connector", "jobs")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(tree: ast.AST, module: str, is_package: bool) -> Iterable[tuple[int, str]]:
    """(line, absolute module name) for every import in ``tree``, relative ones resolved."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield node.lineno, target
            for alias in node.names:  # "from broker_sim import connector"-style names
                yield node.lineno, f"{target}.{alias.name}"


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def violations(files: Iterable[tuple[Path, str]], root: Path = ROOT) -> list[str]:
    """Every forbidden import in ``files`` (path, source text) as "file:line: a -> b"."""
    found = []
    for path, text in files:
        module = module_name(path, root)
        tree = ast.parse(text, filename=str(path))
        for line, target in imported_modules(tree, module, path.name == "__init__.py"):
            rules = [(a, b) for a, b in FORBIDDEN if _within(module, a) and _within(target, b)]
            if _within(module, BOTTOM) and not _within(target, BOTTOM) and any(
                _within(target, pkg) for pkg in OURS
            ):
                rules.append((BOTTOM, target))
            for a, b in rules:
                found.append(f"{path.relative_to(root)}:{line}: {module} -> {target} ({a} may not import {b})")
    return found


def _sources() -> list[tuple[Path, str]]:
    return [(p, p.read_text()) for pkg in OURS for p in sorted((ROOT / pkg).rglob("*.py"))]


def test_the_tree_respects_the_import_direction() -> None:
    assert violations(_sources()) == []


@pytest.mark.parametrize(
    ("relpath", "source", "culprit"),
    [
        ("broker_sim/server/x.py", "from connector.client import Producer\n", "connector.client"),
        ("broker_sim/log/x.py", "def f():\n    import jobs.sessionize\n", "jobs.sessionize"),
        ("broker_sim/protocol/x.py", "from ..network import processor\n", "broker_sim.network"),
        ("broker_sim/protocol/records/x.py", "from ...log.segment import LogSegment\n", "broker_sim.log.segment"),
        ("broker_sim/timer/x.py", "from broker_sim.purgatory import Purgatory\n", "broker_sim.purgatory"),
        ("broker_sim/common/x.py", "from broker_sim.timer import SystemTimer\n", "broker_sim.timer"),
    ],
)
def test_a_forbidden_import_is_reported(relpath: str, source: str, culprit: str) -> None:
    found = violations([(ROOT / relpath, source)])
    assert found and culprit in found[0] and found[0].startswith(relpath)


def test_allowed_imports_pass() -> None:
    allowed = [
        (ROOT / "connector/client/x.py", "from broker_sim.protocol.records import MemoryRecords\n"),
        (ROOT / "broker_sim/purgatory/x.py", "from ..timer import SystemTimer\nimport threading\n"),
        (ROOT / "broker_sim/common/x.py", "from .clock import Clock\nimport time\n"),
        (ROOT / "jobs/x.py", "from connector.client import Fetcher\n"),
    ]
    assert violations(allowed) == []
