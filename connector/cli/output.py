"""What list and describe commands print: text tables, or one JSON document.

``--format json`` (rpk's spelling) or ``-J`` (kcat's JSON flag, as ``pyq consume -J``)
makes a command print exactly one JSON document on stdout, for ``jq`` and scripts; the
default, ``--format text``, prints the aligned tables of :mod:`.table`. A table becomes
a list of objects, one per row, keyed by its column names in lower case with ``-`` as
``_`` (``TRANSACTIONAL-ID`` -> ``transactional_id``); a missing value is ``null`` (the
table's ``-``), a list stays a list, numbers stay numbers. ``-o`` is not a spelling of it:
in ``pyq consume`` ``-o`` is kcat's start offset.
"""

from __future__ import annotations

import argparse
import enum
import json
from collections.abc import Sequence
from typing import Any

from .table import format_table

FORMATS = ("text", "json")


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """``--format text|json`` and ``-J`` (the same as ``--format json``)."""
    group = parser.add_argument_group("output")
    chosen = group.add_mutually_exclusive_group()
    chosen.add_argument("--format", dest="output_format", choices=FORMATS, default="text",
                        help="text tables (the default) or one JSON document")
    chosen.add_argument("-J", "--json", dest="output_format", action="store_const",
                        const="json", help="the same as --format json")


def wants_json(args: argparse.Namespace) -> bool:
    return getattr(args, "output_format", "text") == "json"


def key_of(column: str) -> str:
    """``TRANSACTIONAL-ID`` -> ``transactional_id``."""
    return column.lower().replace("-", "_").replace(".", "_")


def records(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> list[dict[str, Any]]:
    """A table as a list of objects."""
    keys = [key_of(c) for c in columns]
    return [dict(zip(keys, (_plain(v) for v in row), strict=True)) for row in rows]


def _plain(value: object) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.name
    return value


def print_json(document: Any) -> None:
    print(json.dumps(document, default=_default))


def _default(value: object) -> Any:
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    return str(value)


def print_table(args: argparse.Namespace, columns: Sequence[str],
                rows: Sequence[Sequence[object]], *, empty_text: bool = True) -> None:
    """The table as text (nothing when it has no row and ``empty_text`` is false), or its
    rows as one JSON list."""
    if wants_json(args):
        print_json(records(columns, rows))
    elif rows or empty_text:
        print(format_table(columns, rows))


def print_list(args: argparse.Namespace, items: Sequence[object]) -> None:
    """One item a line as text, or the items as one JSON list."""
    if wants_json(args):
        print_json(list(items))
    else:
        for item in items:
            print(item)
