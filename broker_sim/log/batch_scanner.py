"""The one walk over record batches laid end to end, in a file or in memory.

Everything in the log that must find batch boundaries — the offset lookups of a read, the
end of a range of whole batches, the timestamps of a segment, the producer state of the
last segments, the recovery of a segment after a crash — walks with :func:`scan`. It reads
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
