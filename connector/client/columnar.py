"""Decode fetched record batches straight into columns (numpy and Arrow), not objects.

A fetch response carries RecordBatch v2 batches; a consumer that wants Arrow (the Spark
source yields ``pyarrow.RecordBatch``es) should not build a Python object per record only
to take it apart again. :func:`decode_columns` works per *response*:

1. **per batch** (Python, a few per MiB): validate the CRC, skip control batches and
   batches wholly outside ``[start, until)``, decompress the records section, remember
   the batch's base offset, base/max timestamp and timestamp type;
2. **per record, positions only** (the one per-record Python loop, a handful of integer
   operations): walk the length prefixes to find where each record starts — a record's
   position depends on the previous record's length, so this chain cannot be vectorised;
3. **per column, vectorised** (numpy over all records at once): decode the varint fields
   at those positions (length, timestamp delta, offset delta, key length, value length,
   header count), compute absolute offsets and timestamps, drop records outside the range;
4. **binary columns without copying per record**: keys and values are described as Arrow
   ``binary_view`` entries pointing into the decoded bytes (16 bytes per record: length
   plus the bytes inline when at most 12, else a 4-byte prefix and the offset), then cast
   to ``binary`` by Arrow's C++ kernel, which produces the standard layout: an int32
   offsets buffer, one contiguous data buffer and a validity bitmap (nulls from length -1).

Records with headers (rare) have their headers decoded in Python, only if asked for.

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
import pyarrow.compute  # noqa: F401  (Array.cast needs it; import it once, up front)

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

_PAD = b"\x00" * 16  # vectorised reads may look up to 12 bytes past a record's start
_INLINE = 12  # binary_view keeps values of at most 12 bytes inline

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
    """Records of one partition as columns; row ``i`` of every column is one record.

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

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def next_offset(self) -> int:
        return int(self.offsets[-1]) + 1 if len(self.offsets) else -1

    @staticmethod
    def binary_buffers(array: pa.Array) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """(validity bitmap bytes or None, int32 offsets, uint8 data) of a binary column."""
        validity, offsets, data = array.buffers()
        n = len(array)
        offs = np.frombuffer(offsets, np.int32, n + 1, array.offset * 4)
        bits = None if validity is None or array.null_count == 0 else np.frombuffer(validity, np.uint8)
        return bits, offs, np.frombuffer(data, np.uint8) if data is not None else np.empty(0, np.uint8)

    def to_arrow(self, include_headers: bool = False) -> pa.RecordBatch:
        """A RecordBatch with :data:`KAFKA_SCHEMA` (plus ``headers`` if asked for)."""
        n = len(self)
        topic = self.topic.encode()
        topics = pa.Array.from_buffers(pa.string(), n, [
            None, pa.py_buffer(np.arange(n + 1, dtype=np.int32) * len(topic)),
            pa.py_buffer(topic * n)])
        columns = [
            self.keys, self.values, topics,
            _primitive(pa.int32(), np.full(n, self.partition, np.int32)),
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
    chunks: list[Any] = []
    batches: list[BatchHeader] = []
    for pos, header in iter_batch_headers(record_set, check_crcs):
        if keep is not None and not keep(header):
            continue
        if (header.is_control or header.records_count == 0 or header.next_offset <= start
                or header.base_offset >= until):
            continue
        section = memoryview(record_set)[pos + HEADER_SIZE : pos + header.size]
        chunks.append(section if header.compression == NONE
                      else decompress(header.compression, section))
        batches.append(header)
    if not batches:
        return None
    data = b"".join([*chunks, _PAD])
    try:
        return _decode(topic, partition, data, chunks, batches, start, until, with_headers)
    except (IndexError, ValueError) as e:
        raise CorruptMessage(f"malformed records in {topic}-{partition}: {e}") from e


def _record_starts(data: bytes, buf: np.ndarray, chunks: list[Any],
                   batches: list[BatchHeader]) -> np.ndarray:
    """Start position (in ``data``) of every record of every batch, in order."""
    parts: list[Any] = []
    pos = 0
    for chunk, header in zip(chunks, batches, strict=True):
        end = pos + len(chunk)
        _chunk_starts(data, buf, pos, end, header.records_count, parts)
        pos = end
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


def _decode(topic: str, partition: int, data: bytes, chunks: list[Any],
            batches: list[BatchHeader], start: int, until: int,
            with_headers: bool) -> RecordColumns | None:
    buf = np.frombuffer(data, np.uint8)
    starts = _record_starts(data, buf, chunks, batches)
    counts = np.array([h.records_count for h in batches], dtype=np.int64)

    length, pos = _varints(buf, starts)
    record_end = pos + length
    ts_delta, pos = _varints(buf, pos + 1)  # + 1: the attributes byte
    offset_delta, pos = _varints(buf, pos)
    key_len, pos = _varints(buf, pos)
    key_start = pos
    value_len, pos = _varints(buf, pos + np.maximum(key_len, 0))
    value_start = pos
    header_pos = pos + np.maximum(value_len, 0)
    header_count, pos = _varints(buf, header_pos)
    if (length < 6).any() or (key_len < -1).any() or (value_len < -1).any() or (
            header_count < 0).any():
        raise CorruptMessage("negative or impossible length in a record")
    with_hdrs = np.flatnonzero(header_count)
    if with_hdrs.size:
        plain = header_count == 0
        mismatch = (pos[plain] != record_end[plain]).any()
    else:
        mismatch = (pos != record_end).any()
    if mismatch:
        raise CorruptMessage("record length does not match its fields")

    base_offsets = np.repeat(np.array([h.base_offset for h in batches], np.int64), counts)
    offsets = base_offsets + offset_delta
    log_append = np.repeat(np.array([h.timestamp_type for h in batches], np.int8), counts)
    base_ts = np.repeat(np.array([h.base_timestamp for h in batches], np.int64), counts)
    timestamps = base_ts + ts_delta
    if log_append.any():
        max_ts = np.repeat(np.array([h.max_timestamp for h in batches], np.int64), counts)
        timestamps = np.where(log_append == 1, max_ts, timestamps)

    keep = (offsets >= start) & (offsets < until)
    if not keep.all():
        selected = np.flatnonzero(keep)
        if selected.size == 0:
            return None
        offsets, timestamps, log_append = offsets[selected], timestamps[selected], log_append[selected]
        key_start, key_len = key_start[selected], key_len[selected]
        value_start, value_len = value_start[selected], value_len[selected]
        header_pos, record_end = header_pos[selected], record_end[selected]
        with_hdrs = np.flatnonzero(header_count[selected])
    headers = None
    if with_hdrs.size:
        decoded = {int(i): _headers(data, int(header_pos[i]), int(record_end[i])) for i in with_hdrs}
        if with_headers:
            headers = [decoded.get(i, []) for i in range(len(offsets))]
    elif with_headers:
        headers = [[] for _ in range(len(offsets))]
    data_buffer = pa.py_buffer(data)
    return RecordColumns(topic, partition, offsets, timestamps, log_append,
                         _binary(buf, data_buffer, key_start, key_len),
                         _binary(buf, data_buffer, value_start, value_len), headers)


def _binary(buf: np.ndarray, data_buffer: pa.Buffer, starts: np.ndarray,
            lengths: np.ndarray) -> pa.Array:
    """A binary array of ``buf[starts[i] : starts[i] + lengths[i]]`` (length -1: null)."""
    n = len(starts)
    valid = lengths >= 0
    null_count = int(n - np.count_nonzero(valid))
    if null_count == n:  # e.g. the keys of a topic written without keys
        return pa.nulls(n, pa.binary())
    lens = (np.where(valid, lengths, 0) if null_count else lengths).astype(np.int32)
    views = np.zeros((n, 16), np.uint8)
    words = views.view(np.int32)  # (n, 4): length | prefix or inline bytes ...
    words[:, 0] = lens
    is_long = lens > _INLINE
    if is_long.all():  # the common case: no row index needed
        for j in range(4):  # the 4-byte prefix (4 gathers beat one (n, 4) fancy index)
            views[:, 4 + j] = buf[starts + j]
        words[:, 3] = starts  # buffer index (column 2) stays 0
    else:
        long_ = np.flatnonzero(is_long)
        if long_.size:
            views[long_, 4:8] = buf[starts[long_, None] + np.arange(4)]
            words[long_, 3] = starts[long_]
        short = np.flatnonzero((lens > 0) & ~is_long)
        if short.size:
            inline = buf[starts[short, None] + np.arange(_INLINE)]
            inline[np.arange(_INLINE) >= lens[short, None]] = 0
            views[short, 4:16] = inline
    validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if null_count else None
    view_array = pa.Array.from_buffers(pa.binary_view(), n,
                                       [validity, pa.py_buffer(views), data_buffer], null_count)
    return view_array.cast(pa.binary())


def _headers(data: bytes, pos: int, end: int) -> list[tuple[str, bytes | None]]:
    count, pos = read_varint(data, pos)
    out: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        klen, pos = read_varint(data, pos)
        if klen < 0 or pos + klen > end:
            raise CorruptMessage("header key runs past the end of its record")
        key = data[pos : pos + klen].decode("utf-8")
        pos += klen
        vlen, pos = read_varint(data, pos)
        if vlen < -1 or pos + max(vlen, 0) > end:
            raise CorruptMessage("header value runs past the end of its record")
        out.append((key, None if vlen < 0 else data[pos : pos + vlen]))
        pos += max(vlen, 0)
    if pos != end:
        raise CorruptMessage("record length does not match its headers")
    return out
