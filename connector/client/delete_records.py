"""DeleteRecords: move partitions' log start offsets up (``kafka-delete-records.sh``).

Records before the offset given per partition become unreadable at once (ListOffsets
earliest answers the new start; a consumer positioned below it is out of range), and the
brokers delete the segments wholly below it. ``-1`` means the partition's high watermark:
everything written so far. The answer per partition is its new *low watermark*: the
smallest log start offset over its in-sync replicas, which the leader reports once they
all moved (or the error, e.g. OFFSET_OUT_OF_RANGE for an offset above the high watermark).

:func:`delete_records` sends one request per leader and retries the partitions whose
leader moved (NOT_LEADER_OR_FOLLOWER and other retriable errors) after refreshing
metadata, until the deadline (:mod:`.leader_requests`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from broker_sim.protocol.api import ApiKey

from .leader_requests import ask_leaders, by_topic
from .metadata import TopicPartition
from .sync_client import SyncClient

HIGH_WATERMARK = -1
#: time left for the answer to travel back after the brokers' own timeout
_MARGIN_MS = 1_000


def delete_records(sync: SyncClient, offsets: Mapping[TopicPartition, int],
                   deadline_ms: float) -> dict[TopicPartition, int]:
    """``{tp: offset}`` -> ``{tp: low watermark}``; raises the first non-retriable error
    (its message naming the partition), KafkaTimeoutError at the deadline."""
    for tp, offset in offsets.items():
        if offset < HIGH_WATERMARK:
            raise ValueError(f"DeleteRecords offset {offset} for {tp}: must be >= 0, or -1 "
                             f"(the high watermark)")

    def send(node: int, asked: dict[TopicPartition, int]) -> Any:
        wait_ms = max(0, min(deadline_ms - sync.now() - _MARGIN_MS,
                             sync.config.request_timeout_ms))
        body = {"topics": by_topic((tp, {"offset": o}) for tp, o in asked.items()),
                "timeout_ms": int(wait_ms)}
        return sync.request(node, ApiKey.DELETE_RECORDS, body, deadline_ms,
                            timeout_ms=wait_ms + _MARGIN_MS)

    return ask_leaders(sync, "DeleteRecords", offsets, deadline_ms, send,
                       lambda p: int(p.low_watermark),
                       lambda tp, o: f"DeleteRecords before offset {o} of {tp}")
