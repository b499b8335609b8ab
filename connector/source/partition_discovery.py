"""Which topic-partitions a query reads, their current bounds, and where it starts in each."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

from broker_sim.common import TopicPartition
from broker_sim.protocol.errors import PyqError, is_retriable

from .options import SourceOptions

EARLIEST, LATEST = -2, -1
T = TypeVar("T")
log = logging.getLogger(__name__)


def with_retries(lookup: Callable[[], T], retries: int, interval_ms: int,
                 sleep: Callable[[float], None] = time.sleep) -> T:
    """``fetchOffset.numRetries`` / ``fetchOffset.retryIntervalMs``: run an offset lookup,
    and after a retriable failure (the client already retried within its own timeout) run
    it again up to ``retries`` more times, ``interval_ms`` apart; then the last error is raised.

    >>> from broker_sim.protocol.errors import NotLeaderOrFollower
    >>> calls = []
    >>> def flaky():
    ...     calls.append(1)
    ...     if len(calls) < 3:
    ...         raise NotLeaderOrFollower("leader moving")
    ...     return "offsets"
    >>> with_retries(flaky, retries=3, interval_ms=0), len(calls)
    ('offsets', 3)
    >>> calls.clear()
    >>> with_retries(flaky, retries=1, interval_ms=0)
    Traceback (most recent call last):
    ...
    broker_sim.protocol.errors.NotLeaderOrFollower: leader moving
    """
    attempt = 0
    while True:
        try:
            return lookup()
        except PyqError as e:
            if attempt >= retries or not is_retriable(e):
                raise
            attempt += 1
            log.warning("offset lookup failed (%s); attempt %d of %d in %d ms (if it keeps "
                        "failing, check that the brokers are up and reachable; "
                        "fetchOffset.numRetries and fetchOffset.retryIntervalMs set how long "
                        "this retries)", e, attempt + 1, retries + 1, interval_ms)
            sleep(interval_ms / 1000)


class NoOffsetForTimestamp(PyqError, ValueError):
    """startingOffsetsByTimestampStrategy=error and a partition has no record at or after
    the starting timestamp (Spark's message, with the option that changes it)."""


class PartitionDiscovery:
    """Answers, from the cluster, the questions the driver asks about partitions.

    ``subscribe`` names topics, ``subscribePattern`` matches them (never pyq's own
    ``.pyq-failures`` topics), ``assign`` lists partitions; :meth:`topic_partitions` is
    asked again at every batch, so partitions added to a topic are picked up.
    :meth:`initial_offsets` resolves ``startingOffsets`` (``earliest``, ``latest``, JSON
    per partition, ``committed`` with a groupId) and the by-timestamp variants.

    Threading: the driver's thread only (it shares the driver's admin client).
    """

    def __init__(self, admin: Any, options: SourceOptions) -> None:
        self.admin = admin
        self.options = options

    def topic_partitions(self) -> list[TopicPartition]:
        o = self.options
        if o.assign is not None:
            return sorted(TopicPartition(t, p) for t, ps in o.assign.items() for p in ps)
        if o.subscribe:
            names = list(o.subscribe)
        else:
            pattern = re.compile(o.subscribe_pattern or "")
            names = sorted(t for t in self.admin.list_topics() if pattern.fullmatch(t)
                           and not t.endswith(".pyq-failures"))
        if not names:
            return []
        described = self.admin.describe_topics(names)
        return sorted(TopicPartition(t, p.partition) for t, d in described.items() for p in d.partitions)

    def bounds(self, tps: list[TopicPartition]) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        """(earliest, latest) offsets: latest is the high watermark, or with
        ``kafka.isolation.level=read_committed`` the last stable offset (batches never
        wait on an open transaction; its aborted records and the markers are skipped
        offsets, as a compacted topic's gaps are)."""
        if not tps:
            return {}, {}
        committed = self.options.read_committed
        earliest = self._list_offsets({tp: "earliest" for tp in tps})
        latest = self._list_offsets({tp: "latest" for tp in tps}, read_committed=committed)
        return ({TopicPartition(*tp): v.offset for tp, v in earliest.items()},
                {TopicPartition(*tp): v.offset for tp, v in latest.items()})

    def _list_offsets(self, queries: dict[TopicPartition, Any], read_committed: bool = False) -> Any:
        o = self.options
        return with_retries(lambda: self.admin.list_offsets(queries, read_committed=read_committed),
                            o.fetch_offset_num_retries, o.fetch_offset_retry_interval_ms)

    def by_timestamp(self, timestamps: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """The first offset with a timestamp at or after each one; -1 where there is none."""
        if not timestamps:
            return {}
        found = self._list_offsets(dict(timestamps))
        return {TopicPartition(*tp): v.offset for tp, v in found.items()}

    def ending_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        """A batch read's end per partition: ``endingTimestamp``, else
        ``endingOffsetsByTimestamp``, else ``endingOffsets`` (-1 and partitions not named:
        the latest offset). A timestamp no record reaches means the latest offset (Spark)."""
        o = self.options
        _, latest = self.bounds(tps)
        by_ts: dict[TopicPartition, int] = {}
        if o.ending_timestamp is not None:
            by_ts = {tp: o.ending_timestamp for tp in tps}
        elif o.ending_by_timestamp is not None:
            by_ts = {TopicPartition(t, p): ts for t, ps in o.ending_by_timestamp.items()
                     for p, ts in ps.items()}
            by_ts = {tp: ts for tp, ts in by_ts.items() if tp in latest}
        found = self.by_timestamp(by_ts)
        end: dict[TopicPartition, int] = {}
        for tp in tps:
            if tp in found:
                end[tp] = found[tp] if found[tp] >= 0 else latest[tp]
            elif isinstance(o.ending, dict):
                value = o.ending.get(tp.topic, {}).get(tp.partition, LATEST)
                end[tp] = latest[tp] if value == LATEST else value
            else:
                end[tp] = latest[tp]
        return end

    def initial_offsets(self, query_name: str) -> dict[TopicPartition, int]:
        o = self.options
        tps = self.topic_partitions()
        earliest, latest = self.bounds(tps)
        result: dict[TopicPartition, int] = {}
        by_ts: dict[TopicPartition, int] = {}
        if o.starting_timestamp is not None:
            by_ts = {tp: o.starting_timestamp for tp in tps}
        elif o.starting_by_timestamp is not None:
            by_ts = {TopicPartition(t, p): ts for t, ps in o.starting_by_timestamp.items() for p, ts in ps.items()}
        for tp, offset in self.by_timestamp(by_ts).items():
            if offset >= 0:
                result[tp] = offset
            elif o.starting_by_timestamp_strategy == "latest":
                result[tp] = latest[tp]
            else:
                raise NoOffsetForTimestamp(
                    f"No offset matched from request of topic-partition {tp.topic}-{tp.partition} "
                    f"and timestamp {by_ts[tp]}: no record has a timestamp at or after it. "
                    f"Set startingOffsetsByTimestampStrategy=latest to start such a partition at "
                    f"its latest offset ({latest.get(tp)}) instead")
        committed = self.committed(tps, query_name) if o.starting == "committed" else {}
        for tp in tps:
            if tp in result:
                continue
            if isinstance(o.starting, dict):
                value = o.starting.get(tp.topic, {}).get(tp.partition, EARLIEST)
                result[tp] = earliest[tp] if value == EARLIEST else latest[tp] if value == LATEST else value
            elif o.starting == "committed":
                result[tp] = committed.get(tp, earliest[tp])
            else:
                result[tp] = earliest[tp] if o.starting == "earliest" else latest[tp]
        return result

    def committed(self, tps: list[TopicPartition], query_name: str) -> dict[TopicPartition, int]:
        """The group's committed offsets; refuses metadata naming another query."""
        out: dict[TopicPartition, int] = {}
        group = self.options.group_id
        if group is None:  # options refuse startingOffsets=committed without one
            return out
        for tp, om in self.admin.fetch_offsets(group, tps).items():
            key = TopicPartition(*tp)
            try:
                query = json.loads(om.metadata).get("query") if om.metadata else None
            except (ValueError, AttributeError):
                query = None
            if query is not None and query != query_name:
                raise ValueError(
                    f"group {group!r} has offsets for {key.topic}-{key.partition} "
                    f"committed by query {query!r}, not {query_name!r}; set queryName to "
                    f"{query!r} to resume it, or use another groupId")
            out[key] = om.offset
        return out
