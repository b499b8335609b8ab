"""Arrow columns -> Kafka records, without a Python object per row.

The sink receives ``pyarrow.RecordBatch``es from Spark. Per batch it chooses each row's
partition with array arithmetic (an explicit ``partition`` column; else Kafka's
murmur2 of the key, vectorized here bit for bit as the Java client computes it; else
round robin over the task's row index, so a replayed task chooses the same partitions),
then encodes each partition's rows as the *records section* of a RecordBatch v2: for
row ``i``::

    length | attributes 0 | timestampDelta 0 | offsetDelta i | keyLength | key |
    valueLength | value | headerCount

with every varint computed for all rows at once (:func:`encode_records`). Rows with
headers go through :class:`RecordBatchBuilder` one by one (headers are rare and nested).
:func:`build_batch` adds the 61-byte header and the CRC-32C; :func:`encode_batch` does both
at once without copying the records section twice.

>>> import pyarrow as pa
>>> records = encode_records(pa.array([None, b"k"]), pa.array([b"v", b"w"]))
>>> records.hex(" ")
'0e 00 00 00 01 02 76 00 10 00 00 02 02 6b 02 77 00'
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from broker_sim.protocol.records.batch_header import (
    _HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    TRANSACTIONAL_MASK,
    seal_crc,
)
from broker_sim.protocol.records.compression import NONE, compress
from connector.client.partitioner import murmur2

_M = np.uint32(0x5BD1E995)
_SEED = np.uint32(0x9747B28C)

#: Keys longer than this are hashed by the scalar murmur2 (the vectorized one pads to it).
VECTOR_KEY_BYTES = 256


def binary_parts(array: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets int64 [n+1], data uint8, valid bool [n]) of a binary or string array."""
    # string and binary share one layout: read the buffers as they are (a cast would copy).
    otype = np.int64 if pa.types.is_large_binary(array.type) or pa.types.is_large_string(array.type) \
        else np.int32
    n = len(array)
    bufs = array.buffers()
    offsets = np.frombuffer(bufs[1], otype, n + 1, array.offset * np.dtype(otype).itemsize).astype(np.int64)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    valid = (np.ones(n, bool) if array.null_count == 0
             else np.asarray(array.is_valid().to_numpy(zero_copy_only=False), bool))
    return offsets, data, valid


_VARINT_LIMITS = np.array([(1 << (7 * k)) - 1 for k in range(1, 10)], np.uint64)


def _varint_size(z: np.ndarray) -> np.ndarray:
    """Bytes of the unsigned varint of each ``z``: 1 + how many 7-bit limits it exceeds."""
    return np.searchsorted(_VARINT_LIMITS, z, side="left").astype(np.int64) + 1


def _put_varints(out: np.ndarray, pos: np.ndarray, z: np.ndarray) -> None:
    """Write unsigned varints ``z`` (already zig-zagged) at byte positions ``pos``."""
    while len(z):
        more = z >= 0x80
        out[pos] = ((z & np.uint64(0x7F)) | (more.astype(np.uint64) << np.uint64(7))).astype(np.uint8)
        pos, z = pos[more] + 1, z[more] >> np.uint64(7)


def _scatter(out: np.ndarray, dest: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
             data: np.ndarray) -> None:
    """Copy ``data[starts[i]:starts[i] + lengths[i]]`` to ``out[dest[i]:]`` for every i."""
    total = int(lengths.sum())
    if total == 0:
        return
    before = np.cumsum(lengths) - lengths
    ramp = np.arange(total, dtype=np.int64)
    target = ramp + np.repeat(dest - before, lengths)
    if np.array_equal(starts[1:], starts[:-1] + lengths[:-1]):  # contiguous: one slice
        out[target] = data[starts[0]:starts[0] + total]
    else:
        out[target] = data[ramp + np.repeat(starts - before, lengths)]


def _zigzag(lengths: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Zig-zag of a length, or of -1 for a null."""
    return np.where(valid, lengths * 2, 1).astype(np.uint64)


def _varint_array(parts: list[tuple[np.ndarray | None, np.ndarray | None]], n: int) -> pa.Array:
    """A binary array whose row ``i`` is the concatenation, for each ``(z, size)`` part, of
    the varint ``z[i]`` (``size`` its byte count; ``size`` None: one zero byte)."""
    sizes = [np.ones(n, np.int64) if size is None else size for _, size in parts]
    width = np.zeros(n, np.int64)
    for size in sizes:
        width += size
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(width, out=offsets[1:])
    out = np.zeros(int(offsets[-1]), np.uint8)
    pos = offsets[:-1].astype(np.int64)
    for (z, _size), size in zip(parts, sizes, strict=True):
        if z is not None:
            _put_varints(out, pos, z)
        pos = pos + size
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(out)])


def _as_binary(array: pa.Array) -> pa.Array:
    """The same bytes typed binary (a zero-copy view of a string array)."""
    return array.view(pa.binary()) if pa.types.is_string(array.type) else array


def encode_records(keys: pa.Array | None, values: pa.Array) -> bytes:
    """The records section for ``values`` (and ``keys``; None: all keys null), in order."""
    return b"".join((_joined_records(keys, values), b"\x00")) if len(values) else b""


def _joined_records(keys: pa.Array | None, values: pa.Array) -> pa.Buffer:
    """The records section but for its very last byte (0, the last record's header count),
    as a slice of the Arrow buffer the join wrote (no copy).

    Each record is ``prefix + key + valueLength + value + 0`` (the 0: no headers): the varints
    are computed for all rows at once, and Arrow's C++ kernel joins the columns row by row.
    Each record's closing 0 is written as the first byte of the next row's prefix (one
    column less to join); the caller adds the last one.
    """
    n = len(values)
    voff, _, vvalid = binary_parts(values)
    vlen = np.diff(voff) * vvalid
    if keys is None:
        klen, kvalid = np.zeros(n, np.int64), np.zeros(n, bool)
        keys = pa.nulls(n, pa.binary())
    else:
        koff, _, kvalid = binary_parts(keys)
        klen = np.diff(koff) * kvalid
    od = np.arange(n, dtype=np.uint64) * np.uint64(2)
    kz, vz = _zigzag(klen, kvalid), _zigzag(vlen, vvalid)
    od_size, kz_size, vz_size = _varint_size(od), _varint_size(kz), _varint_size(vz)
    body = 3 + od_size + kz_size + klen + vz_size + vlen  # +3: attributes, ts delta, header count
    body_z = body.astype(np.uint64) * np.uint64(2)
    closing = np.ones(n, np.int64)  # the previous record's header count (none for row 0)
    closing[:1] = 0
    prefix = _varint_array([(None, closing), (body_z, _varint_size(body_z)), (None, None),
                            (None, None), (od, od_size), (kz, kz_size)], n)
    middle = _varint_array([(vz, vz_size)], n)
    joined = pc.binary_join_element_wise(prefix, _as_binary(keys), middle, _as_binary(values),
                                         _repeat(b"", n), null_handling="replace")  # separator
    bufs = joined.buffers()
    offsets = np.frombuffer(bufs[1], np.int32, n + 1, joined.offset * 4)
    return bufs[2].slice(int(offsets[0]), int(offsets[-1] - offsets[0]))


def _repeat(value: bytes, n: int) -> pa.Array:
    """``value`` n times, built from buffers (``pa.scalar``/``pa.array`` on Python objects
    would import pandas, half a second in every fresh Spark worker)."""
    offsets = np.arange(n + 1, dtype=np.int32) * len(value)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets),
                                                  pa.py_buffer(value * n)])


def indices(positions: np.ndarray) -> pa.Array:
    """An int64 Arrow array of row positions (for ``take``), without pandas."""
    positions = np.ascontiguousarray(positions, np.int64)
    return pa.Array.from_buffers(pa.int64(), len(positions), [None, pa.py_buffer(positions)])


def murmur2_partitions(keys: pa.Array, num_partitions: int) -> np.ndarray:
    """Kafka's default partition of each (non-null) key: toPositive(murmur2(key)) % n."""
    offsets, data, valid = binary_parts(keys)
    lengths = np.diff(offsets)
    n = len(keys)
    if n == 0:
        return np.zeros(0, np.int64)
    if int(lengths.max(initial=0)) > VECTOR_KEY_BYTES:
        return np.array([murmur2(bytes(data[offsets[i]:offsets[i + 1]])) & 0x7FFFFFFF
                         for i in range(n)], np.int64) % num_partitions
    width = max(4, -(-int(lengths.max(initial=0)) // 4) * 4)
    padded = np.zeros(n * width, np.uint8)
    _scatter(padded, np.arange(n, dtype=np.int64) * width, offsets[:-1], lengths * valid, data)
    words = padded.view("<u4").reshape(n, width // 4).astype(np.uint32)
    rows = padded.reshape(n, width)
    h = _SEED ^ lengths.astype(np.uint32)
    full = lengths // 4
    with np.errstate(over="ignore"):
        for c in range(width // 4):
            k = words[:, c] * _M
            k ^= k >> np.uint32(24)
            k *= _M
            h = np.where(full > c, (h * _M) ^ k, h)
        extra = lengths & 3
        base = full * 4
        idx = np.arange(n)
        b0 = rows[idx, np.minimum(base, width - 1)].astype(np.uint32)
        b1 = rows[idx, np.minimum(base + 1, width - 1)].astype(np.uint32)
        b2 = rows[idx, np.minimum(base + 2, width - 1)].astype(np.uint32)
        h = np.where(extra == 3, h ^ (b2 << np.uint32(16)), h)
        h = np.where(extra >= 2, h ^ (b1 << np.uint32(8)), h)
        h = np.where(extra >= 1, (h ^ b0) * _M, h)
        h ^= h >> np.uint32(13)
        h *= _M
        h ^= h >> np.uint32(15)
    return (h & np.uint32(0x7FFFFFFF)).astype(np.int64) % num_partitions


def build_batch(records: bytes, count: int, timestamp_ms: int, producer_id: int, producer_epoch: int,
                base_sequence: int, compression: int = NONE, transactional: bool = False) -> bytes:
    """A complete RecordBatch v2 around an encoded records section (one timestamp)."""
    attributes = TRANSACTIONAL_MASK if transactional else 0
    if compression != NONE:
        attributes |= compression
        records = compress(compression, records)
    header = _header(len(records), attributes, count, timestamp_ms, producer_id, producer_epoch,
                     base_sequence)
    seal_crc(header, records)
    return bytes(header) + records


def encode_batch(keys: pa.Array | None, values: pa.Array, timestamp_ms: int, producer_id: int,
                 producer_epoch: int, base_sequence: int, transactional: bool = False) -> bytearray:
    """``build_batch(encode_records(keys, values), ...)`` uncompressed, in one copy: the
    CRC runs over the joined records where Arrow wrote them, and header and records are
    copied once into the batch."""
    records = _joined_records(keys, values)
    size = len(records) + 1  # + the last record's header count
    header = _header(size, TRANSACTIONAL_MASK if transactional else 0, len(values), timestamp_ms,
                     producer_id, producer_epoch, base_sequence)
    seal_crc(header, records, b"\x00")
    batch = bytearray(HEADER_SIZE + size)
    batch[:HEADER_SIZE] = header
    batch[HEADER_SIZE:-1] = records
    return batch


def _header(records_size: int, attributes: int, count: int, timestamp_ms: int, producer_id: int,
            producer_epoch: int, base_sequence: int) -> bytearray:
    """The 61 header bytes of a batch (CRC still 0)."""
    header = bytearray(HEADER_SIZE)
    _HEADER.pack_into(header, 0, 0, HEADER_SIZE - LOG_OVERHEAD + records_size, -1, MAGIC, 0,
                      attributes, count - 1, timestamp_ms, timestamp_ms, producer_id,
                      producer_epoch, base_sequence, count)
    return header
