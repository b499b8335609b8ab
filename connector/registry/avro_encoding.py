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
import struct
from dataclasses import dataclass
from typing import Any

from .avro_types import parse_registry_schema
from .settings import RegistrySettings

MAGIC = 0


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
        out.write(struct.pack(">bI", MAGIC, self.schema_id))
        schemaless_writer(out, self.schema, datum)
        return out.getvalue()


def writer_schema(registry: RegistrySettings, subject: str | None, schema_text: str | None,
                  schema_id: int | None, auto_register: bool) -> AvroWriterSchema:
    """The writer schema: ``schema_text`` registered (or looked up, without
    ``auto_register``) under ``subject``; else ``schema_id``; else the subject's latest."""
    client = registry.client()
    if schema_text is not None:
        assert subject is not None
        body = {"schema": schema_text}
        if auto_register:
            sid = client.register(subject, body)
        else:
            sid = int(client.request("POST", f"/subjects/{_quote(subject)}", body)["id"])
        record = {"id": sid, "schema": schema_text}
        where = f"schema id {sid} of subject {subject}"
    elif schema_id is not None:
        record = {"id": schema_id, **client.schema_by_id(schema_id)}
        where = f"schema id {schema_id}"
    else:
        assert subject is not None
        record = client.version(subject, "latest")
        where = f"subject {subject} version {record['version']} (id {record['id']})"
    json.loads(record["schema"])
    return AvroWriterSchema(parse_registry_schema(client, record, {}), int(record["id"]), where)


def _quote(subject: str) -> str:
    import urllib.parse

    return urllib.parse.quote(subject, safe="")
