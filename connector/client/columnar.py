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
   :func:`~.columnar_numpy._chunk_starts`);
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

Steps 2 to 4 have two implementations, one module each: :mod:`.record_scan` loads
:class:`~.record_scan.RecordScan`, C built with the package (``_record_scan.c``: one
bounded pass per record, ~13 ns per record, then a ``memcpy`` per key or value), which
every read uses; :mod:`.columnar_numpy` is the numpy steps described above, which do the
same work where the extension is not built and which the tests hold the C one to (the same
rows, or a :class:`~broker_sim.protocol.errors.CorruptMessage` from both). This module is
the public API and what both engines share: batches (step 1), the columns built from the
engine's fields, headers, and :data:`_SCAN`, the engine in use (None: numpy).

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

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute  # Array.cast needs it; import it once, up front

from broker_sim.protocol.errors import CorruptMessage
from broker_sim.protocol.primitives import read_varint
from broker_sim.protocol.records import (
    HEADER_SIZE,
    BatchHeader,
    decompress,
    iter_batches,
    peek_batch_size,
)
from broker_sim.protocol.records.compression import NONE

from .columnar_numpy import PAD, NeedsPadding, numpy_fields, take_binary
from .record_scan import RecordScan, load_record_scan

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
                if not isinstance(out, NeedsPadding):
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
        data = b"".join([*chunks, PAD])
        out = _decode(first.topic, first.partition, data, sections, batches, start, until,
                      with_headers, batch_part=None if len(parts) == 1 else batch_part)
        assert not isinstance(out, NeedsPadding)  # padded: never
        if out is not None and len(parts) > 1:
            out.parts = tuple((p.topic, p.partition) for p in parts)
        return out
    except (IndexError, ValueError) as e:
        raise CorruptMessage(f"malformed records in {first.topic}-{first.partition}{which}: {e}") from e


def _decode(topic: str, partition: int, data: Any, sections: list[tuple[int, int]],
            batches: list[BatchHeader], start: int | np.ndarray, until: int | np.ndarray,
            with_headers: bool, padded: bool = True,
            batch_part: list[int] | None = None) -> RecordColumns | NeedsPadding | None:
    """Decode the records sections ``data[a:b]`` of ``batches``. ``padded``: ``data`` ends
    with :data:`~.columnar_numpy.PAD`; else reads that would need it answer
    :data:`~.columnar_numpy.NEEDS_PADDING` (the numpy path only: the C scanner reads
    nothing past a record).
    ``start``/``until`` are one range, or one per batch; ``batch_part`` (several
    partitions) gives each batch's part, which becomes the columns' ``part_of_row``."""
    buf = np.frombuffer(data, np.uint8)
    counts = np.array([h.records_count for h in batches], dtype=np.int64)
    if _SCAN is not None:
        fields = tuple(_SCAN.records(buf, sections, counts))
    else:
        scanned = numpy_fields(data, buf, sections, batches, padded)
        if isinstance(scanned, NeedsPadding):
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
    return take_binary(data_buffer, starts, lengths, valid, null_count)


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


#: The C scanner, or None where it is not built (then numpy does its work).
_SCAN: RecordScan | None = load_record_scan()
