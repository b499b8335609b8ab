"""A consumer group's lag per partition: the partition's high watermark minus the offset
the group committed (the next one it will read), for every partition the group committed
or is assigned; unknown (None) without a committed offset or a leader.

A reader that keeps counters in its commit's metadata as a JSON object (the pyq Spark
source stores ``{"query": ..., "skipped": n, "lost": n, "retried": n, "dead_lettered": n}``)
gets them per partition as ``fields`` (:mod:`connector.client.commit_metadata`), which the
group page shows as columns: a pipeline's progress beside its lag.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connector.client import Admin, TopicPartition
from connector.client.commit_metadata import metadata_fields


def group_lag(admin: Admin, group: str, assigned: Mapping[TopicPartition, str] | None = None
              ) -> list[dict[str, Any]]:
    """Rows of topic, partition, committed, end, lag and member (the member id the
    partition is assigned to, from ``assigned``), in partition order."""
    return group_lags(admin, [group], {group: assigned or {}})[group]


def group_lags(admin: Admin, groups: list[str],
               assigned: Mapping[str, Mapping[TopicPartition, str]] | None = None
               ) -> dict[str, list[dict[str, Any]]]:
    """:func:`group_lag` of many groups: one OffsetFetch per coordinator (v8+ batches the
    groups), then one Metadata and one ListOffsets (per leader) for all their partitions
    together."""
    assigned = assigned or {}
    committed = admin.fetch_offsets_of_groups(groups)
    partitions = {g: sorted(set(committed[g]) | set(assigned.get(g, {}))) for g in groups}
    wanted = {tp for tps in partitions.values() for tp in tps}
    topics = sorted({tp.topic for tp in wanted})
    described = admin.describe_topics(topics) if topics else {}
    led = [tp for tp in (TopicPartition(p.topic, p.partition) for d in described.values()
                         for p in d.partitions if p.leader >= 0) if tp in wanted]
    ends = {tp: o.offset for tp, o in admin.list_offsets(dict.fromkeys(led, "latest")).items()} \
        if led else {}
    out: dict[str, list[dict[str, Any]]] = {}
    for g in groups:
        rows = out[g] = []
        owners = assigned.get(g, {})
        for tp in partitions[g]:
            om, end = committed[g].get(tp), ends.get(tp)
            offset = om.offset if om is not None else None
            rows.append({"topic": tp.topic, "partition": tp.partition, "committed": offset,
                         "end": end, "member": owners.get(tp),
                         "lag": end - offset if offset is not None and end is not None else None,
                         "fields": metadata_fields(om.metadata) if om is not None else {}})
    return out


def total(rows: list[dict[str, Any]]) -> int | None:
    """The sum of the known lags (None when none is known)."""
    known = [r["lag"] for r in rows if r["lag"] is not None]
    return sum(known) if known else None
