"""Avro record schemas for tests: the one helper the registry, CLI and compatibility tests
write their schemas with.

>>> record("User", {"name": "id", "type": "long"}, namespace="t")
'{"type": "record", "name": "User", "namespace": "t", "fields": [{"name": "id", "type": "long"}]}'
>>> record_schema("R", namespace=None, doc="x")
{'type': 'record', 'name': 'R', 'fields': [], 'doc': 'x'}
"""

from __future__ import annotations

import json
from typing import Any


def record_schema(name: str, *fields: dict[str, Any], namespace: str | None = "pyq.test",
                  **extra: Any) -> dict[str, Any]:
    """An Avro record schema as a dict (no ``namespace`` key when it is None)."""
    out: dict[str, Any] = {"type": "record", "name": name}
    if namespace is not None:
        out["namespace"] = namespace
    out["fields"] = list(fields)
    out.update(extra)
    return out


def record(name: str, *fields: dict[str, Any], namespace: str | None = "pyq.test") -> str:
    """An Avro record schema as the JSON text a registry is given."""
    return json.dumps(record_schema(name, *fields, namespace=namespace))
