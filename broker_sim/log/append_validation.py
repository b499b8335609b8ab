"""What a log accepts: the checks every appended batch passes before it reaches a segment.

A leader append (a produce request) must be whole magic-2 batches, each within
``max.message.bytes``, with a base offset of 0 and a record count matching its last offset
delta (the log assigns the offsets); a follower append (a fetch response from the leader)
keeps the leader's offsets and may end with a partial batch, which is dropped. Every batch
is CRC-checked; the whole append must fit one segment (``segment.bytes``). A compacted
log (``cleanup.policy`` with ``compact``) refuses records without a key, as Kafka does:
compaction keeps the latest record *per key*.
"""

from __future__ import annotations

from typing import Any

from ..protocol.errors import CorruptMessage, InvalidRecord, MessageTooLarge, RecordListTooLarge
from ..protocol.records.batch_header import MAGIC, BatchHeader, peek_batch_size, validate_batch
from ..protocol.records.reader import RecordIndex, records_section
from .config import LogConfig

_MAGIC_AT = 16


def validate_append(buf: Any, name: str, config: LogConfig, *,
                    leader: bool) -> tuple[list[tuple[int, BatchHeader]], int]:
    """Check every batch of ``buf``; return ``[(position, header)]`` and the bytes used.

    A leader append must be whole batches; a follower append may end with a partial
    batch (as a fetch response may), which is dropped.
    """
    n = len(buf)
    max_size = config.max_message_bytes
    batches: list[tuple[int, BatchHeader]] = []
    pos = 0
    while pos < n:
        size = peek_batch_size(buf, pos)
        if size is None or pos + size > n:
            if not leader:
                break
            raise CorruptMessage(
                f"append to {name}: the records end with a partial batch at byte {pos} of {n}"
            )
        if pos + _MAGIC_AT < n and buf[pos + _MAGIC_AT] != MAGIC:
            raise InvalidRecord(
                f"append to {name}: record batch magic {buf[pos + _MAGIC_AT]} is not "
                "supported: only magic version 2 record batches are accepted"
            )
        if leader and size > max_size:
            raise MessageTooLarge(
                f"append to {name}: record batch of {size} bytes is larger than the "
                f"maximum allowed {max_size} (max.message.bytes)"
            )
        header = validate_batch(buf, pos)
        if leader:
            if header.base_offset != 0:
                raise InvalidRecord(
                    f"append to {name}: the base offset of a produced record batch must be 0, "
                    f"not {header.base_offset}"
                )
            if header.records_count <= 0:
                raise InvalidRecord(f"append to {name}: record batch has no records")
            if header.records_count != header.last_offset_delta + 1:
                raise InvalidRecord(
                    f"append to {name}: record batch count {header.records_count} does not "
                    f"match its last offset delta {header.last_offset_delta}"
                )
            if config.compacts and not header.is_control \
                    and None in RecordIndex(records_section(buf, pos, header), header).keys:
                raise InvalidRecord(f"append to {name}: a compacted topic cannot accept a "
                                    "record without a key")
        batches.append((pos, header))
        pos += size
    if leader and not batches:
        raise InvalidRecord(f"append to {name}: produce request has no record batches")
    if pos > config.segment_bytes:
        raise RecordListTooLarge(
            f"append to {name}: {pos} bytes of record batches exceed the segment size "
            f"{config.segment_bytes} (segment.bytes)"
        )
    return batches, pos
