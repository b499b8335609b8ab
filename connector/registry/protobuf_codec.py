"""Confluent-framed Protobuf <-> one Arrow column (the source, the sink, the functions).

A framed value is magic byte 0, the writer's schema id, the message indexes (the path of
the message type in its schema file, :mod:`.framing`) and the message's binary encoding.

:class:`ProtobufColumn` (picklable, made on the driver) is the reader: a schema id (the
subject's latest version at query start, a pinned version, or an id), the message the
column holds (the file's first, or the one named by ``valueProtobufMessage``) and its
Spark/Arrow types (:mod:`.protobuf_types`). :class:`ProtobufDecoder` (one per task, on an
executor) reads each value: the writer's file is fetched once per id
(``/schemas/ids/{id}?format=serialized``) and kept for the life of the Python worker; the
message indexes must name a message of the reader's full name (else a bad record naming
both), and the payload is parsed with the reader's message class: Protobuf's own
resolution by field numbers (unknown fields skipped, missing ones unset).

:class:`ProtobufWriterSchema` (picklable) is the writer: a schema id and the message;
:meth:`~ProtobufWriterSchema.encode` frames one row (a dict of fields).

Bad-record reasons as for Avro: ``no magic byte 0``, ``too short``, ``unknown schema id N``,
``message indexes ...``, ``does not decode ...``. Threading: decoders and writers belong to
one task's thread; the file cache is guarded by a lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from .framing import (
    SchemaCache,
    decode_batch,
    header,
    message_indexes,
    read_message_indexes,
    reader_record,
    split_header,
    writer_record,
)
from .protobuf_types import (
    choose_message,
    from_python,
    index_path,
    load_file,
    message_at,
    message_types,
    to_python,
)
from .settings import RegistrySettings

_files = SchemaCache()


def _loader(registry: RegistrySettings, schema_id: int, client: Any = None) -> Any:
    def load() -> Any:
        c = client or registry.client()
        return load_file(c, {"id": schema_id, **c.request("GET", f"/schemas/ids/{schema_id}",
                                                          format="serialized")})
    return load


def _file(registry: RegistrySettings, schema_id: int, client: Any = None) -> Any:
    return _files.get(registry.url, schema_id, _loader(registry, schema_id, client))


def _message_class(desc: Any) -> type:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(desc)


@dataclass(frozen=True)
class ProtobufColumn:
    column: str
    registry: RegistrySettings
    reader_id: int
    message: str  # full name
    description: str
    ddl: str
    arrow_type: pa.DataType = field(compare=False)

    def decoder(self) -> ProtobufDecoder:
        return ProtobufDecoder(self)


def resolve_protobuf_reader(column: str, registry: RegistrySettings, subject: str | None,
                            version: str | None, schema_id: int | None,
                            message: str | None, option: str) -> ProtobufColumn:
    """The reader: by id, else the subject's version (``latest`` by default); its message
    (``message`` or the first); UnsupportedProtobuf / ValueError naming what does not map."""
    client = registry.client()
    _record, sid, where = reader_record(client, subject, version, schema_id)
    desc = choose_message(_file(registry, sid, client), message, option)
    ddl, arrow = message_types(desc, column)
    return ProtobufColumn(column, registry, sid, desc.full_name,
                          f"{where}, message {desc.full_name}", ddl, arrow)


class ProtobufDecoder:
    """Decodes batches of framed values of one column (see the module doc)."""

    def __init__(self, spec: ProtobufColumn) -> None:
        self.spec = spec
        self.arrow_type = spec.arrow_type
        file = _file(spec.registry, spec.reader_id)
        self._cls = _message_class(file.pool.FindMessageTypeByName(spec.message))
        self._matching: set[tuple[int, tuple[int, ...]]] = set()  # (id, indexes) checked

    def decode_one(self, data: bytes) -> Any:
        from google.protobuf.message import DecodeError

        schema_id, pos = split_header(data)
        indexes, pos = read_message_indexes(data, pos)
        if (schema_id, tuple(indexes)) not in self._matching:
            self._check(schema_id, indexes)
        msg = self._cls()
        try:
            msg.ParseFromString(bytes(data[pos:]))
        except DecodeError as e:
            raise ValueError(f"does not decode as {self.spec.message} (writer schema "
                             f"{schema_id}): {e}") from None
        return to_python(msg)

    def decode(self, values: Sequence[bytes | None]) -> tuple[pa.Array, list[str | None]]:
        return decode_batch(self.decode_one, values, self.arrow_type, self.spec.column)

    def _check(self, schema_id: int, indexes: list[int]) -> None:
        """The writer's message is the reader's (by full name); ValueError saying why not."""
        file = _files.known(self.spec.registry.url, schema_id,
                            _loader(self.spec.registry, schema_id))
        written = message_at(file, indexes)
        if written.full_name != self.spec.message:
            raise ValueError(f"message {written.full_name} (schema {schema_id}, indexes "
                             f"{indexes}), not the column's {self.spec.message}")
        self._matching.add((schema_id, tuple(indexes)))


@dataclass(frozen=True)
class ProtobufWriterSchema:
    registry: RegistrySettings
    schema_id: int
    message: str
    description: str

    def encode(self, row: Any) -> bytes:
        """The framed message of ``row`` (a dict); ValueError naming the field."""
        cls, prefix = _writers.get((self.registry.url, self.schema_id, self.message),
                                   (None, b""))
        if cls is None:
            desc = _file(self.registry, self.schema_id).pool.FindMessageTypeByName(self.message)
            cls = _message_class(desc)
            prefix = header(self.schema_id) + message_indexes(index_path(desc))
            _writers[(self.registry.url, self.schema_id, self.message)] = (cls, prefix)
        try:
            msg = from_python(cls, row)
        except ValueError as e:
            raise ValueError(f"does not match {self.description}: {e}") from None
        return prefix + msg.SerializeToString()


_writers: dict[tuple[str, int, str], tuple[Any, bytes]] = {}


def protobuf_writer(registry: RegistrySettings, subject: str | None, schema_text: str | None,
                    schema_id: int | None, auto_register: bool, message: str | None,
                    option: str) -> ProtobufWriterSchema:
    """The writer: ``schema_text`` (.proto) registered (or looked up, without
    ``auto_register``) under ``subject``; else ``schema_id``; else the subject's latest;
    its message ``message`` or the first."""
    client = registry.client()
    _record, sid, where = writer_record(client, subject, schema_text, schema_id, auto_register,
                                        "PROTOBUF")
    desc = choose_message(_file(registry, sid, client), message, option)
    return ProtobufWriterSchema(registry, sid, desc.full_name,
                                f"{where}, message {desc.full_name}")
