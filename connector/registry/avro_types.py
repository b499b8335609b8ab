"""Avro schemas from the registry, and the Spark and Arrow types of their data.

:func:`parse_registry_schema` parses a registry's schema record (with its references, by
name) with fastavro. :func:`avro_types` maps a parsed Avro schema to the Spark type of the
column and to the Arrow type the decoder builds, as Spark's own Avro support does:

| Avro | Spark |
|---|---|
| record (nested too) | struct, fields in order |
| array / map | array / map<string, ...> |
| union of null and one type | that type, nullable |
| union of several types | struct<member0, member1, ...>, the one matching set (``int``+``long`` is bigint, ``float``+``double`` double) |
| enum | string |
| boolean, int, long, float, double, string | boolean, int, long, float, double, string |
| bytes, fixed | binary |
| date | date |
| timestamp-millis / timestamp-micros | timestamp |
| local-timestamp-millis / local-timestamp-micros | timestamp_ntz |
| decimal (bytes or fixed) | decimal(precision, scale) |
| time-millis / time-micros | int (milliseconds) / bigint (microseconds) after midnight, as Spark's Avro reader |
| uuid | string |

Not mapped (refused naming the field, at construction): unions whose members read as the
same Python type (two records, a record and a map), recursive records, a bare ``null``.

fastavro reads ``time-*`` as ``datetime.time`` and ``uuid`` as ``uuid.UUID``;
:func:`plain_converter` turns those back into the numbers and text above (None when a
schema has neither, so most schemas pay nothing).
"""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from broker_sim.protocol.errors import PyqError

from .client import RegistryError

PRIMITIVES = {"boolean": ("boolean", pa.bool_()), "int": ("int", pa.int32()),
              "long": ("bigint", pa.int64()), "float": ("float", pa.float32()),
              "double": ("double", pa.float64()), "string": ("string", pa.string()),
              "bytes": ("binary", pa.binary())}
TIMESTAMP = ("timestamp", pa.timestamp("us", tz="UTC"))
TIMESTAMP_NTZ = ("timestamp_ntz", pa.timestamp("us"))


class UnsupportedAvro(PyqError, ValueError):
    """An Avro schema with a type that has no Spark column here; names the field."""


def parse_registry_schema(client: Any, record: dict[str, Any], named: dict[str, Any]) -> Any:
    """fastavro's parsed schema of a registry record (``schema``, ``schemaType``,
    ``references``), its references fetched and parsed first."""
    import fastavro

    for ref in record.get("references") or []:
        parse_registry_schema(client, client.version(ref["subject"], str(ref["version"])), named)
    if record.get("schemaType", "AVRO") != "AVRO":
        raise RegistryError(f"schema {record.get('id', '')} is {record['schemaType']}, not AVRO")
    try:
        return fastavro.parse_schema(json.loads(record["schema"]), named_schemas=named)
    except (ValueError, fastavro.schema.SchemaParseException) as e:
        raise RegistryError(f"the registry's schema {record.get('id', '')} does not parse: "
                            f"{e}") from None


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def avro_types(schema: Any, where: str = "value") -> tuple[str, pa.DataType, bool]:
    """(Spark DDL type, Arrow type, nullable) of data of a parsed Avro ``schema``.

    Nested fields, array elements and map values are all nullable in both types (Spark
    checks that the two agree; nullability of the data is Avro's to enforce)."""
    return _types(schema, {}, where, ())


def _types(schema: Any, named: dict[str, Any], where: str, stack: tuple[str, ...]
           ) -> tuple[str, pa.DataType, bool]:
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return (*PRIMITIVES[schema], False)
        if schema == "null":
            raise UnsupportedAvro(f"{where}: a null type alone has no Spark column")
        if schema in stack:
            raise UnsupportedAvro(f"{where}: record {schema} is recursive (no Spark type)")
        if schema in named:
            return _types(named[schema], named, where, stack)
        raise UnsupportedAvro(f"{where}: unknown named type {schema}")
    if isinstance(schema, list):
        members = _members(schema)
        if len(members) == 1:
            ddl, arrow, _ = _types(members[0], named, where, stack)
            return ddl, arrow, len(schema) > 1
        kinds = [_python_kind(m, named) for m in members]
        if len(set(kinds)) != len(kinds):
            raise UnsupportedAvro(f"{where}: a union of {len(members)} non-null types "
                                  f"({', '.join(str(_name(m)) for m in members)}) has members "
                                  "that read as the same Python type (two records, a record "
                                  "and a map, two strings...): no Spark column tells them apart")
        ddls, fields = [], []
        for i, m in enumerate(members):
            ddl, arrow, _ = _types(m, named, f"{where}.member{i}", stack)
            ddls.append(f"`member{i}`: {ddl}")
            fields.append(pa.field(f"member{i}", arrow, True))
        return f"struct<{', '.join(ddls)}>", pa.struct(fields), True
    kind = schema["type"]
    logical = schema.get("logicalType")
    if logical == "time-millis" and kind == "int":
        return "int", pa.int32(), False
    if logical == "time-micros" and kind == "long":
        return "bigint", pa.int64(), False
    if logical == "uuid" and kind in ("string", "fixed"):
        return "string", pa.string(), False
    if logical == "date" and kind == "int":
        return "date", pa.date32(), False
    if logical in ("timestamp-millis", "timestamp-micros") and kind == "long":
        return (*TIMESTAMP, False)
    if logical in ("local-timestamp-millis", "local-timestamp-micros") and kind == "long":
        return (*TIMESTAMP_NTZ, False)
    if logical == "decimal" and kind in ("bytes", "fixed"):
        p, s = int(schema["precision"]), int(schema.get("scale", 0))
        if p > 38:
            raise UnsupportedAvro(f"{where}: decimal precision {p} is above Spark's 38")
        return f"decimal({p},{s})", pa.decimal128(p, s), False
    if kind in PRIMITIVES or kind == "null":
        return _types(kind, named, where, stack)
    if kind == "enum":
        named[schema["name"]] = schema
        return "string", pa.string(), False
    if kind == "fixed":
        named[schema["name"]] = schema
        return "binary", pa.binary(), False
    if kind == "array":
        ddl, arrow, _ = _types(schema["items"], named, where + "[]", stack)
        return f"array<{ddl}>", pa.list_(pa.field("element", arrow, True)), False
    if kind == "map":
        ddl, arrow, _ = _types(schema["values"], named, where + "{}", stack)
        return (f"map<string,{ddl}>",
                pa.map_(pa.field("key", pa.string(), False), pa.field("value", arrow, True)),
                False)
    if kind == "record":
        name = schema["name"]
        named[name] = schema
        ddls, fields = [], []
        for f in schema["fields"]:
            ddl, arrow, _ = _types(f["type"], named, f"{where}.{f['name']}", stack + (name,))
            ddls.append(f"{_quote(f['name'])}: {ddl}")
            fields.append(pa.field(f["name"], arrow, True))
        return f"struct<{', '.join(ddls)}>", pa.struct(fields), False
    raise UnsupportedAvro(f"{where}: Avro type {kind} has no Spark column here")


def plain_converter(schema: Any) -> Callable[[Any], Any] | None:
    """A function making a datum of ``schema`` fit its Arrow type (see the module doc), or
    None when the datum fits as fastavro reads it."""
    return _converter(schema, {})


def _time_millis(t: Any) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1000 + t.microsecond // 1000


def _time_micros(t: Any) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond


def _converter(schema: Any, named: dict[str, Any]) -> Callable[[Any], Any] | None:
    if isinstance(schema, str):
        return _converter(named[schema], named) if schema in named else None
    if isinstance(schema, list):
        members = _members(schema)
        if len(members) > 1:
            return _union_converter(members, named)
        inner = _converter(members[0], named)
        if inner is None:
            return None
        return lambda v: None if v is None else inner(v)
    logical, kind = schema.get("logicalType"), schema["type"]
    if logical == "time-millis" and kind == "int":
        return _time_millis
    if logical == "time-micros" and kind == "long":
        return _time_micros
    if logical == "uuid" and kind in ("string", "fixed"):
        return str
    if kind in ("enum", "fixed"):
        named[schema["name"]] = schema
    if kind == "array":
        item = _converter(schema["items"], named)
        return None if item is None else (lambda v: [item(x) for x in v])
    if kind == "map":
        value = _converter(schema["values"], named)
        return None if value is None else (lambda v: {k: value(x) for k, x in v.items()})
    if kind == "record":
        named[schema["name"]] = schema
        fields = [(f["name"], c) for f in schema["fields"]
                  if (c := _converter(f["type"], named)) is not None]
        if not fields:
            return None

        def record(v: dict) -> dict:
            out = dict(v)
            for name, c in fields:
                out[name] = c(v[name])
            return out
        return record
    return None


def _members(union: list[Any]) -> list[Any]:
    """The non-null members of a union; ``int``+``long`` reads as ``long`` and
    ``float``+``double`` as ``double``, as Spark's Avro reader widens them."""
    members = [m for m in union if m != "null"]
    if sorted(map(str, members)) == ["int", "long"]:
        return ["long"]
    if sorted(map(str, members)) == ["double", "float"]:
        return ["double"]
    return members


_KINDS: dict[str, type] = {"boolean": bool, "int": int, "long": int, "float": float,
                           "double": float, "string": str, "bytes": bytes, "enum": str,
                           "fixed": bytes, "array": list, "map": dict, "record": dict}
_LOGICAL_KINDS: dict[str, type] = {
    "date": datetime.date, "timestamp-millis": datetime.datetime,
    "timestamp-micros": datetime.datetime, "local-timestamp-millis": datetime.datetime,
    "local-timestamp-micros": datetime.datetime, "decimal": decimal.Decimal,
    "time-millis": datetime.time, "time-micros": datetime.time, "uuid": uuid.UUID}


def _python_kind(schema: Any, named: dict[str, Any]) -> type:
    """The Python type fastavro reads data of ``schema`` as."""
    if isinstance(schema, str):
        return _KINDS[schema] if schema in _KINDS else _python_kind(named[schema], named)
    if schema.get("logicalType") in _LOGICAL_KINDS:
        return _LOGICAL_KINDS[schema["logicalType"]]
    return _KINDS[schema["type"]]


def _is_kind(value: Any, kind: type) -> bool:
    if kind is int:  # bool is an int too
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is datetime.date:  # a datetime is a date too
        return isinstance(value, datetime.date) and not isinstance(value, datetime.datetime)
    if kind is float:
        return isinstance(value, float)
    return isinstance(value, kind)


def _union_converter(members: list[Any], named: dict[str, Any]) -> Callable[[Any], Any]:
    """A union of several types -> {memberN: value} with the member it is (the others null),
    Spark's Avro reader's struct."""
    kinds = [(f"member{i}", _python_kind(m, named), _converter(m, named))
             for i, m in enumerate(members)]

    def member(v: Any) -> Any:
        if v is None:
            return None
        out: dict[str, Any] = {}
        for name, kind, convert in kinds:
            hit = _is_kind(v, kind)
            out[name] = (convert(v) if convert is not None else v) if hit else None
        return out
    return member


def _name(schema: Any) -> str:
    if isinstance(schema, dict):
        return str(schema.get("name") or schema.get("type"))
    return str(schema)
