"""Confluent-framed Avro values -> one Arrow column, a batch at a time.

Confluent's framing: a magic byte 0, the writer's schema id (4 bytes, big-endian), then the
Avro binary encoding of the datum. :class:`AvroColumn` (picklable, made on the driver)
carries the reader schema — the subject's latest version at query start, or a pinned
version or id — and the registry settings; :class:`AvroDecoder` (one per task, on an
executor) reads each value with its writer schema, fetched once per id by
``/schemas/ids/{id}`` and kept for the life of the Python worker, resolved into the reader
schema by Avro's rules (fastavro's ``schemaless_reader(writer, reader)``), and builds the
Arrow column of the batch in one ``pyarrow.array`` call. That is the per-record path; the
values of a batch whose writer schema is the reader's (the common case) take the fast path
of :mod:`.avro_runs` instead (polars reading them as one Avro container, ~10x faster) when
the schema is one it reads exactly, and fall back to the per-record path when polars
refuses the run (a corrupt value in it), so bad records are named as before. Values of
another writer schema (schema evolution) always take the per-record path.

A value that cannot be read is a *bad record*, with a reason: ``no magic byte 0``, ``too
short``, ``unknown schema id N`` (the registry's 40403), or ``does not decode ...`` (a
truncated or corrupt payload, or a writer schema the reader schema cannot resolve).
:meth:`AvroDecoder.decode` returns the column with null there and the reasons; what to do
with them (fail, keep, dead-letter) is the caller's. A registry that cannot be reached is
not a bad record: it raises.

Threading: a decoder belongs to one task's thread; the shared writer-schema cache is
guarded by a lock, and :meth:`AvroDecoder.decode` looks each writer schema up once per batch
(not once per value).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa
from fastavro import schemaless_reader

from .avro_runs import RunReader, eligible, expanded
from .avro_types import avro_types, parse_registry_schema, plain_converter
from .client import RegistryRefusal
from .framing import MAGIC, SCHEMA_NOT_FOUND, SchemaCache, decode_batch, reader_record, split_header
from .settings import RegistrySettings

_writers = SchemaCache()


@dataclass(frozen=True)
class AvroColumn:
    """How to decode one column: the reader schema (fastavro-parsed, picklable) and its
    id, the registry, and the column (``key``/``value``)."""

    column: str
    registry: RegistrySettings
    reader: Any
    reader_id: int
    description: str  # e.g. "subject clicks-value version 2 (id 3)"

    @property
    def ddl(self) -> str:
        return avro_types(self.reader, self.column)[0]

    def decoder(self) -> AvroDecoder:
        return AvroDecoder(self)

    @property
    def arrow_type(self) -> pa.DataType:
        return avro_types(self.reader, self.column)[1]


def resolve_reader(column: str, registry: RegistrySettings, subject: str | None,
                   version: str | None, schema_id: int | None) -> AvroColumn:
    """The reader schema: by id, else the subject's version (``latest`` by default)."""
    client = registry.client()
    record, sid, where = reader_record(client, subject, version, schema_id)
    reader = parse_registry_schema(client, record, {})
    spec = AvroColumn(column, registry, reader, sid, where)
    spec.ddl  # noqa: B018 - refuse an unmapped schema now, naming the field
    return spec


class AvroDecoder:
    """Decodes batches of framed values of one column (see the module doc)."""

    def __init__(self, spec: AvroColumn) -> None:
        self.spec = spec
        self.arrow_type = spec.arrow_type
        self._plain = plain_converter(spec.reader)
        self._client: Any = None
        self._runs: dict[int, RunReader | None] = {}

    def _load(self, schema_id: int) -> Any:
        if self._client is None:
            self._client = self.spec.registry.client()
        record = {"id": schema_id, **self._client.schema_by_id(schema_id)}
        return parse_registry_schema(self._client, record, {})

    def _writer(self, schema_id: int) -> Any:
        if schema_id == self.spec.reader_id:
            return self.spec.reader
        return _writers.get(self.spec.registry.url, schema_id, lambda: self._load(schema_id))

    def _known_writer(self, schema_id: int) -> Any:
        """The writer schema of ``schema_id``; ValueError when the registry has none."""
        if schema_id == self.spec.reader_id:
            return self.spec.reader
        return _writers.known(self.spec.registry.url, schema_id, lambda: self._load(schema_id))

    def decode_one(self, data: bytes) -> Any:
        """The datum of one framed value; raises ValueError with the reason."""
        schema_id = split_header(data)[0]
        return self._datum(data, schema_id, self._known_writer(schema_id))

    def _datum(self, data: bytes, schema_id: int, writer: Any) -> Any:
        body = io.BytesIO(data)
        body.seek(5)
        try:
            # the reader's own records need no resolution (and skip its per-call cost)
            datum = schemaless_reader(body, writer, None if schema_id == self.spec.reader_id
                                      else self.spec.reader)
        except Exception as e:  # fastavro's errors: EOF, resolution, bad unicode, bad index
            raise ValueError(f"does not decode with writer schema {schema_id} into reader "
                             f"{self.spec.description}: {type(e).__name__}: {e}") from None
        if body.tell() != len(data):
            raise ValueError(f"{len(data) - body.tell()} byte(s) left after the datum of writer "
                             f"schema {schema_id}")
        return datum if self._plain is None or datum is None else self._plain(datum)

    def _run_reader(self, schema_id: int) -> RunReader | None:
        """The fast path's reader for values of writer ``schema_id``: when that schema is
        the reader's (its id, or the same expanded schema) and polars reads it; else None."""
        if schema_id in self._runs:
            return self._runs[schema_id]
        reader = expanded(self.spec.reader)
        run = None
        if eligible(reader):
            try:
                same = schema_id == self.spec.reader_id or \
                    expanded(self._writer(schema_id)) == reader
            except RegistryRefusal as e:
                if e.error_code != SCHEMA_NOT_FOUND:
                    raise
                same = False
            run = RunReader(reader, self.arrow_type) if same else None
        self._runs[schema_id] = run
        return run

    def decode(self, values: Sequence[bytes | None]) -> tuple[pa.Array, list[str | None]]:
        """The Arrow column of ``values`` (null stays null) and, per value, the reason it
        could not be read (None when it was). Values are grouped by writer schema id; a
        group of the reader's schema is read by :class:`RunReader` (polars), the rest (and
        a group polars cannot read exactly) value by value with fastavro."""
        groups: dict[int, list[int]] = {}
        first = values[0] if values else None
        if first is not None and len(first) >= 5 and first[0] == MAGIC and all(
                v is not None and v.startswith(first[:5]) for v in values):
            groups[int.from_bytes(first[1:5], "big")] = list(range(len(values)))  # the usual
        else:
            for i, v in enumerate(values):
                if v is not None and len(v) >= 5 and v[0] == MAGIC:
                    groups.setdefault(int.from_bytes(v[1:5], "big"), []).append(i)
        pieces: list[pa.Array] = []
        placed: list[int] = []
        for schema_id, rows in groups.items():
            run = self._run_reader(schema_id)
            column = None if run is None else run.read(
                cast("Sequence[bytes]", values) if len(rows) == len(values)
                else [values[i] or b"" for i in rows])
            if column is not None:
                pieces.append(column)
                placed += rows
        if not placed:
            return self._decode_slow(values)
        if len(placed) == len(values) and len(pieces) == 1:
            return pieces[0], [None] * len(values)
        done = set(placed)
        rest = [i for i in range(len(values)) if i not in done]
        slow, slow_reasons = self._decode_slow([values[i] for i in rest])
        reasons: list[str | None] = [None] * len(values)
        position = np.empty(len(values), np.int64)
        position[placed] = np.arange(len(placed))
        if rest:
            position[rest] = len(placed) + np.arange(len(rest))
            for i, why in zip(rest, slow_reasons, strict=True):
                reasons[i] = why
        return pa.concat_arrays([*pieces, slow]).take(pa.array(position)), reasons

    def _decode_slow(self, values: Sequence[bytes | None]) -> tuple[pa.Array, list[str | None]]:
        """:meth:`decode` value by value with fastavro (each writer schema looked up once)."""
        writers: dict[int, Any] = {}

        def decode_one(v: bytes) -> Any:
            schema_id = split_header(v)[0]
            if schema_id not in writers:
                try:
                    writers[schema_id] = self._known_writer(schema_id)
                except ValueError as e:
                    writers[schema_id] = e
            writer = writers[schema_id]
            if isinstance(writer, ValueError):
                raise writer
            return self._datum(v, schema_id, writer)

        return decode_batch(decode_one, values, self.arrow_type, self.spec.column)
