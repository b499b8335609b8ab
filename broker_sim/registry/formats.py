"""The schema-format seam: each ``schemaType`` the registry takes, behind one interface.

A format is a :class:`SchemaFormat`: its ``schema_type`` name, a ``parse(text,
references)`` and a ``reader_incompatibilities(reader, writer)``. ``references`` are the
already parsed schemas a schema's ``references`` name, as ``(name, parsed)`` pairs in the
order given (Avro uses the named types they define; JSON Schema resolves ``$ref`` to a
reference's name; Protobuf imports a file by the reference's name). A parse returns a
:class:`ParsedSchema`, or raises :class:`~.errors.RegistryError` 42201 with the parser's
reason.

A parsed schema carries:

- ``schema_type`` -- ``AVRO``, ``JSON`` or ``PROTOBUF``;
- ``canonical`` -- the text that decides identity: two schemas of one type with equal
  canonical texts and equal references are the same schema (same id);
- ``text`` -- what the registry stores and serves for it (for Avro and JSON Schema the
  canonical text -- JSON Schema's keeps the registration order of keys; for Protobuf the
  text as first registered, see :mod:`.protobuf_schema`).

:func:`parse` dispatches on ``schemaType`` (``AVRO`` when absent); an unknown type is
refused 42201 ``Invalid schema type X``, Confluent's code and words. Schemas of different
types are never compatible with each other. Pure functions; parsed schemas are immutable
and shared between threads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from . import avro_schema, json_schema, protobuf_schema
from .errors import INVALID_SCHEMA, RegistryError, invalid_schema


class ParsedSchema(Protocol):
    schema_type: str

    @property
    def canonical(self) -> str: ...

    @property
    def text(self) -> str: ...


NamedReference = tuple[str, Any]


@dataclass(frozen=True)
class SchemaFormat:
    schema_type: str
    parse: Callable[[str, Sequence[NamedReference]], Any]
    reader_incompatibilities: Callable[[Any, Any], list[str]]


def _parse_avro(text: str, references: Sequence[NamedReference]) -> Any:
    return avro_schema.AvroSchema.parse(text, [p for _n, p in _same_type(references, "AVRO")])


def _same_type(references: Sequence[NamedReference], schema_type: str) -> Sequence[NamedReference]:
    for name, parsed in references:
        if parsed.schema_type != schema_type:
            raise invalid_schema(f"reference {name!r} is a {parsed.schema_type} schema, not "
                                 f"{schema_type}")
    return references


def _parse_json(text: str, references: Sequence[NamedReference]) -> Any:
    return json_schema.JsonSchema.parse(text, _same_type(references, "JSON"))


def _parse_protobuf(text: str, references: Sequence[NamedReference]) -> Any:
    return protobuf_schema.ProtobufSchema.parse(text, _same_type(references, "PROTOBUF"))


FORMATS: dict[str, SchemaFormat] = {
    "AVRO": SchemaFormat("AVRO", _parse_avro, avro_schema.reader_incompatibilities),
    "JSON": SchemaFormat("JSON", _parse_json, json_schema.reader_incompatibilities),
    "PROTOBUF": SchemaFormat("PROTOBUF", _parse_protobuf, protobuf_schema.reader_incompatibilities),
}
SCHEMA_TYPES = tuple(FORMATS)
DEFAULT_SCHEMA_TYPE = "AVRO"


def schema_format(schema_type: object) -> SchemaFormat:
    """The format of a body's ``schemaType`` (None or empty: Avro)."""
    name = DEFAULT_SCHEMA_TYPE if schema_type in (None, "") else schema_type
    fmt = FORMATS.get(name) if isinstance(name, str) else None
    if fmt is None:
        raise invalid_schema_type(schema_type)
    return fmt


def invalid_schema_type(schema_type: object) -> RegistryError:
    return RegistryError(422, INVALID_SCHEMA, f"Invalid schema type {schema_type}")


def parse(schema_type: object, text: str, references: Sequence[NamedReference] = ()) -> Any:
    return schema_format(schema_type).parse(text, references)


def reader_incompatibilities(reader: Any, writer: Any) -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader``; empty if it can."""
    if reader.schema_type != writer.schema_type:
        return [f"schema type changed from {writer.schema_type} to {reader.schema_type}"]
    return FORMATS[reader.schema_type].reader_incompatibilities(reader, writer)
