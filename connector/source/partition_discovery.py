"""Which topic-partitions a query reads, their current bounds, and where it starts in each."""

from __future__ import annotations

import json
import re
from typing import Any

from broker_sim.common import TopicPartition

from .options import SourceOptions

EARLIEST, LATEST = -2, -1


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
        earliest = self.admin.list_offsets({tp: "earliest" for tp in tps})
        latest = self.admin.list_offsets({tp: "latest" for tp in tps}, read_committed=committed)
        return ({TopicPartition(*tp): v.offset for tp, v in earliest.items()},
                {TopicPartition(*tp): v.offset for tp, v in latest.items()})

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
        if by_ts:
            found = self.admin.list_offsets({tp: ts for tp, ts in by_ts.items()})
            for tp, v in found.items():
                key = TopicPartition(*tp)
                result[key] = v.offset if v.offset >= 0 else latest[key]
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
