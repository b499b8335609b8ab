"""Compatibility levels and what each asks of a new schema against a subject's versions.

The rules between two schemas are the format's own (:mod:`.formats` dispatches to Avro's,
JSON Schema's or Protobuf's reader/writer rules). This module only says which pairs to check:

=====================  =================================================================
BACKWARD (default)     the new schema reads data written with the latest version
BACKWARD_TRANSITIVE    ... with every version
FORWARD                the latest version reads data written with the new schema
FORWARD_TRANSITIVE     every version reads data written with the new schema
FULL                   BACKWARD and FORWARD against the latest version
FULL_TRANSITIVE        both against every version
NONE                   nothing is checked
=====================  =================================================================

"Versions" are the subject's live (not soft-deleted) versions, oldest first. Pure
functions; no state, safe from any thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import INVALID_COMPATIBILITY_LEVEL, RegistryError
from .formats import reader_incompatibilities

LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
          "FULL_TRANSITIVE", "NONE")
DEFAULT_LEVEL = "BACKWARD"


def parse_level(value: object) -> str:
    """A level name (any case); 42203 naming the allowed ones otherwise."""
    level = value.upper() if isinstance(value, str) else None
    if level not in LEVELS:
        raise RegistryError(422, INVALID_COMPATIBILITY_LEVEL,
                            f"Invalid compatibility level {value!r}. Valid values are "
                            + ", ".join(LEVELS))
    return level


def pair_incompatibilities(level: str, new: Any, old: Any, old_name: str) -> list[str]:
    """The messages of checking ``new`` against one existing schema under ``level``'s
    direction (the transitive levels check one pair the same way as their plain ones)."""
    out: list[str] = []
    if level.startswith(("BACKWARD", "FULL")):
        out += [f"new schema cannot read data written with {old_name}: {m}"
                for m in reader_incompatibilities(new, old)]
    if level.startswith(("FORWARD", "FULL")):
        out += [f"{old_name} cannot read data written with the new schema: {m}"
                for m in reader_incompatibilities(old, new)]
    return out


def incompatibilities(level: str, new: Any,
                      versions: Sequence[tuple[int, Any]]) -> list[str]:
    """Messages for everything ``level`` refuses in ``new`` against ``versions`` ((version,
    schema), oldest first); empty when the new schema may be registered."""
    if level == "NONE" or not versions:
        return []
    against = versions if level.endswith("_TRANSITIVE") else versions[-1:]
    out: list[str] = []
    for version, schema in against:
        out += pair_incompatibilities(level, new, schema, f"version {version}")
    return out
