"""ListOffsets: which offset a partition has at its start, its end, or a point in time.

The query per partition is a timestamp, with two reserved values::

    EARLIEST (-2)  the log start offset (moves up as retention deletes segments)
    LATEST   (-1)  the high watermark: the offset the next record will get, as far as
                   consumers can see
    t >= 0         the first offset whose record timestamp is >= t (offset -1 if none)

:func:`list_offsets` groups the partitions by leader, sends one request per leader and
retries the partitions whose leader moved (NOT_LEADER_OR_FOLLOWER and other
``invalid_metadata`` errors) after refreshing metadata, until the deadline. Used by the
admin client and by the fetcher (to report a partition's bounds on OFFSET_OUT_OF_RANGE).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import NamedTuple

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import error_for_code, is_retriable

from .errors import KafkaTimeoutError
from .metadata import TopicPartition
from .sync_client import SyncClient

log = logging.getLogger(__name__)

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
    remaining = dict(queries)
    out: dict[TopicPartition, OffsetAndTimestamp] = {}
    while remaining:
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in remaining:
            by_leader.setdefault(sync.leader_for(tp, deadline_ms), []).append(tp)
        retry = False
        for node, tps in by_leader.items():
            topics: dict[str, list[dict[str, int]]] = {}
            for tp in tps:
                topics.setdefault(tp.topic, []).append(
                    {"partition_index": tp.partition, "current_leader_epoch": -1,
                     "timestamp": remaining[tp]})
            body = {"replica_id": -1, "isolation_level": 1 if read_committed else 0,
                    "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
            try:
                response = sync.request(node, ApiKey.LIST_OFFSETS, body, deadline_ms)
            except KafkaTimeoutError:
                raise
            except Exception as e:
                if not is_retriable(e):
                    raise
                log.debug("ListOffsets to node %d failed, retrying: %s", node, e)
                retry = True
                continue
            for t in response.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.name, p.partition_index)
                    if p.error_code:
                        error = error_for_code(p.error_code)(f"ListOffsets for {tp}")
                        if not error.retriable:
                            raise error
                        retry = True
                        continue
                    out[tp] = OffsetAndTimestamp(p.offset, p.timestamp, p.leader_epoch)
                    remaining.pop(tp, None)
        if remaining and retry:
            if sync.now() + sync.config.retry_backoff_ms >= deadline_ms:
                raise KafkaTimeoutError(f"ListOffsets did not complete for {sorted(remaining)}")
            sync.refresh_metadata(sorted({tp.topic for tp in remaining}), deadline_ms)
            sync.client.poll(sync.config.retry_backoff_ms, sync.now())
        elif remaining:
            raise KafkaTimeoutError(f"no ListOffsets result for {sorted(remaining)}")
    return out
