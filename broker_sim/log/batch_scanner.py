"""The one walk over record batches laid end to end, in a file or in memory.

Everything in the log that must find batch boundaries — the offset lookups of a read, the
end of a range of whole batches, the timestamps of a segment, the producer state of the
last segments, the recovery of a segment after a crash — walks with :func:`scan`; an
append walks the produced buffer with :func:`appended_batches`, the same index rule. It reads
in large chunks (one ``pread`` per 64 KiB, not one per batch), decodes only the fixed
batch header, and stops quietly at the first batch that is incomplete or impossibly
short: bytes after it are a torn write that only recovery may cut.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from typing import NamedTuple

from ..protocol.errors import CorruptMessage
from ..protocol.records.batch_header import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, validate_batch

# base_offset, batch_length, leader_epoch, magic, crc, attributes, last_offset_delta
_PREFIX = struct.Struct(">qiibIhi")
PREFIX_SIZE = _PREFIX.size  # 27: enough of the header to know a batch's offsets and size
_LENGTH = struct.Struct(">i")  # batch_length, at byte 8
_APPEND_FIELDS = struct.Struct(">qi23xq")  # base_offset, batch_length, max_timestamp (at 35)
CHUNK = 64 * 1024
INT32_MAX = 2**31 - 1

Reader = Callable[[int, int], "bytes | memoryview"]
"""``read(position, size)``: up to ``size`` bytes from ``position``."""


def file_reader(fd: int) -> Reader:
    return lambda position, size: os.pread(fd, size, position)


def memory_reader(data: bytes | bytearray | memoryview) -> Reader:
    view = memoryview(data)
    return lambda position, size: view[position:position + size]


def scan(read: Reader, start: int, limit: int, need: int = PREFIX_SIZE, chunk_size: int = CHUNK,
         whole: bool = False) -> Iterator[tuple[int, bytes | memoryview, int, int]]:
    """Yield ``(position, chunk, offset in chunk, size)`` for each batch in ``[start, limit)``.

    ``start`` must be a batch boundary. The chunk holds at least ``need`` bytes of the
    batch from ``offset`` on — the whole batch when ``whole`` (for recovery, which checks
    CRCs). Stops at a batch running past ``limit`` or shorter than a header.
    """
    pos = start
    chunk: bytes | memoryview = b""
    chunk_start = start
    need = max(need, LOG_OVERHEAD)
    while pos + need <= limit:
        off = pos - chunk_start
        if off + need > len(chunk):
            chunk = read(pos, min(chunk_size, limit - pos))
            chunk_start, off = pos, 0
            if len(chunk) < need:
                return
        size = _LENGTH.unpack_from(chunk, off + 8)[0] + LOG_OVERHEAD
        if size < HEADER_SIZE or pos + size > limit:
            return
        if whole and off + size > len(chunk):
            chunk = read(pos, min(max(chunk_size, size), limit - pos))
            chunk_start, off = pos, 0
            if len(chunk) < size:
                return
        yield pos, chunk, off, size
        pos += size


def batch_extents(read: Reader, start: int, limit: int,
                  chunk_size: int = CHUNK) -> Iterator[tuple[int, int, int, int]]:
    """``(position, base_offset, last_offset, size)`` of each whole batch in ``[start, limit)``."""
    unpack = _PREFIX.unpack_from
    for pos, chunk, off, size in scan(read, start, limit, PREFIX_SIZE, chunk_size):
        base, _length, _epoch, _magic, _crc, _attrs, delta = unpack(chunk, off)
        if delta < 0:
            return
        yield pos, base, base + delta, size


def batch_headers(read: Reader, start: int, limit: int) -> Iterator[tuple[int, BatchHeader]]:
    """``(position, BatchHeader)`` of each whole batch in ``[start, limit)`` (no CRC check)."""
    for pos, chunk, off, _size in scan(read, start, limit, HEADER_SIZE):
        yield pos, BatchHeader.parse(chunk, off)


def whole_batches(data: bytes, start: int = 0) -> bytes:
    """The longest prefix of ``data`` made of whole batches, walking from ``start``.

    ``start`` must be a batch boundary with only whole batches before it.
    """
    end = start
    for pos, _chunk, _off, size in scan(memory_reader(data), start, len(data), LOG_OVERHEAD,
                                         chunk_size=len(data) or 1):
        end = pos + size
    return data if end == len(data) else data[:end]


class ValidPrefix(NamedTuple):
    """What recovery keeps of a segment file: its batches up to the first bad one."""

    end: int  # the end of the last good batch: everything after it is cut
    next_offset: int  # the last good batch's last offset + 1 (the base offset if none)
    max_timestamp: int  # -1 if no batch
    max_timestamp_position: int  # of the first batch carrying it, -1 if none
    bytes_since_index: int  # bytes after the last index entry
    index_entries: list[tuple[int, int]]  # (offset, position), one per index interval


def valid_prefix(read: Reader, size: int, base_offset: int, index_interval: int) -> ValidPrefix:
    """Validate the batches of a segment from position 0 on, as recovery after a crash
    does: each batch's length, magic and CRC-32C (``validate_batch``), offsets that
    increase and fit the segment (at most ``base_offset + 2**31 - 1``). Stops at the first
    batch that fails, and says where the index entries go (one after each
    ``index_interval`` bytes, as appends place them)."""
    end, nxt, since = 0, base_offset, 0
    max_ts, max_ts_pos = -1, -1
    entries: list[tuple[int, int]] = []
    for pos, chunk, off, batch_size in scan(read, 0, size, whole=True):
        try:
            header = validate_batch(chunk, off)
        except CorruptMessage:
            break
        if header.base_offset < nxt or header.last_offset - base_offset > INT32_MAX:
            break
        if since > index_interval:
            entries.append((header.base_offset, pos))
            since = 0
        since += batch_size
        if header.max_timestamp > max_ts:
            max_ts, max_ts_pos = header.max_timestamp, pos
        nxt = header.next_offset
        end = pos + batch_size
    return ValidPrefix(end, nxt, max_ts, max_ts_pos, since, entries)


def largest_timestamp(read: Reader, limit: int) -> tuple[int, int]:
    """``(max timestamp, position of the first batch carrying it)`` over the batches of
    ``[0, limit)``, ``(-1, -1)`` when there is none."""
    best, best_pos = -1, -1
    for pos, header in batch_headers(read, 0, limit):
        if header.max_timestamp > best:
            best, best_pos = header.max_timestamp, pos
    return best, best_pos


def first_batch_at_timestamp(read: Reader, start: int, limit: int, timestamp: int,
                             min_offset: int, max_offset: int | None
                             ) -> tuple[int, BatchHeader] | None:
    """``(position, header)`` of the first batch from ``start`` with ``max_timestamp >=
    timestamp`` that ends at or after ``min_offset``; None when the first batch that ends
    at or after ``max_offset`` comes before it, or there is none."""
    for pos, header in batch_headers(read, start, limit):
        if max_offset is not None and header.last_offset >= max_offset:
            return None
        if header.max_timestamp >= timestamp and header.last_offset >= min_offset:
            return pos, header
    return None


class Appended(NamedTuple):
    """What an append adds to a segment's bookkeeping (what :class:`ValidPrefix` rebuilds)."""

    index_entries: list[tuple[int, int]]  # (offset, position), one per index interval
    bytes_since_index: int  # bytes after the last index entry
    max_timestamp: int
    max_timestamp_position: int  # of the first batch carrying it
    first_batch_timestamp: int | None  # the first batch's, when the buffer starts the file


def appended_batches(buf: bytes | bytearray | memoryview, start: int, index_interval: int,
                     bytes_since_index: int, max_timestamp: int,
                     max_timestamp_position: int) -> Appended:
    """Walk the batches of ``buf``, about to be written at file position ``start`` after
    ``bytes_since_index`` bytes without an index entry: where index entries go (the rule of
    :func:`valid_prefix`) and the segment's new largest timestamp. Reads three header
    fields per batch (no CRC check); raises CorruptMessage when ``buf`` does not end on a
    batch boundary."""
    n = len(buf)
    entries: list[tuple[int, int]] = []
    since, max_ts, max_ts_pos = bytes_since_index, max_timestamp, max_timestamp_position
    first_ts: int | None = None
    pos = 0
    unpack = _APPEND_FIELDS.unpack_from
    while pos < n:
        base, length, ts = unpack(buf, pos)
        size = length + LOG_OVERHEAD
        if since > index_interval:
            entries.append((base, start + pos))
            since = 0
        since += size
        if ts > max_ts:
            max_ts, max_ts_pos = ts, start + pos
        if start + pos == 0:
            first_ts = ts
        pos += size
    if pos != n:
        raise CorruptMessage("appended bytes do not end on a batch boundary")
    return Appended(entries, since, max_ts, max_ts_pos, first_ts)


def first_batch_timestamp(read: Reader) -> int:
    """The max timestamp of the batch at position 0, -1 if there is none."""
    first = read(0, _APPEND_FIELDS.size)
    return _APPEND_FIELDS.unpack_from(first)[2] if len(first) == _APPEND_FIELDS.size else -1
