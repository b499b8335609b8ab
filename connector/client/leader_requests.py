"""A per-partition request sent to each partition's leader, retried until every partition
has its answer: what ListOffsets and DeleteRecords share.

:func:`ask_leaders` groups the partitions by leader and sends each leader one request for
its partitions. A partition answered with a retriable error (NOT_LEADER_OR_FOLLOWER after
a leader moved, a leader not yet elected), or whose request failed with a retriable error,
is asked again after the client's ``retry.backoff.ms`` with metadata refreshed, until the
deadline (KafkaTimeoutError naming the partitions left and the last error). A
non-retriable error raises at once, its message naming the partition.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from broker_sim.protocol.errors import KafkaError, error_for_code, is_retriable

from .errors import KafkaTimeoutError
from .metadata import TopicPartition
from .sync_client import SyncClient

log = logging.getLogger(__name__)

Q = TypeVar("Q")
R = TypeVar("R")


def ask_leaders(sync: SyncClient, name: str, queries: Mapping[TopicPartition, Q],
                deadline_ms: float,
                send: Callable[[int, dict[TopicPartition, Q]], Any],
                answer: Callable[[Any], R],
                what: Callable[[TopicPartition, Q | None], str]) -> dict[TopicPartition, R]:
    """``{tp: query}`` -> ``{tp: answer(partition response)}``.

    ``send(node, {tp: query})`` sends the leader's request and returns its response (whose
    ``topics[].partitions[]`` carry ``partition_index`` and ``error_code``); ``what(tp,
    query)`` says what was asked of a partition, for its error's message; ``name`` (the
    request's) is for the timeout's message and the log."""
    remaining = dict(queries)
    out: dict[TopicPartition, R] = {}
    last_error: KafkaError | None = None
    while remaining:
        by_leader: dict[int, dict[TopicPartition, Q]] = {}
        for tp, query in remaining.items():
            by_leader.setdefault(sync.leader_for(tp, deadline_ms), {})[tp] = query
        retry = False
        for node, asked in by_leader.items():
            try:
                response = send(node, asked)
            except KafkaTimeoutError:
                raise
            except Exception as e:
                if not is_retriable(e):
                    raise
                log.debug("%s to node %d failed, retrying: %s", name, node, e)
                retry = True
                continue
            for t in response.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.name, p.partition_index)
                    if p.error_code:
                        error = error_for_code(p.error_code)(what(tp, remaining.get(tp)))
                        if not error.retriable:
                            raise error
                        last_error = error
                        retry = True
                        continue
                    out[tp] = answer(p)
                    remaining.pop(tp, None)
        if remaining and retry:
            if sync.now() + sync.config.retry_backoff_ms >= deadline_ms:
                raise KafkaTimeoutError(f"{name} did not complete for {sorted(remaining)}"
                                        + (f" (last error: {last_error})" if last_error else ""))
            sync.refresh_metadata(sorted({tp.topic for tp in remaining}), deadline_ms)
            sync.client.poll(sync.config.retry_backoff_ms, sync.now())
        elif remaining:
            raise KafkaTimeoutError(f"no {name} result for {sorted(remaining)}")
    return out


def by_topic(partitions: Iterable[tuple[TopicPartition, dict[str, Any]]]
             ) -> list[dict[str, Any]]:
    """``[(tp, partition fields)]`` -> a request's ``topics`` list (one entry a topic)."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, fields in partitions:
        topics.setdefault(tp.topic, []).append({"partition_index": tp.partition, **fields})
    return [{"name": t, "partitions": ps} for t, ps in topics.items()]
