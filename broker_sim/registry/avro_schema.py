"""Avro schemas as the registry keeps them: parsed by the ``avro`` library, never by hand.

:meth:`AvroSchema.parse` turns a schema string (plus the already parsed schemas it
references) into an :class:`AvroSchema`; anything the library refuses, and any text that
is not JSON, raises :class:`~.errors.RegistryError` 42201 with the library's reason.

Two forms come out of a parse:

- :attr:`AvroSchema.canonical` -- the schema as the library prints the parsed object,
  compact JSON, named types from references printed by name (not inlined). It keeps
  ``doc``, ``default``, ``aliases`` and custom properties: two schemas are *the same
  schema* (same id, same version under a subject) exactly when these strings are equal,
  as Confluent's registry compares Avro's ``Schema.toString()``. Parsing Canonical Form
  cannot serve as identity: it drops defaults and aliases, which change what a reader
  accepts.
- :attr:`AvroSchema.parsing_canonical_form` -- Avro's Parsing Canonical Form (the
  library's), references inlined: what a fingerprint of the writer schema is taken over.

Compatibility (:func:`reader_incompatibilities`) is the ``avro`` library's own
``avro.compatibility.ReaderWriterCompatibilityChecker`` (a port of Java's
``SchemaCompatibility``), a fresh checker per call: it memoises pairs and is not meant to
be shared between threads. Instances of :class:`AvroSchema` are immutable after parse and
safe to share.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import avro.compatibility
import avro.errors
import avro.name
import avro.schema

from .errors import invalid_schema

SCHEMA_TYPE = "AVRO"


def _named_types(schema: avro.schema.Schema, seen: set[int] | None = None) -> Iterator[avro.schema.NamedSchema]:
    """Every named type (record, enum, fixed) defined in ``schema``, nested ones included."""
    seen = set() if seen is None else seen
    if id(schema) in seen:
        return
    seen.add(id(schema))
    if isinstance(schema, avro.schema.NamedSchema):
        yield schema
    if isinstance(schema, avro.schema.RecordSchema):
        for f in schema.fields:
            yield from _named_types(f.type, seen)
    elif isinstance(schema, avro.schema.ArraySchema):
        yield from _named_types(schema.items, seen)
    elif isinstance(schema, avro.schema.MapSchema):
        yield from _named_types(schema.values, seen)
    elif isinstance(schema, avro.schema.UnionSchema):
        for s in schema.schemas:
            yield from _named_types(s, seen)


class AvroSchema:
    """One parsed Avro schema and its printed forms (see the module docstring)."""

    schema_type = SCHEMA_TYPE

    def __init__(self, parsed: avro.schema.Schema, canonical: str,
                 references: Sequence[AvroSchema]) -> None:
        self.parsed = parsed
        self.canonical = canonical
        self.references = tuple(references)

    @classmethod
    def parse(cls, text: str, references: Sequence[AvroSchema] = ()) -> AvroSchema:
        """Parse ``text``; named types of ``references`` (already parsed) may be used by name."""
        try:
            data = json.loads(text)
        except (ValueError, TypeError) as e:
            raise invalid_schema(f"not JSON: {e}") from None
        names = avro.name.Names()
        for ref in references:
            for named in _named_types(ref.parsed):
                names.names[named.fullname] = named
        try:
            parsed = avro.schema.make_avsc_object(data, names)
            printed = avro.name.Names()
            for ref in references:
                ref.parsed.to_json(printed)  # marks the referenced names as printed
            canonical = json.dumps(parsed.to_json(printed), separators=(",", ":"),
                                   ensure_ascii=False)
        except (avro.errors.AvroException, ValueError, TypeError, KeyError, AttributeError) as e:
            raise invalid_schema(str(e) or type(e).__name__) from None
        except RecursionError:
            raise invalid_schema("nested too deeply") from None
        return cls(parsed, canonical, references)

    @property
    def text(self) -> str:
        """What the registry stores and serves: the canonical text."""
        return self.canonical

    @property
    def parsing_canonical_form(self) -> str:
        return json.dumps(self.parsed.to_canonical_json(), separators=(",", ":"), ensure_ascii=False)

    def __repr__(self) -> str:
        return f"AvroSchema({self.canonical[:80]})"


def reader_incompatibilities(reader: AvroSchema, writer: AvroSchema) -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader``; empty if it can."""
    checker = avro.compatibility.ReaderWriterCompatibilityChecker()
    result = checker.get_compatibility(reader.parsed, writer.parsed)
    if result.compatibility is avro.compatibility.SchemaCompatibilityType.compatible:
        return []
    kinds: list[Any] = list(result.incompatibilities)
    messages = sorted(result.messages) if result.messages else []
    locations = sorted(result.locations) if result.locations else []
    out = [f"{kind.name.upper()}" for kind in kinds] or ["INCOMPATIBLE"]
    detail = "; ".join(str(m) for m in messages)
    where = ", ".join(str(p) for p in locations)
    return [f"{', '.join(sorted(set(out)))} at {where or '/'}: {detail}"]
