"""Partition assignors of the consumer protocol: the group leader runs one.

Both are Kafka's, so a pyq consumer can share a group with Java, librdkafka or
kafka-python consumers that use the same strategy:

* ``range`` — per topic, the members subscribed to it (sorted by member id) get
  consecutive ranges of its partitions; the first ``partitions % members`` get one more.
* ``roundrobin`` — every partition of every subscribed topic (sorted) dealt in turn to the
  members (sorted) subscribed to its topic.

>>> range_assign({"a": ["t"], "b": ["t"]}, {"t": 3})
{'a': [TopicPartition(topic='t', partition=0), TopicPartition(topic='t', partition=1)], 'b': [TopicPartition(topic='t', partition=2)]}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .metadata import TopicPartition

Assignment = dict[str, list[TopicPartition]]


def range_assign(subscriptions: Mapping[str, list[str]], partitions: Mapping[str, int]) -> Assignment:
    out: Assignment = {m: [] for m in subscriptions}
    for topic in sorted({t for ts in subscriptions.values() for t in ts}):
        members = sorted(m for m, ts in subscriptions.items() if topic in ts)
        count = partitions.get(topic, 0)
        share, extra = divmod(count, len(members))
        start = 0
        for i, m in enumerate(members):
            n = share + (1 if i < extra else 0)
            out[m].extend(TopicPartition(topic, p) for p in range(start, start + n))
            start += n
    return out


def roundrobin_assign(subscriptions: Mapping[str, list[str]], partitions: Mapping[str, int]) -> Assignment:
    out: Assignment = {m: [] for m in subscriptions}
    members = sorted(subscriptions)
    turn = 0
    for topic in sorted({t for ts in subscriptions.values() for t in ts}):
        for p in range(partitions.get(topic, 0)):
            while topic not in subscriptions[members[turn % len(members)]]:
                turn += 1
            out[members[turn % len(members)]].append(TopicPartition(topic, p))
            turn += 1
    return out


ASSIGNORS: dict[str, Callable[[Mapping[str, list[str]], Mapping[str, int]], Assignment]] = {
    "range": range_assign, "roundrobin": roundrobin_assign}
