"""Confluent's wire format, shared by the Avro, Protobuf and JSON Schema columns.

A framed value is a magic byte 0, the writer's schema id (4 bytes, big-endian), then the
payload; Protobuf puts the *message indexes* between the id and the payload (the path of
the message type in its file: a zigzag varint count, then each index as a zigzag varint;
``[0]``, the first message, is the single byte 0).

:func:`split_header` reads the header, :func:`read_message_indexes` /
:func:`message_indexes` the Protobuf path, :func:`decode_batch` builds one Arrow column from
a batch of values with a per-value decoder, giving null and a reason for each value that
does not decode (or does not fit the column's type).

What the three formats' readers and writers share besides the bytes:
:func:`reader_record` (the reader schema: by id, else a subject's version),
:func:`writer_record` (the writer schema: registered or looked up, else by id, else the
subject's latest) and :class:`SchemaCache` (each writer schema fetched once per id, an
unknown id a bad record).

>>> split_header(bytes([0, 0, 0, 0, 7]) + b"{}")
(7, 5)
>>> message_indexes([0]), message_indexes([1, 2])
(b'\\x00', b'\\x04\\x02\\x04')
>>> read_message_indexes(b"\\x04\\x02\\x04rest", 0)
([1, 2], 3)

Pure functions but the registry look-ups; any thread (:class:`SchemaCache` says how).
"""

from __future__ import annotations

import struct
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from .client import RegistryRefusal

MAGIC = 0
SCHEMA_NOT_FOUND = 40403


def split_header(data: bytes) -> tuple[int, int]:
    """(writer schema id, offset of what follows the header); ValueError with the reason."""
    if len(data) < 5 or data[0] != MAGIC:
        why = "too short for Confluent's 5-byte header" if data[:1] == bytes([MAGIC]) \
            else "no magic byte 0"
        raise ValueError(f"{why} (first bytes {bytes(data[:5]).hex() or 'none'})")
    return struct.unpack_from(">I", data, 1)[0], 5


def header(schema_id: int) -> bytes:
    return struct.pack(">bI", MAGIC, schema_id)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated message indexes")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("a message index varint longer than 10 bytes")


def _zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        if z < 0x80:
            out.append(z)
            return bytes(out)
        out.append((z & 0x7F) | 0x80)
        z >>= 7


def read_message_indexes(data: bytes, pos: int) -> tuple[list[int], int]:
    """The Protobuf message indexes at ``pos`` and the payload's offset."""
    count, pos = _varint(data, pos)
    if count == 0:
        return [0], pos
    if count < 0 or count > 100:
        raise ValueError(f"message index count {count} is not a valid path")
    indexes = []
    for _ in range(count):
        i, pos = _varint(data, pos)
        if i < 0:
            raise ValueError(f"negative message index {i}")
        indexes.append(i)
    return indexes, pos


def message_indexes(path: Sequence[int]) -> bytes:
    if list(path) == [0]:
        return b"\x00"
    return _zigzag(len(path)) + b"".join(_zigzag(i) for i in path)


def decode_batch(decode_one: Callable[[bytes], Any], values: Sequence[bytes | None],
                 arrow_type: pa.DataType, column: str) -> tuple[pa.Array, list[str | None]]:
    """The Arrow column of ``values`` (null stays null) and, per value, the reason it could
    not be read (None when it was); ``decode_one`` raises ValueError with the reason."""
    data: list[Any] = []
    reasons: list[str | None] = []
    for v in values:
        if v is None:
            data.append(None)
            reasons.append(None)
            continue
        try:
            data.append(decode_one(v))
            reasons.append(None)
        except ValueError as e:
            data.append(None)
            reasons.append(f"{column}: {e}")
    try:
        return pa.array(data, type=arrow_type), reasons
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        pass  # one datum does not fit its Spark type: find which, row by row
    out = []
    for i, datum in enumerate(data):
        try:
            pa.array([datum], type=arrow_type)
            out.append(datum)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
            out.append(None)
            reasons[i] = f"{column}: does not fit its Spark type: {e}"
    return pa.array(out, type=arrow_type), reasons


def reader_record(client: Any, subject: str | None, version: str | None,
                  schema_id: int | None) -> tuple[dict[str, Any], int, str]:
    """(registry record with its ``id``, schema id, description) of a reader schema: by
    ``schema_id``, else ``subject``'s ``version`` (``latest`` by default)."""
    if schema_id is not None:
        return ({"id": schema_id, **client.schema_by_id(schema_id)}, schema_id,
                f"schema id {schema_id}")
    assert subject is not None
    record = client.version(subject, version or "latest")
    sid = int(record["id"])
    return record, sid, f"subject {subject} version {record['version']} (id {sid})"


def writer_record(client: Any, subject: str | None, schema_text: str | None,
                  schema_id: int | None, auto_register: bool,
                  schema_type: str | None) -> tuple[dict[str, Any], int, str]:
    """(registry record with its ``id``, schema id, description) of a writer schema:
    ``schema_text`` (of ``schema_type``; None is Avro) registered under ``subject``, or
    without ``auto_register`` looked up there (the registry refuses a schema it does not
    have); else ``schema_id``; else the subject's latest version."""
    if schema_text is None:
        return reader_record(client, subject, None, schema_id)
    assert subject is not None
    body = {"schema": schema_text} if schema_type is None \
        else {"schema": schema_text, "schemaType": schema_type}
    if auto_register:
        sid = client.register(subject, body)
    else:
        sid = int(client.request("POST", f"/subjects/{urllib.parse.quote(subject, safe='')}",
                                 body)["id"])
    return {"id": sid, **body}, sid, f"schema id {sid} of subject {subject}"


class SchemaCache:
    """Parsed schemas by (registry URL, schema id), kept for the life of the Python worker
    (an id never changes its schema), so a task fetches each writer schema once.

    Any thread: the map is guarded by a lock, which is not held while fetching; two
    threads missing the same id at once both fetch it and store equal schemas.
    """

    def __init__(self) -> None:
        self._parsed: dict[tuple[str, int], Any] = {}
        self._lock = threading.Lock()

    def get(self, url: str, schema_id: int, load: Callable[[], Any]) -> Any:
        """The schema of ``schema_id``, ``load()`` on a miss (its errors pass through)."""
        key = (url, schema_id)
        with self._lock:
            if key in self._parsed:
                return self._parsed[key]
        parsed = load()
        with self._lock:
            self._parsed[key] = parsed
        return parsed

    def put(self, url: str, schema_id: int, parsed: Any) -> None:
        with self._lock:
            self._parsed[(url, schema_id)] = parsed

    def known(self, url: str, schema_id: int, load: Callable[[], Any]) -> Any:
        """:meth:`get` for a value's writer schema: an id the registry does not have
        (its 40403) is a ValueError (a bad record); other registry errors raise."""
        try:
            return self.get(url, schema_id, load)
        except RegistryRefusal as e:
            if e.error_code != SCHEMA_NOT_FOUND:
                raise
            raise ValueError(f"unknown schema id {schema_id} ({e.message}, registry error "
                             f"{e.error_code})") from None
