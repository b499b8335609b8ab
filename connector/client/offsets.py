"""ListOffsets: which offset a partition has at its start, its end, or a point in time.

The query per partition is a timestamp, with two reserved values::

    EARLIEST (-2)  the log start offset (moves up as retention deletes segments)
    LATEST   (-1)  the high watermark: the offset the next record will get, as far as
                   consumers can see
    t >= 0         the first offset whose record timestamp is >= t (offset -1 if none)

:func:`list_offsets` sends one request per leader and retries the partitions whose
leader moved (NOT_LEADER_OR_FOLLOWER and other retriable errors) after refreshing
metadata, until the deadline (:mod:`.leader_requests`). Used by the admin client and by
the fetcher (to report a partition's bounds on OFFSET_OUT_OF_RANGE).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from broker_sim.protocol.api import ApiKey

from .leader_requests import ask_leaders, by_topic
from .metadata import TopicPartition
from .sync_client import SyncClient

EARLIEST = -2
LATEST = -1


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int  # -1 unless the query was a timestamp and a record matched
    leader_epoch: int = -1


def list_offsets(sync: SyncClient, queries: Mapping[TopicPartition, int],
                 deadline_ms: float, read_committed: bool = False
                 ) -> dict[TopicPartition, OffsetAndTimestamp]:
    """``{tp: EARLIEST | LATEST | timestamp}`` -> ``{tp: OffsetAndTimestamp}``; with
    ``read_committed``, LATEST is the last stable offset (nothing past an open
    transaction), as a read_committed consumer sees the end."""

    def send(node: int, asked: dict[TopicPartition, int]) -> Any:
        body = {"replica_id": -1, "isolation_level": 1 if read_committed else 0,
                "topics": by_topic((tp, {"current_leader_epoch": -1, "timestamp": t})
                                   for tp, t in asked.items())}
        return sync.request(node, ApiKey.LIST_OFFSETS, body, deadline_ms)

    return ask_leaders(sync, "ListOffsets", queries, deadline_ms, send,
                       lambda p: OffsetAndTimestamp(p.offset, p.timestamp, p.leader_epoch),
                       lambda tp, _t: f"ListOffsets for {tp}")
