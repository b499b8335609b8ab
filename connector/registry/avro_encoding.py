"""Data -> Confluent-framed Avro: the write side of :mod:`.avro_decoding`.

:class:`AvroWriterSchema` (picklable, made on the driver) is a schema and the id the
registry gave it: looked up or registered under a subject (``autoRegisterSchemas``; the
registry answers the existing id when it is there already, and refuses — HTTP 409, naming
the subject and the compatibility rule — a schema the subject's level does not allow), the
subject's latest version, or an id. :meth:`AvroWriterSchema.encode` frames the Avro binary
encoding of one datum (a dict of a record's fields, as ``Row.asDict(recursive=True)``
gives); a datum that does not match the schema raises ValueError naming the field.

Threading: stateless after construction; any thread.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any

from .avro_types import parse_registry_schema
from .framing import header, writer_record
from .settings import RegistrySettings


@dataclass(frozen=True)
class AvroWriterSchema:
    schema: Any  # fastavro-parsed
    schema_id: int
    description: str

    def encode(self, datum: Any) -> bytes:
        from fastavro import schemaless_writer
        from fastavro.validation import ValidationError, validate

        try:
            validate(datum, self.schema, raise_errors=True)
        except ValidationError as e:
            raise ValueError(f"does not match {self.description}: {' '.join(str(e).split())}"
                             ) from None
        out = io.BytesIO()
        out.write(header(self.schema_id))
        schemaless_writer(out, self.schema, datum)
        return out.getvalue()


def writer_schema(registry: RegistrySettings, subject: str | None, schema_text: str | None,
                  schema_id: int | None, auto_register: bool) -> AvroWriterSchema:
    """The writer schema: ``schema_text`` registered (or looked up, without
    ``auto_register``) under ``subject``; else ``schema_id``; else the subject's latest."""
    client = registry.client()
    record, sid, where = writer_record(client, subject, schema_text, schema_id, auto_register,
                                       None)
    json.loads(record["schema"])
    return AvroWriterSchema(parse_registry_schema(client, record, {}), sid, where)
