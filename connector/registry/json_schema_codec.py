"""JSON Schema in Confluent's wire format <-> one Arrow column (source, sink, functions).

A framed value is magic byte 0, the writer's schema id, then the JSON text (UTF-8).

:func:`json_schema_types` maps a schema (the registry's ``schemaType: JSON``) to the Spark
type of the column and the Arrow type the decoder builds:

| JSON Schema | Spark |
|---|---|
| ``type: object`` with ``properties`` | struct, one field per property (in the order the registry serves them; ``required`` or not, every field is nullable) |
| ``type: object`` with only ``additionalProperties: {schema}`` | map<string, T> |
| ``type: array`` with ``items: {schema}`` | array<T> |
| ``string`` (any ``format``), ``enum`` of strings | string |
| ``integer`` / ``number`` / ``boolean`` | bigint / double / boolean |
| ``type: [T, "null"]``, ``oneOf``/``anyOf`` of ``{"type": "null"}`` and one schema | T |
| ``$ref`` within the schema (``#/definitions/...``, ``#/$defs/...``) or to a schema reference by its name (``address.json``, ``address.json#/definitions/X``) | the referenced schema's type |
| ``allOf`` of object schemas (inline or ``$ref``, nested ``allOf`` flattened; keywords beside ``allOf`` are a part too) | one struct: the parts' properties in order of appearance (a property in several parts must map to one Spark type); parts that only constrain (``required``, bounds) add no field |
| ``allOf`` of non-object schemas of one type (``{"type": "string"}`` and ``{"maxLength": 9}``) | that type |

Refused at construction, naming the construct and where it is: ``oneOf``/``anyOf`` of
several non-null schemas (no single Spark type), ``allOf`` whose parts give one property
two Spark types (naming the property) or mix objects with other types, tuples (``items``
as a list, ``prefixItems``: a struct per position is not mapped), an object with neither
``properties`` nor an ``additionalProperties`` schema, a schema that accepts any value,
recursive ``$ref``, and a ``$ref`` that names no reference.

:class:`JsonColumn` (picklable, made on the driver) is the reader; :class:`JsonDecoder`
(one per task) reads each value: the header, the writer schema id (fetched once per id:
an unknown id is a bad record), the JSON text, and with ``validate`` the value checked
against the *writer* schema by ``jsonschema`` (a value it refuses is a bad record with
the library's reason). Values are read into the reader's type: properties the reader does
not have are dropped, missing ones are null, and a value of the wrong JSON type is a bad
record (``does not fit its Spark type``).

:class:`JsonWriterSchema` (picklable) encodes a row (a dict) as compact JSON —
timestamps and dates as ISO-8601 text, decimals as numbers, binary as base64 — checked
against the schema first (as confluent-kafka's ``JSONSerializer`` does by default).

Threading: decoders belong to one task's thread; the schema cache is guarded by a lock.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from broker_sim.protocol.errors import PyqError

from .client import RegistryError
from .framing import (
    SchemaCache,
    decode_batch,
    header,
    reader_record,
    split_header,
    writer_record,
)
from .settings import RegistrySettings


class UnsupportedJsonSchema(PyqError, ValueError):
    """A JSON Schema construct with no Spark type here; names it and where it is."""


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True)
class JsonDocument:
    """A JSON Schema and the schemas its references name (``name`` -> parsed JSON)."""

    schema: Any
    references: tuple[tuple[str, Any], ...] = ()


def json_schema_types(doc: JsonDocument, where: str = "value") -> tuple[str, pa.DataType]:
    """(Spark DDL type, Arrow type) of data of ``doc``."""
    return _types(doc.schema, doc.schema, where, (), dict(doc.references))


def _deref(root: Any, node: Any, where: str, stack: tuple[str, ...], refs: dict[str, Any]
           ) -> tuple[Any, tuple[str, ...], Any]:
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        ref = node["$ref"]
        if ref in stack:
            raise UnsupportedJsonSchema(f"{where}: $ref {ref!r} is recursive (no Spark type)")
        stack = stack + (ref,)
        name, _, fragment = ref.partition("#")
        if name:
            if name not in refs:
                raise UnsupportedJsonSchema(f"{where}: $ref {ref!r} names no reference of the "
                                            f"schema ({', '.join(refs) or 'it has none'})")
            root = refs[name]
        target = root
        for part in [p for p in fragment.split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                raise UnsupportedJsonSchema(f"{where}: $ref {ref!r} does not resolve")
            target = target[part]
        node = target
    return node, stack, root


def _types(root: Any, node: Any, where: str, stack: tuple[str, ...], refs: dict[str, Any]
           ) -> tuple[str, pa.DataType]:
    node, stack, root = _deref(root, node, where, stack, refs)
    if not isinstance(node, dict) or not node:
        raise UnsupportedJsonSchema(f"{where}: a schema that accepts any JSON value has no "
                                    "Spark type")
    if "allOf" in node:
        return _all_of(root, node, where, stack, refs)
    for combinator in ("oneOf", "anyOf"):
        if combinator in node:
            members = [m for m in node[combinator]
                       if not (isinstance(m, dict) and m.get("type") == "null")]
            if len(members) != 1:
                raise UnsupportedJsonSchema(f"{where}: {combinator} of {len(members)} non-null "
                                            "schemas has no single Spark type")
            return _types(root, members[0], where, stack, refs)
    kind = node.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) != 1:
            raise UnsupportedJsonSchema(f"{where}: type {kind} has no single Spark type")
        kind = kinds[0]
    if kind is None:
        if "properties" in node or "additionalProperties" in node:
            kind = "object"
        elif "items" in node:
            kind = "array"
        elif "enum" in node and all(isinstance(v, str) for v in node["enum"]):
            kind = "string"
        else:
            raise UnsupportedJsonSchema(f"{where}: a schema without a type (keys "
                                        f"{', '.join(sorted(node))}) has no Spark type")
    if kind == "string":
        return "string", pa.string()
    if kind == "integer":
        return "bigint", pa.int64()
    if kind == "number":
        return "double", pa.float64()
    if kind == "boolean":
        return "boolean", pa.bool_()
    if kind == "array":
        items = node.get("items")
        if "prefixItems" in node or isinstance(items, list):
            raise UnsupportedJsonSchema(f"{where}: a tuple (items as a list, prefixItems) has no "
                                        "Spark type")
        if not isinstance(items, dict):
            raise UnsupportedJsonSchema(f"{where}: an array without an items schema has no "
                                        "Spark type")
        ddl, arrow = _types(root, items, where + "[]", stack, refs)
        return f"array<{ddl}>", pa.list_(pa.field("element", arrow, True))
    if kind == "object":
        props = node.get("properties")
        if props:
            ddls, fields = [], []
            for name, sub in props.items():
                ddl, arrow = _types(root, sub, f"{where}.{name}", stack, refs)
                ddls.append(f"{_quote(name)}: {ddl}")
                fields.append(pa.field(name, arrow, True))
            return f"struct<{', '.join(ddls)}>", pa.struct(fields)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            ddl, arrow = _types(root, extra, where + "{}", stack, refs)
            return (f"map<string,{ddl}>",
                    pa.map_(pa.field("key", pa.string(), False), pa.field("value", arrow, True)))
        raise UnsupportedJsonSchema(f"{where}: an object with neither properties nor an "
                                    "additionalProperties schema has no Spark type")
    raise UnsupportedJsonSchema(f"{where}: type {kind!r} has no Spark type")


def _all_of_parts(root: Any, node: Any, where: str, stack: tuple[str, ...],
                  refs: dict[str, Any]) -> list[tuple[Any, dict[str, Any], tuple[str, ...]]]:
    """The parts of an ``allOf`` (each ``$ref`` followed, nested ``allOf`` flattened), in
    order, with the root each part's ``$ref`` resolve against; the node's own keywords
    beside ``allOf`` are the first part."""
    node, stack, root = _deref(root, node, where, stack, refs)
    if node is True or node == {}:
        return []
    if not isinstance(node, dict):
        raise UnsupportedJsonSchema(f"{where}: allOf with a part that accepts nothing has no "
                                    "Spark type")
    rest = {k: v for k, v in node.items() if k != "allOf"}
    parts = [(root, rest, stack)] if rest else []
    members = node.get("allOf", [])
    for member in members:
        parts += _all_of_parts(root, member, where, stack, refs)
    return parts


def _is_object(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    kinds = {kind} if isinstance(kind, str) else set(kind or ())
    return "object" in kinds or "properties" in node


def _all_of(root: Any, node: dict[str, Any], where: str, stack: tuple[str, ...],
            refs: dict[str, Any]) -> tuple[str, pa.DataType]:
    """``allOf``: object parts merge into one struct, their properties in order of
    appearance (a property in several parts must have one Spark type); parts that only
    constrain (``required``, bounds) add nothing; other parts must all have one type."""
    parts = _all_of_parts(root, node, where, stack, refs)
    objects = [p for p in parts if _is_object(p[1])]
    typed = [p for p in parts if not _is_object(p[1]) and
             any(k in p[1] for k in ("type", "items", "enum", "oneOf", "anyOf", "$ref",
                                     "additionalProperties"))]
    if objects:
        if typed:
            raise UnsupportedJsonSchema(f"{where}: allOf of an object and a non-object schema "
                                        f"({json.dumps(typed[0][1])[:60]}) has no Spark type")
        props: dict[str, tuple[str, pa.DataType]] = {}
        for part_root, part, part_stack in objects:
            for name, sub in (part.get("properties") or {}).items():
                ddl, arrow = _types(part_root, sub, f"{where}.{name}", part_stack, refs)
                if name in props and props[name][0] != ddl:
                    raise UnsupportedJsonSchema(
                        f"{where}: allOf: property {name!r} is {props[name][0]} in one part and "
                        f"{ddl} in another (no single Spark type)")
                props.setdefault(name, (ddl, arrow))
        if not props:
            raise UnsupportedJsonSchema(f"{where}: allOf of objects without properties has no "
                                        "Spark type")
        return (f"struct<{', '.join(f'{_quote(n)}: {d}' for n, (d, _a) in props.items())}>",
                pa.struct([pa.field(n, a, True) for n, (_d, a) in props.items()]))
    found = {_types(r, part, where, s, refs) for r, part, s in typed}
    if not found:
        raise UnsupportedJsonSchema(f"{where}: allOf whose parts only constrain (no type) has "
                                    "no Spark type")
    if len(found) != 1:
        raise UnsupportedJsonSchema(
            f"{where}: allOf of {len(found)} distinct types "
            f"({', '.join(sorted(d for d, _a in found))}) has no single Spark type")
    return found.pop()


def _validator(doc: JsonDocument) -> Any:
    import jsonschema
    import referencing
    import referencing.jsonschema

    cls = jsonschema.validators.validator_for(doc.schema, default=jsonschema.Draft7Validator)
    draft = referencing.jsonschema.specification_with(cls.META_SCHEMA["$schema"])
    registry: Any = referencing.Registry().with_resources(
        (name, referencing.Resource.from_contents(schema, default_specification=draft))
        for name, schema in doc.references)
    return cls(doc.schema, registry=registry)


def _why(validator: Any, value: Any) -> str | None:
    import jsonschema.exceptions

    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return None
    at = "/".join(str(p) for p in error.absolute_path) or "the value"
    return f"at {at}: {error.message}"


_schemas = SchemaCache()


def _writer_schema(registry: RegistrySettings, schema_id: int) -> JsonDocument:
    """The writer schema of a value; ValueError for an id the registry does not have."""
    def load() -> JsonDocument:
        client = registry.client()
        return _parse(client.schema_by_id(schema_id), schema_id, client)

    doc: JsonDocument = _schemas.known(registry.url, schema_id, load)
    return doc


def _parse(record: dict[str, Any], schema_id: int | str, client: Any) -> JsonDocument:
    """The schema of a registry record, with its references (and theirs) fetched by
    subject and version."""
    refs: dict[str, Any] = {}

    def add(rec: dict[str, Any], sid: int | str) -> Any:
        if rec.get("schemaType") != "JSON":
            raise RegistryError(f"schema {sid} is {rec.get('schemaType') or 'AVRO'}, not JSON")
        for ref in rec.get("references") or []:
            if ref["name"] not in refs:
                refs[ref["name"]] = add(client.version(ref["subject"], str(ref["version"])),
                                        f"{ref['subject']} version {ref['version']}")
        return json.loads(rec["schema"])

    schema = add(record, schema_id)
    return JsonDocument(schema, tuple(refs.items()))


@dataclass(frozen=True)
class JsonColumn:
    column: str
    registry: RegistrySettings
    reader_id: int
    description: str
    validate: bool
    ddl: str
    arrow_type: pa.DataType = field(compare=False)

    def decoder(self) -> JsonDecoder:
        return JsonDecoder(self)


def resolve_json_reader(column: str, registry: RegistrySettings, subject: str | None,
                        version: str | None, schema_id: int | None,
                        validate: bool) -> JsonColumn:
    """The reader: by id, else the subject's version (``latest`` by default);
    UnsupportedJsonSchema naming what does not map."""
    client = registry.client()
    record, sid, where = reader_record(client, subject, version, schema_id)
    schema = _parse(record, sid, client)
    _schemas.put(registry.url, sid, schema)
    ddl, arrow = json_schema_types(schema, column)
    return JsonColumn(column, registry, sid, where, validate, ddl, arrow)


class JsonDecoder:
    """Decodes batches of framed values of one column (see the module doc)."""

    def __init__(self, spec: JsonColumn) -> None:
        self.spec = spec
        self._validators: dict[int, Any] = {}

    def decode_one(self, data: bytes) -> Any:
        schema_id, pos = split_header(data)
        writer = _writer_schema(self.spec.registry, schema_id)
        try:
            value = json.loads(bytes(data[pos:]))
        except (ValueError, UnicodeDecodeError) as e:
            raise ValueError(f"does not decode as JSON (writer schema {schema_id}): {e}") from None
        if self.spec.validate:
            validator = self._validators.get(schema_id)
            if validator is None:
                validator = self._validators[schema_id] = _validator(writer)
            why = _why(validator, value)
            if why is not None:
                raise ValueError(f"not valid under writer schema {schema_id}: {why}")
        return value

    def decode(self, values: Sequence[bytes | None]) -> tuple[pa.Array, list[str | None]]:
        return decode_batch(self.decode_one, values, self.spec.arrow_type, self.spec.column)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, datetime.datetime):  # naive: PySpark's local time
        return value.astimezone(datetime.timezone.utc).isoformat()
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    return value


_writer_validators: dict[tuple[int, str], Any] = {}


@dataclass(frozen=True)
class JsonWriterSchema:
    schema: JsonDocument
    schema_id: int
    description: str

    def encode(self, row: Any) -> bytes:
        """The framed JSON of ``row``; ValueError naming what the schema refuses."""
        value = _plain(row)
        key = (self.schema_id, self.description)
        validator = _writer_validators.get(key)
        if validator is None:
            validator = _writer_validators[key] = _validator(self.schema)
        why = _why(validator, value)
        if why is not None:
            raise ValueError(f"does not match {self.description}: {why}")
        return header(self.schema_id) + json.dumps(value, separators=(",", ":")).encode()


def json_writer(registry: RegistrySettings, subject: str | None, schema_text: str | None,
                schema_id: int | None, auto_register: bool) -> JsonWriterSchema:
    """The writer: ``schema_text`` registered (or looked up, without ``auto_register``)
    under ``subject``; else ``schema_id``; else the subject's latest."""
    client = registry.client()
    record, sid, where = writer_record(client, subject, schema_text, schema_id, auto_register,
                                       "JSON")
    return JsonWriterSchema(_parse(record, sid, client), sid, where)
