"""One option model: every option of the broker, the client, the source and the sink is
declared once (with :mod:`broker_sim.common.options`), and the docs say what the
declarations say.

``docs/options.md`` is generated from the declarations; after changing an option run
``.venv/bin/python -m tests.test_option_model`` to write it again (the test below fails,
naming that command, while the file and the declarations differ).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from broker_sim.common import options

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "options.md"

#: part -> the classes that declare its options ("module:Class"), in the order the docs
#: show them. A class listed here declares every option it accepts with ``options.option``.
MODELS: dict[str, list[str]] = {
    "broker": ["broker_sim.server.config:BrokerConfig", "broker_sim.log.config:LogConfig",
               "broker_sim.coordinator.group.config:GroupConfig",
               "broker_sim.coordinator.transaction.config:TransactionConfig",
               "broker_sim.controller.leader_balance:LeaderBalanceConfig",
               "broker_sim.security.oauthbearer:OAuthBearerConfig"],
    "controller": ["broker_sim.controller.process_options:ControllerOptions",
                   "broker_sim.controller.leader_balance:LeaderBalanceConfig"],
    "client": ["connector.client.config:ClientConfig", "connector.client.config:ProducerConfig",
               "connector.client.config:FetcherConfig", "connector.client.config:ConsumerConfig"],
    "source": ["connector.source.options:SourceOptions", "connector.source.formats:FormatOptions",
               "connector.registry.settings:RegistrySettings"],
    "sink": ["connector.sink.options:SinkOptions", "connector.sink.formats:SinkFormatOptions",
             "connector.registry.settings:RegistrySettings"],
}

TITLES = {
    "broker": "Broker (`pyq-broker --override NAME=VALUE`, `EmbeddedCluster(overrides=...)`)",
    "controller": "Controller (`pyq-broker controller --override NAME=VALUE`)",
    "client": "Client (`connector.client`; `pyq --command-config`; `kafka.NAME` in Spark)",
    "source": "Spark source (`spark.readStream.format(\"pyq\").option(NAME, VALUE)`)",
    "sink": "Spark sink (`df.writeStream.format(\"pyq\").option(NAME, VALUE)`)",
}


def model_classes(part: str) -> list[type]:
    out = []
    for path in MODELS[part]:
        module, _, name = path.partition(":")
        out.append(getattr(importlib.import_module(module), name))
    return out


def render() -> str:
    """``docs/options.md`` as the declarations say it."""
    lines = ["# Options", "",
             "Every option pyq accepts, generated from the declarations in the code "
             "(`broker_sim.common.options`; `tests/test_option_model.py` fails when this file "
             "and the code differ: `.venv/bin/python -m tests.test_option_model` writes it "
             "again). The README's tables explain the options users meet first; this is the "
             "whole list.", ""]
    shown: set[type] = set()
    for part, title in TITLES.items():
        lines += [f"## {title}", ""]
        for cls in model_classes(part):
            if cls in shown:
                lines += [f"### {cls.__name__}", "", "As above.", ""]
                continue
            shown.add(cls)
            about = inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0].replace("\n", " ")
            about = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", about).replace("``", "`")
            bases = [b.__name__ for b in cls.__mro__[1:] if b in shown]
            if bases:
                about += f" Also every option of `{bases[0]}` above."
            skip = [name for b in cls.__mro__[1:] if b in shown for name in options.declared(b)]
            columns: tuple[str, ...] = ("option", "default", "allowed", "meaning")
            if any(spec.synonym for spec in options.declared(cls).values()):
                columns += ("synonym",)  # the broker-wide option that sets its default
            lines += [f"### {cls.__name__}", "", about, "",
                      options.markdown_table(cls, skip=skip, columns=columns), ""]
    return "\n".join(lines).rstrip() + "\n"


@pytest.mark.parametrize("part", list(MODELS))
def test_each_option_is_declared_once(part: str) -> None:
    """Within a part, a name (or alias) belongs to one declaration: the classes of a part
    that share a name (a subclass, a nested settings class) share its declaration."""
    seen: dict[str, tuple[str, options.OptionSpec]] = {}
    for cls in model_classes(part):
        assert dataclasses.is_dataclass(cls), cls
        for spelling, spec in options.names(cls).items():
            if spelling in seen:
                owner, first = seen[spelling]
                assert dataclasses.replace(first, attr="") == dataclasses.replace(spec, attr=""), \
                    f"{spelling} is declared by {owner} and again, differently, by {cls.__name__}"
            else:
                seen[spelling] = (cls.__name__, spec)


def test_docs_options_md_is_what_the_declarations_say() -> None:
    expected = render()
    actual = DOC.read_text() if DOC.exists() else ""
    assert actual == expected, ("docs/options.md differs from the declarations: run "
                                ".venv/bin/python -m tests.test_option_model")


if __name__ == "__main__":
    DOC.write_text(render())
    sys.stdout.write(f"wrote {DOC.relative_to(ROOT)}\n")


# ---- the README's option tables against the declarations ----------------------------------
README = ROOT / "README.md"
#: First-column cells of README option tables that are not options (and why).
NOT_OPTIONS = {"save mode",  # Spark's, not an option: the row says which mode to use
               }


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def readme_rows(start: str, end: str) -> list[tuple[list[str], list[str]]]:
    """(header, cells) of every table row between two headings of the README."""
    text = README.read_text()
    section = text[text.index(start):]
    section = section[:section.index(end)]
    rows = []
    for table in re.findall(r"((?:^\|.*\|\n)+)", section, re.M):
        lines = table.strip("\n").split("\n")
        rows += [(_cells(lines[0]), _cells(line)) for line in lines[2:]]
    return rows


def named(cell: str, known: Iterable[str] = ()) -> list[str]:
    """The option names a cell gives: ```a` / `b```, ```x` / `.y``` (y relative to x: the
    first of x's prefixes that makes a known name, else x's first segment), ```a=VALUE```
    (the name), ```other `kafka.*` ``` none."""
    known = set(known)
    names: list[str] = []
    for name in re.findall(r"`([^`]+)`", cell):
        name = name.split("=", 1)[0]
        if name.startswith(".") and names:
            base = names[0].split(".")
            expansions = [".".join(base[:i]) + name for i in range(1, len(base))]
            name = next((e for e in expansions if e in known), expansions[0])
        if "*" not in name:
            names.append(name)
    return names


def _spark_declared() -> dict[str, options.OptionSpec]:
    out: dict[str, options.OptionSpec] = {}
    for part in ("source", "sink"):
        for cls in model_classes(part):
            out.update(options.names(cls))
    return out


def test_readme_spark_tables_name_declared_options_with_their_defaults() -> None:
    """Every option a README table of the Spark connector names is declared (by the source
    or the sink, or is a ``kafka.*`` client setting the connector takes), and a default the
    table states is the declared one."""
    from connector.kafka_options import allowed

    declared = _spark_declared()
    kafka = {*allowed("source"), *allowed("sink"), "kafka.partitioner.class",
             "kafka.key.serializer", "kafka.value.serializer"}
    rows = (readme_rows("### Spark's Kafka options", "## The `pyq` command")
            + readme_rows("### Avro from Spark", "## Security"))
    checked, compared = set(), 0
    for header, cells in rows:
        if cells[0] in NOT_OPTIONS:
            continue
        for name in named(cells[0], declared):
            assert name in declared or name in kafka, f"README names {name!r}, declared nowhere"
            checked.add(name)
        if header[-1] == "default" and cells[-1]:
            shown = cells[-1].replace("`", "").strip()
            defaults = [declared[name].default_text for name in named(cells[0], declared)]
            assert any(d and (shown == d or d.startswith(shown + " ") or shown.startswith(d + " "))
                       for d in defaults), \
                f"README says {cells[0]} defaults to {shown!r}; declared: {defaults}"
            compared += 1
    assert len(checked) > 40 and compared >= 7, (checked, compared)


def test_every_spark_option_is_in_the_readme() -> None:
    """A user reading the README meets every option of the source and sink by name, in a
    table or in the prose around it."""
    text = README.read_text()
    tabled = {name for _, cells in readme_rows("### Spark's Kafka options", "## Security")
              for name in named(cells[0], _spark_declared())}
    missing = [name for name in _spark_declared() if name not in tabled
               and f"`{name}`" not in text and f"`{name}=" not in text]
    assert not missing, f"not in the README: {missing}"


def _declared(*parts: str) -> dict[str, options.OptionSpec]:
    out: dict[str, options.OptionSpec] = {}
    for part in parts:
        for cls in model_classes(part):
            out.update(options.names(cls))
    return out


@pytest.mark.parametrize(("start", "end", "column", "parts"), [
    # the defaults that differ from Kafka's (a topic config may be one the controller keeps)
    ("Defaults are Kafka's, except", "### How a cluster is organised", 0, ("broker",)),
    ("### A quorum of controllers", "### Operations", 1, ("broker", "controller")),
    ("## Trust and key stores", "## OAUTHBEARER", 0, ("broker", "client")),
    ("## OAUTHBEARER (OIDC)", "## Running against Apache Kafka", 0, ("broker", "client")),
])
def test_readme_broker_and_client_tables_name_declared_options(
        start: str, end: str, column: int, parts: tuple[str, ...]) -> None:
    """Every option a README table of the broker, the controller or the client names is
    declared (by each of ``parts`` it belongs to), and a default it states is the declared
    one ("unset" for none)."""
    from broker_sim.controller.configs import TOPIC_CONFIGS

    declared = _declared(*parts)
    each = [_declared(part) for part in parts]
    checked = 0
    for header, cells in readme_rows(start, end):
        for name in named(cells[column], declared):
            if "." not in name:  # --controllers N, controllers=N: command-line flags
                continue
            if name in TOPIC_CONFIGS and name not in declared:  # min.insync.replicas
                continue
            if len(parts) > 1 and header[0] in ("broker option", "client option"):
                owner = {"broker option": 0, "client option": parts.index("client")}[header[0]]
                assert name in each[owner], f"README: {header[0]} {name!r} is not declared"
            else:
                assert name in declared, f"README names {name!r}; no {'/'.join(parts)} declares it"
            checked += 1
            if header[1:2] == ["default"]:
                shown = cells[1].replace("`", "").strip()
                default = declared[name].default_text
                assert (shown == "unset" and not default) or shown == default, \
                    f"README says {name} defaults to {shown!r}; declared: {default!r}"
    assert checked >= 1, checked
