"""A consumer group's lag per partition: the partition's high watermark minus the offset
the group committed (the next one it will read), for every partition the group committed
or is assigned; unknown (None) without a committed offset or a leader."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connector.client import Admin, TopicPartition


def group_lag(admin: Admin, group: str, assigned: Mapping[TopicPartition, str] | None = None
              ) -> list[dict[str, Any]]:
    """Rows of topic, partition, committed, end, lag and member (the member id the
    partition is assigned to, from ``assigned``), in partition order."""
    assigned = assigned or {}
    committed = admin.fetch_offsets(group)
    partitions = sorted(set(committed) | set(assigned))
    topics = sorted({tp.topic for tp in partitions})
    described = admin.describe_topics(topics) if topics else {}
    wanted = set(partitions)
    led = [tp for tp in (TopicPartition(p.topic, p.partition) for d in described.values()
                         for p in d.partitions if p.leader >= 0) if tp in wanted]
    ends = {tp: o.offset for tp, o in admin.list_offsets(dict.fromkeys(led, "latest")).items()} \
        if led else {}
    rows = []
    for tp in partitions:
        om, end = committed.get(tp), ends.get(tp)
        offset = om.offset if om is not None else None
        rows.append({"topic": tp.topic, "partition": tp.partition, "committed": offset,
                     "end": end, "member": assigned.get(tp),
                     "lag": end - offset if offset is not None and end is not None else None})
    return rows
