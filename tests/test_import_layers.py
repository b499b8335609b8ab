"""The layers of pyq and which way they import: the diagram of docs/architecture.md, checked.

:data:`MAY_IMPORT` *is* the diagram: every part of the library (a package of ``broker_sim``
or ``connector``, or one of their top-level modules) lists the other parts it may import.
Anything else fails this test with the file and line — an import at module level or inside
a function alike (``if TYPE_CHECKING:`` imports aside: they are never run). A part of the
library that is not in the table fails too, so a new package starts by taking its place in
the diagram. Imports inside one part are free, but no file of the library may import itself
back through others: :func:`import_cycles` finds every circle in the graph of modules, lazy
imports included, and ``if TYPE_CHECKING:`` imports too (never run, but a module that needs
another's types while that one needs it back shows a seam that is not where the concept is:
give the shared view a module of its own, a ``typing.Protocol`` both sides import, as
``server/api_context.py`` is for the ``*_apis.py`` handlers). :data:`KNOWN_CIRCLES` lists the
few such circles left, each with its reason; none of them may run at import.

Why the layers are as they are is in docs/architecture.md; in short: the broker runs
without the connector (embedded in tests of applications that never load Spark), the codec
without sockets or files, the timing wheel without the operations that wait on it, the log
and the network without the server that drives them, and the connector's client without
the broker's internals. Where the connector does start brokers (``connector/cluster.py``'s
EmbeddedCluster, ``pyq cluster start``) it goes through the broker's launchers
(``broker_sim.cluster``, ``broker_sim.process``, ``broker_sim.cli``), explicit edges here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = ("broker_sim", "connector", "jobs")

_BROKER_BELOW_SERVER = {
    "broker_sim.common", "broker_sim.protocol", "broker_sim.timer", "broker_sim.purgatory",
    "broker_sim.log", "broker_sim.coordinator", "broker_sim.controller", "broker_sim.network",
    "broker_sim.security", "broker_sim.metrics", "broker_sim.registry", "broker_sim.raft",
    "broker_sim.quorum",
}

#: part -> the parts it may import (besides itself). The layer diagram of docs/architecture.md.
MAY_IMPORT: dict[str, set[str]] = {
    # ---- the broker, bottom up
    "broker_sim.common": set(),  # the floor: Clock, TopicPartition, ShutdownableThread
    "broker_sim.protocol": set(),  # the codec: no sockets, files, logs, threads of ours
    "broker_sim.raft": set(),  # the sans-I/O Raft core: no sockets, disks, threads, clocks
    "broker_sim.quorum": {"broker_sim.common", "broker_sim.protocol", "broker_sim.raft"},
    "broker_sim.timer": {"broker_sim.common"},
    "broker_sim.purgatory": {"broker_sim.common", "broker_sim.timer"},
    "broker_sim.security": {"broker_sim.common", "broker_sim.protocol"},
    "broker_sim.log": {"broker_sim.common", "broker_sim.protocol"},
    "broker_sim.coordinator": {"broker_sim.common", "broker_sim.protocol", "broker_sim.timer",
                               "broker_sim.purgatory"},
    "broker_sim.network": {"broker_sim.common", "broker_sim.protocol", "broker_sim.security"},
    "broker_sim.metrics": {"broker_sim.common", "broker_sim.network", "broker_sim.purgatory",
                           "broker_sim.timer"},
    "broker_sim.registry": {"broker_sim.common", "broker_sim.protocol", "broker_sim.network"},
    "broker_sim.controller": {"broker_sim.common", "broker_sim.protocol", "broker_sim.timer",
                              "broker_sim.purgatory", "broker_sim.log", "broker_sim.coordinator",
                              "broker_sim.network", "broker_sim.security", "broker_sim.metrics",
                              "broker_sim.raft", "broker_sim.quorum"},
    "broker_sim.server": _BROKER_BELOW_SERVER - {"broker_sim.server"},
    # ---- the broker's processes: launchers on top of the server
    "broker_sim.lifeline": set(),
    "broker_sim.process": {"broker_sim.common", "broker_sim.lifeline"},
    "broker_sim.cluster": {"broker_sim.common", "broker_sim.controller", "broker_sim.process"},
    "broker_sim.cli": _BROKER_BELOW_SERVER | {"broker_sim.server", "broker_sim.cluster",
                                              "broker_sim.process", "broker_sim.lifeline"},
    "broker_sim.__main__": {"broker_sim.cli"},
    "broker_sim": set(),
    # ---- the connector: the client speaks the protocol, nothing of the broker's insides
    "connector.client": {"broker_sim.common", "broker_sim.protocol", "broker_sim.security"},
    "connector.option_values": {"broker_sim.common", "broker_sim.protocol"},  # OptionError is a ConfigError
    "connector.registry": {"broker_sim.common", "broker_sim.protocol", "connector.option_values"},
    "connector.functions": {"connector.option_values", "connector.registry"},
    "connector.kafka_options": {"broker_sim.common", "connector.client", "connector.option_values"},
    "connector.source": {"broker_sim.common", "broker_sim.protocol", "connector.client",
                         "connector.kafka_options", "connector.option_values",
                         "connector.registry"},
    "connector.sink": {"broker_sim.common", "broker_sim.protocol", "connector.client",
                       "connector.kafka_options", "connector.option_values",
                       "connector.registry"},
    "connector.data_source": {"broker_sim.protocol", "connector.client", "connector.source",
                              "connector.sink"},
    "connector.spark_session": set(),
    "connector.progress": {"broker_sim.common", "connector.source"},
    "connector.local_security": {"broker_sim.security"},
    # EmbeddedCluster starts broker processes: through the broker's launchers only.
    # EmbeddedCluster(console_port=N) serves connector.console beside the cluster.
    "connector.cluster": {"broker_sim.common", "broker_sim.cluster", "broker_sim.process",
                          "connector.client", "connector.local_security", "connector.console"},
    # ``pyq console`` serves connector.console, a Kafka client's web pages (and a schema
    # registry's client's: schemas, decoded keys and values).
    "connector.console": {"broker_sim.common", "broker_sim.protocol", "connector.client",
                          "connector.registry"},
    # ``pyq cluster start`` is ``pyq-broker cluster`` (broker_sim.cli.run_cluster).
    "connector.cli": {"broker_sim.common", "broker_sim.protocol", "broker_sim.security",
                      "broker_sim.cli", "broker_sim.lifeline", "connector.client", "connector.local_security",
                      "connector.console", "connector.registry"},
    "connector": set(),
    # ---- applications
    "jobs": {"broker_sim.common", "broker_sim.protocol", "connector.client", "connector.source",
             "connector.sink", "connector.cluster", "connector.spark_session",
             "connector.data_source", "connector.registry"},
}

#: Outside pyq: (part prefix, import prefix) never allowed.
FORBIDDEN_EXTERNAL: tuple[tuple[str, str], ...] = (
    ("broker_sim", "pyspark"),
    ("broker_sim", "reference"),
    ("broker_sim", "tests"),
    ("connector", "reference"),
    ("connector", "tests"),
    ("connector.client", "pyspark"),
)


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_modules(tree: ast.AST, module: str, is_package: bool,
                     modules: Iterable[str] = (),
                     type_checking: bool = False) -> Iterable[tuple[int, str]]:
    """(line, absolute module name) for every import in ``tree`` that runs (those under
    ``if TYPE_CHECKING:`` only with ``type_checking``), relative ones resolved, at any depth
    (inside functions too). ``from p import x`` names ``p.x`` when that is one of
    ``modules``, else ``p``."""
    known = set(modules)
    package = module if is_package else module.rpartition(".")[0]

    def visit(node: ast.AST) -> Iterable[tuple[int, str]]:
        if not type_checking and isinstance(node, ast.If) and _type_checking_only(node):
            for orelse in node.orelse:
                yield from visit(orelse)
            return
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
            for alias in node.names:  # "from broker_sim import server": the module server
                sub = f"{target}.{alias.name}"
                yield node.lineno, sub if sub in known else target
        for inner in ast.iter_child_nodes(node):
            yield from visit(inner)

    yield from visit(tree)


def part_of(module: str) -> str:
    """The part of the library ``module`` belongs to (a key of :data:`MAY_IMPORT`)."""
    parts = module.split(".")
    return "jobs" if parts[0] == "jobs" else ".".join(parts[:2])


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _parse(files: Iterable[tuple[Path, str]], root: Path) -> list[tuple[Path, str, ast.AST]]:
    return [(path, module_name(path, root), ast.parse(text, filename=str(path)))
            for path, text in files]


def violations(files: Iterable[tuple[Path, str]], root: Path = ROOT,
               modules: Iterable[str] = ()) -> list[str]:
    """Every import in ``files`` (path, source text) the layers do not allow, as
    "file:line: a -> b (why)"."""
    found = []
    for path, module, tree in _parse(files, root):
        part = part_of(module)
        allowed = MAY_IMPORT.get(part)
        where = path.relative_to(root)
        if allowed is None:
            found.append(f"{where}:1: {module} is in no layer ({part} is not in MAY_IMPORT: "
                         "give it its place in docs/architecture.md's diagram and here)")
            continue
        for line, target in imported_modules(tree, module, path.name == "__init__.py", modules):
            for a, b in FORBIDDEN_EXTERNAL:
                if _within(module, a) and _within(target, b):
                    found.append(f"{where}:{line}: {module} -> {target} ({a} may not import {b})")
            if target.split(".")[0] not in OURS:
                continue
            other = part_of(target)
            if other != part and other not in allowed:
                found.append(f"{where}:{line}: {module} -> {target} ({part} may import "
                             f"{', '.join(sorted(allowed)) or 'nothing else of pyq'}; not {other})")
    return found


def import_graph(files: Iterable[tuple[Path, str]], root: Path = ROOT,
                 type_checking: bool = True, native: Iterable[str] = ()) -> dict[str, set[str]]:
    """module -> the library modules it imports (lazy imports included, and those under
    ``if TYPE_CHECKING:`` unless ``type_checking`` is False). ``native`` names compiled
    extension modules (no source to parse, no imports of ours): ``from . import _ext``
    is an edge to ``_ext``, not to the package."""
    parsed = _parse(files, root)
    modules = {module for _, module, _ in parsed} | set(native)
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for path, module, tree in parsed:
        for _line, target in imported_modules(tree, module, path.name == "__init__.py", modules,
                                              type_checking):
            while target and target not in modules:  # "from pkg.mod import name" -> pkg.mod
                target = target.rpartition(".")[0]
            if target and target != module:
                graph[module].add(target)
    return graph


def import_cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return cycles


def _sources() -> list[tuple[Path, str]]:
    return [(p, p.read_text()) for pkg in OURS for p in sorted((ROOT / pkg).rglob("*.py"))]


def _native_modules() -> set[str]:
    """The compiled extensions of the library (``_record_scan.cpython-311-....so``)."""
    return {module_name(p.with_name(p.name.split(".")[0] + ".py"))
            for pkg in OURS for ext in ("*.so", "*.pyd") for p in (ROOT / pkg).rglob(ext)}


#: Circles left that only ``if TYPE_CHECKING:`` imports close (no import at run time goes
#: round them; :func:`test_no_import_circle_between_files_of_the_library` checks that), each
#: with why it is not cut yet. A circle that grows, or a new one, fails; so does an entry
#: here that no longer is a circle (remove it).
KNOWN_CIRCLES: dict[frozenset[str], str] = {
    frozenset({"broker_sim.timer.timer_task", "broker_sim.timer.timer_task_list"}):
        "a TimerTask links to the TimerTaskEntry scheduling it and the entry holds its task, "
        "and TimerTask.cancel unlinks the entry from its bucket inline (the timing wheel's "
        "hot path, see benchmarks/timer.py): one intrusive list in Kafka's two files",
    frozenset({"connector.client.config", "connector.client.security_config"}):
        "check_security reads a ClientConfig that calls it from __post_init__: one concept "
        "(the security cross-checks) moved out of config.py for its size",
}


def test_the_tree_respects_the_layers() -> None:
    sources = _sources()
    modules = {module_name(p) for p, _ in sources}
    assert violations(sources, modules=modules) == []


def test_no_import_circle_between_files_of_the_library() -> None:
    sources, native = _sources(), _native_modules()
    assert import_cycles(import_graph(sources, type_checking=False, native=native)) == []
    circles = {frozenset(c) for c in import_cycles(import_graph(sources, native=native))}
    assert sorted(sorted(c) for c in circles - set(KNOWN_CIRCLES)) == [], "new import circles"
    assert sorted(sorted(c) for c in set(KNOWN_CIRCLES) - circles) == [], \
        "KNOWN_CIRCLES lists circles that are gone: remove them"


def documented_layers(doc: str) -> dict[str, set[str]]:
    """The table of docs/architecture.md's "Layers" section: part -> what it may import."""
    section = doc[doc.index("## Layers"):doc.index("## Mechanisms")]
    table = {}
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if row.startswith("| `") and len(cells) == 3:
            table[cells[0].strip("`")] = set(re.findall(r"`([\w.]+)`", cells[1]))
    return table


def test_the_table_is_the_diagram_of_docs_architecture() -> None:
    """MAY_IMPORT and the table under docs/architecture.md's diagram say the same, and every
    part of the library has its row (the diagram draws each one)."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    documented = documented_layers(doc)
    ours = {part: allowed for part, allowed in MAY_IMPORT.items()
            if part not in ("broker_sim", "connector", "broker_sim.__main__")}
    assert documented == ours
    diagram = doc[doc.index("## Layers"):doc.index("| part |")]
    assert [part for part in ours if part not in diagram] == []
    parts = {part_of(module_name(p)) for p, _ in _sources()}
    assert parts - set(MAY_IMPORT) == set(), "parts of the library in no layer"
    assert set(MAY_IMPORT) - parts == set(), "layers of the table that no longer exist"


@pytest.mark.parametrize(
    ("relpath", "source", "culprit"),
    [
        ("broker_sim/server/x.py", "from connector.client import Producer\n", "connector.client"),
        ("broker_sim/log/x.py", "def f():\n    import jobs.sessionize\n", "jobs.sessionize"),
        ("broker_sim/protocol/x.py", "from ..network import processor\n", "broker_sim.network"),
        ("broker_sim/protocol/records/x.py", "from ...log.segment import LogSegment\n", "broker_sim.log.segment"),
        ("broker_sim/timer/x.py", "from broker_sim.purgatory import Purgatory\n", "broker_sim.purgatory"),
        ("broker_sim/common/x.py", "from broker_sim.timer import SystemTimer\n", "broker_sim.timer"),
        ("broker_sim/network/x.py", "def f():\n    from ..server.broker import Broker\n", "broker_sim.server.broker"),
        ("broker_sim/log/x.py", "from broker_sim.server.partition import Partition\n", "broker_sim.server.partition"),
        ("broker_sim/coordinator/x.py", "from ..network import SocketServer\n", "broker_sim.network"),
        ("connector/client/x.py", "from broker_sim.cluster import LocalCluster\n", "broker_sim.cluster"),
        ("connector/source/x.py", "def f():\n    from broker_sim.process import BrokerProcess\n", "broker_sim.process"),
        ("connector/client/x.py", "from broker_sim.log import Log\n", "broker_sim.log"),
        ("connector/sink/x.py", "from broker_sim.server.broker import Broker\n", "broker_sim.server.broker"),
        ("connector/client/x.py", "from connector.source.options import OptionError\n", "connector.source"),
        ("broker_sim/server/x.py", "import pyspark\n", "pyspark"),
        ("broker_sim/newpart/x.py", "import os\n", "broker_sim.newpart"),
    ],
)
def test_an_import_the_layers_forbid_is_reported(relpath: str, source: str, culprit: str) -> None:
    found = violations([(ROOT / relpath, source)])
    assert found and culprit in found[0] and found[0].startswith(relpath)


def test_allowed_imports_pass() -> None:
    allowed = [
        (ROOT / "connector/client/x.py", "from broker_sim.protocol.records import MemoryRecords\n"),
        (ROOT / "broker_sim/purgatory/x.py", "from ..timer import SystemTimer\nimport threading\n"),
        (ROOT / "broker_sim/common/x.py", "from .clock import Clock\nimport time\n"),
        (ROOT / "jobs/x.py", "from connector.client import Fetcher\n"),
        (ROOT / "connector/cluster.py", "from broker_sim.process import BrokerProcess\n"),
        (ROOT / "broker_sim/network/x.py",
         "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..server.broker import Broker\n"),
    ]
    assert violations(allowed) == []


def test_a_circle_is_found_lazy_imports_included() -> None:
    files = [
        (ROOT / "broker_sim/log/a.py", "from .b import B\n"),
        (ROOT / "broker_sim/log/b.py", "def f():\n    from .c import C\n"),
        (ROOT / "broker_sim/log/c.py", "from broker_sim.log.a import A\n"),
        (ROOT / "broker_sim/log/d.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                        "    from .a import A\nfrom .e import E\n"),
        (ROOT / "broker_sim/log/e.py", "from . import d\n"),
    ]
    assert import_cycles(import_graph(files)) == [
        ["broker_sim.log.a", "broker_sim.log.b", "broker_sim.log.c"],
        ["broker_sim.log.d", "broker_sim.log.e"],
    ]
    typed = [(ROOT / "broker_sim/server/f.py", "from .g import G\n"),
             (ROOT / "broker_sim/server/g.py", "from typing import TYPE_CHECKING\n"
                                               "if TYPE_CHECKING:\n    from .f import F\n")]
    assert import_cycles(import_graph(typed)) == [["broker_sim.server.f", "broker_sim.server.g"]]
    assert import_cycles(import_graph(typed, type_checking=False)) == []
    native = [(ROOT / "connector/client/__init__.py", "from .scan import S\n"),
              (ROOT / "connector/client/scan.py", "def load():\n    from . import _ext\n")]
    assert import_cycles(import_graph(native, native={"connector.client._ext"})) == []
    acyclic = files[:2] + [(ROOT / "broker_sim/log/c.py", "import os\n")]
    assert import_cycles(import_graph(acyclic)) == []
