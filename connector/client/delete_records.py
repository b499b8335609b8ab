"""DeleteRecords: move partitions' log start offsets up (``kafka-delete-records.sh``).

Records before the offset given per partition become unreadable at once (ListOffsets
earliest answers the new start; a consumer positioned below it is out of range), and the
brokers delete the segments wholly below it. ``-1`` means the partition's high watermark:
everything written so far. The answer per partition is its new *low watermark*: the
smallest log start offset over its in-sync replicas, which the leader reports once they
all moved (or the error, e.g. OFFSET_OUT_OF_RANGE for an offset above the high watermark).

:func:`delete_records` groups the partitions by leader, sends one request per leader and
retries the partitions whose leader moved (NOT_LEADER_OR_FOLLOWER and other retriable
errors) after refreshing metadata, until the deadline.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import KafkaError, error_for_code, is_retriable

from .errors import KafkaTimeoutError
from .metadata import TopicPartition
from .sync_client import SyncClient

log = logging.getLogger(__name__)

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
    remaining = dict(offsets)
    out: dict[TopicPartition, int] = {}
    last_error: KafkaError | None = None
    while remaining:
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in remaining:
            by_leader.setdefault(sync.leader_for(tp, deadline_ms), []).append(tp)
        retry = False
        for node, tps in by_leader.items():
            topics: dict[str, list[dict[str, int]]] = {}
            for tp in tps:
                topics.setdefault(tp.topic, []).append(
                    {"partition_index": tp.partition, "offset": remaining[tp]})
            wait_ms = max(0, min(deadline_ms - sync.now() - _MARGIN_MS,
                                 sync.config.request_timeout_ms))
            body = {"topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                    "timeout_ms": int(wait_ms)}
            try:
                response = sync.request(node, ApiKey.DELETE_RECORDS, body, deadline_ms,
                                        timeout_ms=wait_ms + _MARGIN_MS)
            except KafkaTimeoutError:
                raise
            except Exception as e:
                if not is_retriable(e):
                    raise
                log.debug("DeleteRecords to node %d failed, retrying: %s", node, e)
                retry = True
                continue
            for t in response.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.name, p.partition_index)
                    if p.error_code:
                        error = error_for_code(p.error_code)(
                            f"DeleteRecords before offset {remaining.get(tp)} of {tp}")
                        if not error.retriable:
                            raise error
                        last_error = error
                        retry = True
                        continue
                    out[tp] = p.low_watermark
                    remaining.pop(tp, None)
        if remaining and retry:
            if sync.now() + sync.config.retry_backoff_ms >= deadline_ms:
                raise KafkaTimeoutError(f"DeleteRecords did not complete for {sorted(remaining)}"
                                        + (f" (last error: {last_error})" if last_error else ""))
            sync.refresh_metadata(sorted({tp.topic for tp in remaining}), deadline_ms)
            sync.client.poll(sync.config.retry_backoff_ms, sync.now())
        elif remaining:
            raise KafkaTimeoutError(f"no DeleteRecords result for {sorted(remaining)}")
    return out
