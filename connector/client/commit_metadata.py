"""Counters a reader keeps in its committed offsets' metadata string, read back as fields.

A reader that stores a JSON object as an offset commit's metadata (the pyq Spark source
stores ``{"query": ..., "skipped": n, "lost": n, "retried": n, "dead_lettered": n}``, and
``"dead_letter_topic"`` when it has one) gets
its scalar fields back per partition, nested objects flattened with dots; anything else
(plain text, a list) gives no fields. ``pyq lag`` shows them as columns and the console's
group page beside the lag.

>>> metadata_fields('{"query": "q1", "skipped": 2, "sink": {"rows": 7}}')
{'query': 'q1', 'skipped': 2, 'sink.rows': 7}
>>> metadata_fields("batch 7")      # not JSON: no fields
{}
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any


def metadata_fields(metadata: str) -> dict[str, Any]:
    """Scalar fields of a JSON object in commit metadata ({} if it is not one)."""
    try:
        data = json.loads(metadata) if metadata else None
    except ValueError:
        return {}
    return dict(_flatten(data, "")) if isinstance(data, dict) else {}


def _flatten(data: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, Any]]:
    for name, value in data.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{name}.")
        elif not isinstance(value, list):
            yield f"{prefix}{name}", value
