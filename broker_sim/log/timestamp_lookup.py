"""ListOffsets by timestamp over a log's segments (there is no time index).

Segments whose largest timestamp is below the target are skipped (each segment's largest
timestamp is computed once, by a scan of its batch headers, then maintained by appends);
the first candidate segment is scanned batch header by batch header to the first batch
with ``max_timestamp >= timestamp``, and that one batch is decoded (decompressed if need
be) to find the exact record. If the batch cannot be decoded, its base offset is the
answer (imprecise like Kafka's older index-granularity answers, but never past the record).

Pure reads of one :class:`~.log_view.LogView`: they raise SegmentGone/SegmentChanged when
a truncation or deletion races them, and the log retries on a fresh view.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..protocol.errors import KafkaError, MalformedFrame, UnsupportedVersion
from ..protocol.primitives import read_varint
from ..protocol.records.batch_header import HEADER_SIZE, BatchHeader
from ..protocol.records.compression import decompress
from .log_view import LogView
from .segment import LogSegment

# Special timestamps of ListOffsets.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3


def find_offset_for_timestamp(view: LogView, leo: int, timestamp: int,
                              max_offset: int | None) -> tuple[int, int] | None:
    """``(offset, timestamp)`` for ListOffsets; see :meth:`Log.offset_for_timestamp`."""
    log_start = view.log_start_offset
    if timestamp == EARLIEST_TIMESTAMP:
        return log_start, -1
    if timestamp == LATEST_TIMESTAMP:
        return (leo if max_offset is None else min(leo, max_offset)), -1
    if timestamp == MAX_TIMESTAMP:
        return max_timestamp_offset(view, max_offset)
    if timestamp < 0:
        raise UnsupportedVersion(f"unsupported ListOffsets timestamp {timestamp}")
    for seg in view.segments:
        if seg.next_offset <= log_start and seg is not view.segments[-1]:
            continue
        if seg.max_timestamp < timestamp:
            continue
        found = seg.find_timestamp(timestamp, max_offset, log_start)
        if found is None:
            if max_offset is not None and seg.next_offset >= max_offset:
                return None
            continue
        pos, header = found
        batch = seg.read_at(pos, header.size)
        return locate_record(batch, header, timestamp, log_start)
    return None


def max_timestamp_offset(view: LogView, max_offset: int | None) -> tuple[int, int] | None:
    best: LogSegment | None = None
    for seg in view.segments:
        if best is None or seg.max_timestamp > best.max_timestamp:
            best = seg
    if best is None or best.max_timestamp < 0:
        return None
    header_pos = best.max_timestamp_position
    raw = best.read_at(header_pos, HEADER_SIZE)
    header = BatchHeader.parse(raw)
    if max_offset is not None and header.last_offset >= max_offset:
        return None
    batch = best.read_at(header_pos, header.size)
    return locate_record(batch, header, header.max_timestamp, view.log_start_offset)


def locate_record(batch: bytes, header: BatchHeader, timestamp: int, min_offset: int) -> tuple[int, int]:
    """``(offset, timestamp)`` of the first record of ``batch`` with timestamp >= ``timestamp``
    and offset >= ``min_offset``; the batch's ``(base offset, max timestamp)`` if undecodable."""
    fallback = (max(header.base_offset, min_offset), header.max_timestamp)
    if header.timestamp_type == 1:  # LogAppendTime: every record has the batch's max timestamp
        return fallback
    try:
        records: Sequence[int] = decompress(header.compression, memoryview(batch)[HEADER_SIZE:])
        p = 0
        for _ in range(header.records_count):
            length, p = read_varint(records, p)
            end = p + length
            _ts_delta, q = read_varint(records, p + 1)  # skip the attributes byte
            offset_delta, _ = read_varint(records, q)
            ts = header.base_timestamp + _ts_delta
            offset = header.base_offset + offset_delta
            if ts >= timestamp and offset >= min_offset:
                return offset, ts
            p = end
    except (KafkaError, MalformedFrame, IndexError):
        pass
    return fallback
