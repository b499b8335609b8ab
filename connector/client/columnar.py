"""Decode fetched record batches straight into columns (numpy and Arrow), not objects.

A fetch response carries RecordBatch v2 batches; a consumer that wants Arrow (the Spark
source yields ``pyarrow.RecordBatch``es) should not build a Python object per record only
to take it apart again. :func:`decode_columns` works per *response* (and
:func:`decode_parts` over the record sets of several partitions at once, one pass for all:
a response to a Fetch of many small ranges is decoded once, not once per partition):

1. **per batch** (Python, a few per MiB): validate the CRC, skip control batches and
   batches wholly outside ``[start, until)``, decompress the records section, remember
   the batch's base offset, base/max timestamp and timestamp type. Uncompressed sections
   are decoded where they are, in the fetch response (no copy); compressed ones, and
   the sections of several partitions, are joined into one buffer;
2. **per record, positions only** (the one per-record Python loop, a handful of integer
   operations): walk the length prefixes to find where each record starts — a record's
   position depends on the previous record's length, so this chain cannot be vectorised
   (runs of equal-sized records are checked many at a time instead, see
   :func:`_chunk_starts`);
3. **per column, vectorised** (numpy over all records at once): read the 8 bytes at every
   record's start as one uint64 (a strided view: one gather, not one per byte) and take
   the varint fields from it with shifts and masks (length, timestamp delta, offset
   delta, key length), then the value length from the word at its position, and the
   header count; compute absolute offsets and timestamps, drop records outside the range.
   Varints longer than 3 bytes (values of 1 MiB and more) are decoded field by field;
4. **binary columns without copying per record**: keys and values are slices of the
   decoded bytes lying in order, so one ``binary`` array of 2n elements over those bytes
   describes them (element ``2i`` the slice, ``2i + 1`` the gap to the next one) and
   Arrow's ``take`` of the even elements, in C++, copies them into the standard layout:
   an int32 offsets buffer, one contiguous data buffer and a validity bitmap (nulls from
   length -1).

Steps 2 to 4 have two implementations: :class:`RecordScan`, C built with the package
(``_record_scan.c``: one bounded pass per record, ~13 ns per record, then a ``memcpy`` per
key or value), which every read uses, and the numpy steps described above, which do the
same work where the extension is not built and which the tests hold the C one to (the same
rows, or a :class:`~broker_sim.protocol.errors.CorruptMessage` from both).

Records with headers (rare) have their headers decoded in Python; every record's headers
are checked, whether or not they are asked for.

Layout of one record (see :mod:`broker_sim.protocol.records.record`)::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headerCount varint | headers

Worked example: two batches, base offsets 0 (3 records) and 3 (2 records), requested
range [2, 4): step 1 keeps both, step 2 finds 5 record positions, step 3 computes offsets
[0, 1, 2, 3, 4] and keeps positions 2 and 3, step 4 builds 2-row key/value arrays.

Malformed bytes raise :class:`~broker_sim.protocol.errors.CorruptMessage`, as the
object-based reader does.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute  # Array.cast needs it; import it once, up front

from broker_sim.protocol.errors import CorruptMessage
from broker_sim.protocol.primitives import read_uvarint, read_varint
from broker_sim.protocol.records import (
    HEADER_SIZE,
    BatchHeader,
    decompress,
    iter_batches,
    peek_batch_size,
)
from broker_sim.protocol.records.compression import NONE

_PAD = b"\x00" * 16  # vectorised reads may look up to 8 bytes past a varint's start
_INT32_MAX = (1 << 31) - 1

TIMESTAMP_US_UTC = pa.timestamp("us", tz="UTC")
HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))

#: The columns of :meth:`RecordColumns.to_arrow`: Spark's Kafka source schema.
KAFKA_SCHEMA = pa.schema([
    ("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
    ("partition", pa.int32()), ("offset", pa.int64()), ("timestamp", TIMESTAMP_US_UTC),
    ("timestampType", pa.int32()),
])
KAFKA_SCHEMA_WITH_HEADERS = KAFKA_SCHEMA.append(pa.field("headers", HEADERS_TYPE))


@dataclass
class RecordColumns:
    """Records as columns; row ``i`` of every column is one record.

    Rows of one partition (``topic``, ``partition``) unless ``part_of_row`` is set: then
    they come from several (:func:`decode_parts`) and row ``i`` is a record of partition
    ``parts[part_of_row[i]]`` (rows of one partition stay in offset order).
    ``keys``/``values`` are ``pyarrow.BinaryArray`` (int32 offsets, one data buffer,
    validity bitmap); :meth:`binary_buffers` exposes them as numpy arrays.
    ``timestamps`` are epoch milliseconds; ``timestamp_types`` 0 (CreateTime) or 1
    (LogAppendTime). ``headers`` is None unless requested, else one list per record.
    """

    topic: str
    partition: int
    offsets: np.ndarray
    timestamps: np.ndarray
    timestamp_types: np.ndarray
    keys: pa.Array
    values: pa.Array
    headers: list[list[tuple[str, bytes | None]]] | None = None
    part_of_row: np.ndarray | None = None
    parts: tuple[tuple[str, int], ...] = ()

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def next_offset(self) -> int:
        """The offset after the last row (of one partition's columns)."""
        if self.part_of_row is not None:
            raise ValueError("columns of several partitions have no single next offset")
        return int(self.offsets[-1]) + 1 if len(self.offsets) else -1

    @staticmethod
    def binary_buffers(array: pa.Array) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """(validity bitmap bytes or None, int32 offsets, uint8 data) of a binary column."""
        validity, offsets, data = array.buffers()
        n = len(array)
        offs = np.frombuffer(offsets, np.int32, n + 1, array.offset * 4)
        bits = None if validity is None or array.null_count == 0 else np.frombuffer(validity, np.uint8)
        return bits, offs, np.frombuffer(data, np.uint8) if data is not None else np.empty(0, np.uint8)

    def _topics_and_partitions(self) -> tuple[pa.Array, pa.Array]:
        n = len(self)
        if self.part_of_row is not None:
            names = pa.array([t for t, _ in self.parts], pa.string())
            numbers = np.array([p for _, p in self.parts], np.int32)
            return (names.take(_primitive(pa.int32(), self.part_of_row)),
                    _primitive(pa.int32(), numbers[self.part_of_row]))
        topic = self.topic.encode()
        topics = pa.Array.from_buffers(pa.string(), n, [
            None, pa.py_buffer(np.arange(n + 1, dtype=np.int32) * len(topic)),
            pa.py_buffer(topic * n)])
        return topics, _primitive(pa.int32(), np.full(n, self.partition, np.int32))

    def to_arrow(self, include_headers: bool = False) -> pa.RecordBatch:
        """A RecordBatch with :data:`KAFKA_SCHEMA` (plus ``headers`` if asked for)."""
        n = len(self)
        topics, partitions = self._topics_and_partitions()
        columns = [
            self.keys, self.values, topics, partitions,
            _primitive(pa.int64(), self.offsets),
            _primitive(TIMESTAMP_US_UTC, self.timestamps * 1000),
            _primitive(pa.int32(), self.timestamp_types.astype(np.int32)),
        ]
        if include_headers:
            headers = self.headers if self.headers is not None else [[] for _ in range(n)]
            columns.append(pa.array(
                [[{"key": k, "value": v} for k, v in h] for h in headers], type=HEADERS_TYPE))
            return pa.RecordBatch.from_arrays(columns, schema=KAFKA_SCHEMA_WITH_HEADERS)
        return pa.RecordBatch.from_arrays(columns, schema=KAFKA_SCHEMA)


@dataclass(frozen=True)
class RecordSetPart:
    """One partition's fetched record set and the offsets wanted from it (:func:`decode_parts`)."""

    topic: str
    partition: int
    records: Any
    start: int
    until: int
    #: read_committed: sees every batch header in order, False drops the batch
    keep: Callable[[BatchHeader], bool] | None = None


def _primitive(type_: pa.DataType, values: np.ndarray) -> pa.Array:
    # Not pa.array(values): for numpy input it imports pandas (hundreds of modules) first.
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(type_, len(values), [None, pa.py_buffer(values)])


def iter_batch_headers(record_set: Any,
                       check_crcs: bool = True) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each whole batch; CRC-checked unless ``check_crcs`` is False
    (``check.crcs=false``: trust the broker and the network, skip one pass over the bytes)."""
    if check_crcs:
        yield from iter_batches(record_set)
        return
    pos, n = 0, len(record_set)
    while True:
        size = peek_batch_size(record_set, pos)
        if size is None or pos + size > n:
            return
        header = BatchHeader.parse(record_set, pos)
        if header.magic != 2 or header.size != size:
            raise CorruptMessage(f"record batch at byte {pos} has magic {header.magic}")
        yield pos, header
        pos += size


def decode_columns(topic: str, partition: int, record_set: Any, start: int, until: int,
                   with_headers: bool = False, check_crcs: bool = True,
                   keep: Callable[[BatchHeader], bool] | None = None) -> RecordColumns | None:
    """The records of ``record_set`` with offsets in ``[start, until)``, as columns.

    None if no record of the range is in ``record_set``. A trailing partial batch (a
    fetch cut at its size limit) is ignored. ``keep`` (read_committed: see
    :mod:`connector.client.aborted`) sees every batch header in order and drops a batch
    by answering False.
    """
    return decode_parts([RecordSetPart(topic, partition, record_set, start, until, keep)],
                        with_headers, check_crcs)


def decode_parts(parts: list[RecordSetPart], with_headers: bool = False,
                 check_crcs: bool = True) -> RecordColumns | None:
    """The wanted records of several partitions' record sets as one set of columns.

    One decoding pass over all of them: the per-call cost of the vectorised steps is paid
    once, not per partition (it dominates for a few records each). One uncompressed part
    is decoded in place; otherwise the records sections are joined into one buffer.
    """
    sections: list[tuple[int, int]] = []
    batches: list[BatchHeader] = []
    batch_part: list[int] = []
    compressed = False
    for k, part in enumerate(parts):
        for pos, header in iter_batch_headers(part.records, check_crcs):
            if part.keep is not None and not part.keep(header):
                continue
            if (header.is_control or header.records_count == 0 or header.next_offset <= part.start
                    or header.base_offset >= part.until):
                continue
            sections.append((pos + HEADER_SIZE, pos + header.size))
            compressed = compressed or header.compression != NONE
            batches.append(header)
            batch_part.append(k)
    if not batches:
        return None
    first = parts[0]
    which = "" if len(parts) == 1 else f" (and {len(parts) - 1} other partition(s))"
    try:
        if len(parts) == 1:
            if not compressed:  # decode in place: no copy of the records
                out = _decode(first.topic, first.partition, first.records, sections, batches,
                              first.start, first.until, with_headers, padded=False)
                if not isinstance(out, _NeedsPadding):
                    return out
            start: int | np.ndarray = first.start
            until: int | np.ndarray = first.until
        else:
            start = np.array([parts[k].start for k in batch_part], np.int64)
            until = np.array([parts[k].until for k in batch_part], np.int64)
        views = [memoryview(part.records) for part in parts]
        chunks = [views[k][a:b] if h.compression == NONE else decompress(h.compression, views[k][a:b])
                  for (a, b), h, k in zip(sections, batches, batch_part, strict=True)]
        sections, pos = [], 0
        for chunk in chunks:
            sections.append((pos, pos + len(chunk)))
            pos += len(chunk)
        data = b"".join([*chunks, _PAD])
        out = _decode(first.topic, first.partition, data, sections, batches, start, until,
                      with_headers, batch_part=None if len(parts) == 1 else batch_part)
        assert not isinstance(out, _NeedsPadding)  # padded: never
        if out is not None and len(parts) > 1:
            out.parts = tuple((p.topic, p.partition) for p in parts)
        return out
    except (IndexError, ValueError) as e:
        raise CorruptMessage(f"malformed records in {first.topic}-{first.partition}{which}: {e}") from e


class _NeedsPadding:
    """:func:`_decode` of a record set in place met a record its vectorised reads would
    read past the end of (a tiny last record, a long varint): decode a padded copy."""


_NEEDS_PADDING = _NeedsPadding()


def _record_starts(data: Any, buf: np.ndarray, sections: list[tuple[int, int]],
                   batches: list[BatchHeader]) -> np.ndarray:
    """Start position (in ``data``) of every record of every batch, in order."""
    parts: list[Any] = []
    for (pos, end), header in zip(sections, batches, strict=True):
        _chunk_starts(data, buf, pos, end, header.records_count, parts)
    return np.concatenate([np.asarray(p, dtype=np.int64) for p in parts])


_MIN_RUN = 8  # gallop only when it pays: fewer equal-size records are walked in Python
_MAX_WALK = 512
_DELTA_WIDENS = 64  # offset deltas 0..63 are one varint byte, 64..8191 two


def _chunk_starts(data: bytes, buf: np.ndarray, pos: int, end: int, count: int,
                  parts: list[Any]) -> None:
    """Record starts of one batch's records section ``data[pos:end]``, into ``parts``.

    Each record starts with its length, so start ``i + 1`` depends on record ``i``. Runs of
    records of the same size are common (fixed-size payloads; offset and timestamp deltas
    change their varint width only at 64, 8192, ...), so this *gallops*: read one record's
    length prefix, assume the next ``k`` records have the same one, and check all ``k``
    prefixes at once with numpy. Up to the first mismatch the assumption is proven (by
    induction: a matching prefix means the same size, hence the next start is where it
    was assumed), and the mismatch itself is the next true start. Where sizes vary, it
    walks records one by one in Python instead, doubling the walk after each failed
    gallop, so the worst case costs little more than walking everything.
    """
    found = 0
    walk = _MIN_RUN
    while found < count:
        b1 = data[pos]
        if b1 < 0x80:
            hl, u = 1, b1
        elif (b2 := data[pos + 1]) < 0x80:
            hl, u = 2, (b1 & 0x7F) | (b2 << 7)
        elif (b3 := data[pos + 2]) < 0x80:
            hl, u = 3, (b1 & 0x7F) | ((b2 & 0x7F) << 7) | (b3 << 14)
        else:
            break  # a record of 1 MiB or more: walked below
        size = hl + (u >> 1)
        k = min(count - found, (end - pos) // size if size else 0)
        if found < _DELTA_WIDENS:  # the offset delta (= index) gets a byte longer there
            k = min(k, _DELTA_WIDENS - found)
        if k >= _MIN_RUN:
            cand = np.arange(pos, pos + size * k, size, dtype=np.int64)
            ok = buf[cand] == buf[pos]
            for j in range(1, hl):
                ok &= buf[cand + j] == buf[pos + j]
            m = int(ok.argmin())  # the first mismatch, or 0 if there is none
            if ok[m]:
                m = k
            parts.append(cand[:m])
            found += m
            pos += m * size
            if m >= _MIN_RUN:
                walk = _MIN_RUN
                continue
            walk = min(walk * 2, _MAX_WALK)
        pos, n = _walk(data, pos, min(walk, count - found), parts)
        found += n
    if found < count:
        pos, _ = _walk(data, pos, count - found, parts)
    if pos != end:
        raise CorruptMessage(f"records do not add up to their batch's size ({pos - end:+d} bytes)")


def _walk(data: bytes, pos: int, n: int, parts: list[Any]) -> tuple[int, int]:
    """Walk ``n`` records one by one from ``pos``; append their starts to ``parts``."""
    starts: list[int] = []
    add = starts.append
    for _ in range(n):
        add(pos)
        u = data[pos]
        if u < 0x80:
            pos += 1 + (u >> 1)
        else:
            u2 = data[pos + 1]
            if u2 < 0x80:
                pos += 2 + (((u & 0x7F) | (u2 << 7)) >> 1)
            else:
                u, p = read_uvarint(data, pos)
                pos = p + (u >> 1)
    parts.append(starts)
    return pos, n


def _varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zig-zag varints at every position of ``pos``: (values, positions after).

    Nearly every varint of a record is one or two bytes (lengths under 8 KiB, deltas under
    8192): both bytes are read at every position at once and combined without a loop. If
    any varint is longer, :func:`_long_varints` decodes the column byte by byte.
    """
    b0 = buf[pos]
    b1 = buf[pos + 1]  # may be the next field's byte: only used where b0 continues
    m0 = b0 >> 7
    if ((b1 >> 7) & m0).any():
        return _long_varints(buf, pos)
    raw = (b0 & 0x7F).astype(np.int32)
    raw |= ((b1 & 0x7F) * m0).astype(np.int32) << 7
    return (raw >> 1) ^ -(raw & 1), pos + 1 + m0


def _long_varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_varints` for columns with varints of any length (up to 10 bytes)."""
    b = buf[pos]
    raw = (b & 0x7F).astype(np.uint64)
    after = pos + 1
    idx = np.flatnonzero(b & 0x80)
    shift = 7
    while idx.size:
        if shift > 63:
            raise CorruptMessage("varint longer than 10 bytes")
        b = buf[after[idx]]
        raw[idx] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
        after[idx] += 1
        idx = idx[(b & 0x80) != 0]
        shift += 7
    values = (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)
    return values, after


def _zigzag(raw: np.ndarray) -> np.ndarray:
    """Zig-zag decoding of unsigned 64-bit values (negative ones are rare: -1, a null)."""
    values = (raw >> _U1).view(np.int64)
    sign = raw & _U1
    if sign.any():
        values ^= -sign.view(np.int64)
    return values


_WORD = np.dtype("<u8")
_B = np.uint64(0xFF)
_LOW7 = np.uint64(0x7F)
_U1, _U3, _U7, _U8, _U14, _U16, _U64 = (np.uint64(k) for k in (1, 3, 7, 8, 14, 16, 64))


def _words(buf: np.ndarray) -> np.ndarray:
    """Every 8 bytes of ``buf`` from every position, as little-endian uint64 (a strided
    view, no copy): ``_words(buf)[p]`` is ``buf[p : p + 8]``, one gather instead of eight."""
    return np.ndarray((len(buf) - 7,), _WORD, buffer=buf, strides=(1,))


def _var3(word: np.ndarray, shift: np.uint64 | np.ndarray) -> tuple[np.ndarray, Any] | None:
    """The zig-zag varint at bit ``shift`` of each ``word`` (1 to 3 bytes; None if longer):
    (values, shift after it). A shift of 64 or more reads zero bytes: callers check that
    the last field ended within the word."""
    x = word >> shift
    b0 = x & _B
    cont = b0 >> _U7
    if not cont.any():  # one byte everywhere: the shift stays one number
        return _zigzag(b0), shift + _U8
    b1 = (x >> _U8) & _B
    cont2 = cont & (b1 >> _U7)
    b0 &= _LOW7
    b1 &= _LOW7
    if not cont2.any():
        if cont.all():  # two bytes everywhere
            return _zigzag(b0 | (b1 << _U7)), shift + _U16
        return _zigzag(b0 | ((b1 * cont) << _U7)), shift + _U8 + (cont << _U3)
    b2 = (x >> _U16) & _B  # offset deltas from 8192 on, lengths from 8 KiB on
    if (cont2 & (b2 >> _U7)).any():
        return None
    raw = b0 | ((b1 * cont) << _U7) | (((b2 & _LOW7) * cont2) << _U14)
    return _zigzag(raw), shift + _U8 + ((cont + cont2) << _U3)


def _fields_fast(buf: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """The record fields of :func:`_fields` with 8-byte gathers instead of two byte gathers
    per field (varints of 1 to 3 bytes): the first word read at each record's start holds
    its length, attributes, timestamp delta, offset delta and usually the key length; a
    field that does not end within the word is read again from a word at its start; the
    word at the value length holds it. None if a varint is longer (1 MiB and more) or a
    word would reach past the end of ``buf``: then :func:`_fields` decodes it field by
    field."""
    words = _words(buf)
    if starts[-1] >= len(words):  # the last record is within 8 bytes of an unpadded end
        return None
    word = words[starts]
    got = _var3(word, np.uint64(0))
    if got is None:
        return None
    length, shift = got
    record_end = starts + (shift >> _U3).astype(np.int64) + length
    shift = shift + _U8  # the attributes byte
    base = starts
    fields = []
    for _ in range(3):  # timestamp delta, offset delta, key length
        got = _var3(word, shift)
        if got is None:
            return None
        value, after = got
        if np.any(after > _U64):  # not within the word everywhere: read from its start
            base = base + (shift >> _U3).astype(np.int64)
            if base.max() >= len(words):
                return None
            word = words[base]
            got = _var3(word, np.uint64(0))
            if got is None:
                return None
            value, after = got
        fields.append(value)
        shift = after
    ts_delta, offset_delta, key_len = fields
    key_start = base + (shift >> _U3).astype(np.int64)
    value_len_pos = key_start + np.maximum(key_len, 0)
    if value_len_pos[-1] >= len(words):
        return None
    word = words[value_len_pos]
    got = _var3(word, np.uint64(0))
    if got is None:  # values of 1 MiB or more
        return None
    value_len, shift = got
    value_start = value_len_pos + (shift >> _U3).astype(np.int64)
    return length, record_end, ts_delta, offset_delta, key_len, key_start, value_len, value_start


def _fields(buf: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, ...]:
    """(length, record end, timestamp delta, offset delta, key length, key start, value
    length, value start) of every record, field by field (varints of any length)."""
    length, pos = _varints(buf, starts)
    record_end = pos + length
    ts_delta, pos = _varints(buf, pos + 1)  # + 1: the attributes byte
    offset_delta, pos = _varints(buf, pos)
    key_len, pos = _varints(buf, pos)
    key_start = pos
    value_len, pos = _varints(buf, pos + np.maximum(key_len, 0))
    return length, record_end, ts_delta, offset_delta, key_len, key_start, value_len, pos


def _header_counts(buf: np.ndarray, pos: np.ndarray,
                   padded: bool = True) -> tuple[np.ndarray, np.ndarray] | None:
    """Header counts at ``pos``: (counts, positions after); nearly always one byte each.
    None if a count is longer and ``buf`` is not padded (:func:`_varints` reads ahead)."""
    b0 = buf[pos]
    if not (b0 & 0x80).any():
        return (b0 >> 1).astype(np.int64) ^ -(b0 & 1).astype(np.int64), pos + 1
    return _varints(buf, pos) if padded else None


_FIELD_COLUMNS = 9  # (ts delta, offset delta, key start, key length, value start,
#                      value length, header count position, header count, record end)


def _numpy_fields(data: Any, buf: np.ndarray, sections: list[tuple[int, int]],
                  batches: list[BatchHeader], padded: bool) -> tuple[np.ndarray, ...] | _NeedsPadding:
    """The :data:`_FIELD_COLUMNS` of every record, vectorised with numpy (steps 2 and 3),
    validated as :class:`RecordScan` validates them; headers are left to the caller."""
    starts = _record_starts(data, buf, sections, batches)
    fields = _fields_fast(buf, starts)
    if fields is None:
        if not padded:
            return _NEEDS_PADDING
        fields = _fields(buf, starts)
    length, record_end, ts_delta, offset_delta, key_len, key_start, value_len, value_start = fields
    header_pos = value_start + np.maximum(value_len, 0)
    header_counts = _header_counts(buf, header_pos, padded)
    if header_counts is None:
        return _NEEDS_PADDING
    header_count, pos = header_counts
    if (length < 6).any() or (key_len < -1).any() or (value_len < -1).any() or (
            header_count < 0).any():
        raise CorruptMessage("negative or impossible length in a record")
    plain = header_count == 0
    if (pos[plain] != record_end[plain]).any():
        raise CorruptMessage("record length does not match its fields")
    return (ts_delta, offset_delta, key_start, key_len, value_start, value_len, header_pos,
            header_count, record_end)


def _decode(topic: str, partition: int, data: Any, sections: list[tuple[int, int]],
            batches: list[BatchHeader], start: int | np.ndarray, until: int | np.ndarray,
            with_headers: bool, padded: bool = True,
            batch_part: list[int] | None = None) -> RecordColumns | _NeedsPadding | None:
    """Decode the records sections ``data[a:b]`` of ``batches``. ``padded``: ``data`` ends
    with :data:`_PAD`; else reads that would need it answer :data:`_NEEDS_PADDING` (the
    numpy path only: the C scanner reads nothing past a record).
    ``start``/``until`` are one range, or one per batch; ``batch_part`` (several
    partitions) gives each batch's part, which becomes the columns' ``part_of_row``."""
    buf = np.frombuffer(data, np.uint8)
    counts = np.array([h.records_count for h in batches], dtype=np.int64)
    if _SCAN is not None:
        fields = tuple(_SCAN.records(buf, sections, counts))
    else:
        scanned = _numpy_fields(data, buf, sections, batches, padded)
        if isinstance(scanned, _NeedsPadding):
            return scanned
        fields = scanned
    (ts_delta, offset_delta, key_start, key_len, value_start, value_len, header_pos,
     header_count, record_end) = fields
    # Headers are checked in every record, wanted or not, as the other fields are.
    decoded = {int(i): _headers(data, int(header_pos[i]), int(record_end[i]))
               for i in np.flatnonzero(header_count)}

    base_offsets = np.repeat(np.array([h.base_offset for h in batches], np.int64), counts)
    offsets = base_offsets + offset_delta
    log_append = np.repeat(np.array([h.timestamp_type for h in batches], np.int8), counts)
    base_ts = np.repeat(np.array([h.base_timestamp for h in batches], np.int64), counts)
    timestamps = base_ts + ts_delta
    if log_append.any():
        max_ts = np.repeat(np.array([h.max_timestamp for h in batches], np.int64), counts)
        timestamps = np.where(log_append == 1, max_ts, timestamps)

    if isinstance(start, np.ndarray):  # one range per batch
        start, until = np.repeat(start, counts), np.repeat(until, counts)
    part_of_row = None if batch_part is None else np.repeat(np.array(batch_part, np.int32), counts)
    keep = (offsets >= start) & (offsets < until)
    if not keep.all():
        selected = np.flatnonzero(keep)
        if selected.size == 0:
            return None
        if part_of_row is not None:
            part_of_row = part_of_row[selected]
        offsets, timestamps, log_append = offsets[selected], timestamps[selected], log_append[selected]
        key_start, key_len = key_start[selected], key_len[selected]
        value_start, value_len = value_start[selected], value_len[selected]
    else:
        selected = None
    headers = None
    if with_headers:
        rows = range(len(offsets)) if selected is None else selected.tolist()
        headers = [decoded.get(i, []) for i in rows] if decoded else [[] for _ in rows]
    data_buffer = pa.py_buffer(data)
    return RecordColumns(topic, partition, offsets, timestamps, log_append,
                         _binary(data_buffer, key_start, key_len),
                         _binary(data_buffer, value_start, value_len), headers, part_of_row)


def _binary(data_buffer: pa.Buffer, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """A binary array of ``data[starts[i] : starts[i] + lengths[i]]`` (length -1: null).

    The slices lie in ``data`` in order, each ending before the next starts, so one
    binary array over ``data`` with 2n elements describes them all without a copy:
    element ``2i`` is slice ``i``, element ``2i + 1`` the bytes up to slice ``i + 1`` (the
    next record's other fields). Arrow's ``take`` of the even elements (C++) then copies
    the slices into the standard layout: int32 offsets and one contiguous data buffer.
    """
    n = len(starts)
    valid = lengths >= 0
    null_count = int(n - np.count_nonzero(valid))
    if null_count == n:  # e.g. the keys of a topic written without keys
        return pa.nulls(n, pa.binary())
    if _SCAN is not None:
        gathered = _SCAN.gather(data_buffer, starts, lengths)
        if gathered is not None:
            offsets, values = gathered
            validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if null_count else None
            return pa.Array.from_buffers(pa.binary(), n, [validity, pa.py_buffer(offsets), values],
                                         null_count)
    ends = starts + (np.maximum(lengths, 0) if null_count else lengths)
    if n > 1 and (starts[1:] < ends[:-1]).any():
        raise CorruptMessage("record fields overlap")
    wide = len(data_buffer) > _INT32_MAX
    bounds = np.empty(2 * n + 1, np.int64 if wide else np.int32)
    bounds[0 : 2 * n : 2] = starts
    bounds[1 : 2 * n : 2] = ends
    bounds[2 * n] = ends[-1]
    spans = pa.Array.from_buffers(pa.large_binary() if wide else pa.binary(), 2 * n,
                                  [None, pa.py_buffer(bounds), data_buffer], 0)
    taken = spans.take(_primitive(pa.int64(), np.arange(0, 2 * n, 2, dtype=np.int64)))
    if wide:
        taken = taken.cast(pa.binary())
    if not null_count:
        return taken
    validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
    _, offsets, values = taken.buffers()
    return pa.Array.from_buffers(pa.binary(), n, [validity, offsets, values], null_count)


def _headers(data: bytes, pos: int, end: int) -> list[tuple[str, bytes | None]]:
    count, pos = read_varint(data, pos)
    out: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        klen, pos = read_varint(data, pos)
        if klen < 0 or pos + klen > end:
            raise CorruptMessage("header key runs past the end of its record")
        key = bytes(data[pos : pos + klen]).decode("utf-8")
        pos += klen
        vlen, pos = read_varint(data, pos)
        if vlen < -1 or pos + max(vlen, 0) > end:
            raise CorruptMessage("header value runs past the end of its record")
        out.append((key, None if vlen < 0 else bytes(data[pos : pos + vlen])))
        pos += max(vlen, 0)
    if pos != end:
        raise CorruptMessage("record length does not match its headers")
    return out


class RecordScan:
    """The per-record steps in C (``_record_scan.c``, built with the package), called
    through ctypes: :meth:`records` finds every record's fields in one pass (steps 2 and
    3 of the module docstring, with their checks) and :meth:`gather` copies key or value
    slices into Arrow's binary layout (step 4 without ``take``).

    The C code reads untrusted bytes with every read bounded by its record, its batch's
    section and the buffer, so malformed input is a :class:`CorruptMessage`, never a read
    outside the buffer. The numpy path (:func:`_numpy_fields`, ``take``) does the same
    work where the extension is not built (running from a source tree) and is what the
    tests compare this one with.

    Threading: stateless; ctypes releases the GIL for each call, so the process's other
    Python threads run while a response is scanned. The buffers passed in must stay alive and unchanged for
    the call (they are numpy arrays or Arrow buffers held by the caller).
    """

    ERRORS = {
        -1: "varint longer than 10 bytes",
        -2: "a field runs past the end of its record",
        -3: "negative or impossible length in a record",
        -4: "record length does not match its fields",
        -5: "records do not add up to their batch's size",
        -6: "more records than their batches count",
        -7: "a key or value lies outside the fetched bytes",
    }

    def __init__(self, path: str) -> None:
        lib = ctypes.CDLL(path)
        i64, ptr = ctypes.c_int64, ctypes.c_void_p
        self._scan = lib.pyq_scan_records
        self._scan.argtypes = [ptr, i64, ptr, i64, ptr, i64, ctypes.POINTER(i64)]
        self._scan.restype = i64
        self._gather = lib.pyq_gather_slices
        self._gather.argtypes = [ptr, i64, ptr, ptr, i64, ptr, ptr, i64, ctypes.POINTER(i64)]
        self._gather.restype = i64

    def records(self, buf: np.ndarray, sections: list[tuple[int, int]],
                counts: np.ndarray) -> np.ndarray:
        """The :data:`_FIELD_COLUMNS` of every record of ``buf``'s sections (``counts``
        records each), as the rows of one int64 array."""
        table = np.empty((len(sections), 3), np.int64)
        table[:, :2] = sections
        table[:, 2] = counts
        n = int(counts.sum())
        out = np.empty((_FIELD_COLUMNS, n), np.int64)
        where = ctypes.c_int64(0)
        got = self._scan(buf.ctypes.data, len(buf), table.ctypes.data, len(table),
                         out.ctypes.data, n, ctypes.byref(where))
        if got < 0:
            raise CorruptMessage(f"{self.ERRORS.get(got, got)} (at byte {where.value})")
        if got != n:
            raise CorruptMessage(f"{got} records where their batches count {n}")
        return out

    def gather(self, data: pa.Buffer, starts: np.ndarray,
               lengths: np.ndarray) -> tuple[np.ndarray, pa.Buffer] | None:
        """(int32 offsets, data buffer) of the slices ``data[starts[i] :][: lengths[i]]``
        (-1: null, no bytes); None if they exceed int32 offsets (the caller's other path
        handles those)."""
        starts = np.ascontiguousarray(starts, np.int64)
        lengths = np.ascontiguousarray(lengths, np.int64)
        total = int(np.maximum(lengths, 0).sum())
        if total > _INT32_MAX:
            return None
        offsets = np.empty(len(starts) + 1, np.int32)
        values = pa.allocate_buffer(total)
        where = ctypes.c_int64(0)
        got = self._gather(data.address, data.size, starts.ctypes.data, lengths.ctypes.data,
                           len(starts), offsets.ctypes.data, values.address, total,
                           ctypes.byref(where))
        if got < 0:
            raise CorruptMessage(f"{self.ERRORS.get(got, got)} (slice {where.value})")
        return offsets, values


def _load_scan() -> RecordScan | None:
    try:
        from . import _record_scan
    except ImportError:  # a source tree where the extension was not built
        return None
    return RecordScan(_record_scan.__file__)


#: The C scanner, or None where it is not built (then numpy does its work).
_SCAN = _load_scan()
