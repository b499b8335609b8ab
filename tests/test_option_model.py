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
from pathlib import Path

import pytest

from broker_sim.common import options

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "options.md"

#: part -> the classes that declare its options ("module:Class"), in the order the docs
#: show them. A class listed here declares every option it accepts with ``options.option``.
MODELS: dict[str, list[str]] = {
    "broker": [],
    "client": [],
    "source": ["connector.source.options:SourceOptions", "connector.source.formats:FormatOptions",
               "connector.registry.settings:RegistrySettings"],
    "sink": ["connector.sink.options:SinkOptions", "connector.sink.formats:SinkFormatOptions",
             "connector.registry.settings:RegistrySettings"],
}

TITLES = {
    "broker": "Broker (`pyq-broker --override NAME=VALUE`, `EmbeddedCluster(overrides=...)`)",
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
            lines += [f"### {cls.__name__}", "", about, "", options.markdown_table(cls), ""]
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
