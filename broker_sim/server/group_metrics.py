"""Consumer group metrics under kafka_exporter's names, from the group coordinator."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..coordinator.group.group import GroupMetadata
from .partition import Partition

_GTP = ["consumergroup", "topic", "partition"]
_GT = ["consumergroup", "topic"]


class ConsumerGroupCollector(Collector):
    """The groups this broker coordinates, read when scraped (label ``consumergroup``, as
    kafka_exporter's).

    - ``kafka_consumergroup_current_offset{consumergroup,topic,partition}``: the committed
      offset, and ``kafka_consumergroup_current_offset_sum{consumergroup,topic}``;
    - ``kafka_consumergroup_lag{consumergroup,topic,partition}``: the partition's high
      watermark minus the committed offset, and ``kafka_consumergroup_lag_sum``;
    - ``kafka_consumergroup_members{consumergroup}``: members of either protocol.

    A group is reported by the broker that coordinates it (its ``__consumer_offsets``
    partition's leader), so every group appears once over the cluster. The lag needs the
    partition's high watermark, which a broker knows for the replicas it hosts (leader:
    exact; follower: its copy of the leader's, at most one fetch behind). A committed
    partition with no replica here has a current offset but no lag sample; over a cluster
    the exact lag of every partition is the PromQL join
    ``kafka_topic_partition_current_offset - on(topic, partition) group_right
    kafka_consumergroup_current_offset`` of what the brokers report.

    Threading: each group's offsets and member count are copied under its lock (held for
    the copy only); runs on the endpoint's scrape threads.
    """

    def __init__(self, groups: Callable[[], Iterable[GroupMetadata]],
                 partitions: Callable[[], Iterable[Partition]]) -> None:
        self.groups = groups
        self.partitions = partitions

    def collect(self) -> Iterator[GaugeMetricFamily]:
        ends = {(p.topic, p.index): p.log.high_watermark for p in self.partitions()}
        current = GaugeMetricFamily("kafka_consumergroup_current_offset",
                                    "Offset a group committed for a partition", labels=_GTP)
        current_sum = GaugeMetricFamily("kafka_consumergroup_current_offset_sum",
                                        "Sum of a group's committed offsets over a topic",
                                        labels=_GT)
        lag = GaugeMetricFamily("kafka_consumergroup_lag",
                                "High watermark minus the group's committed offset", labels=_GTP)
        lag_sum = GaugeMetricFamily("kafka_consumergroup_lag_sum",
                                    "Sum of a group's lag over a topic", labels=_GT)
        members = GaugeMetricFamily("kafka_consumergroup_members", "Members of a group",
                                    labels=["consumergroup"])
        for g in self.groups():
            with g.lock:
                offsets = [(tp, c.offset) for tp, c in g.offsets.items()]
                count = len(g.members) + (len(g.consumer.members) if g.consumer else 0)
            members.add_metric([g.group_id], count)
            offset_sums: dict[str, int] = {}
            lag_sums: dict[str, int] = {}
            for (topic, partition), offset in sorted(offsets):
                labels = [g.group_id, topic, str(partition)]
                current.add_metric(labels, offset)
                offset_sums[topic] = offset_sums.get(topic, 0) + offset
                end = ends.get((topic, partition))
                if end is not None and offset >= 0:
                    behind = max(end - offset, 0)
                    lag.add_metric(labels, behind)
                    lag_sums[topic] = lag_sums.get(topic, 0) + behind
            for topic, total in offset_sums.items():
                current_sum.add_metric([g.group_id, topic], total)
            for topic, total in lag_sums.items():
                lag_sum.add_metric([g.group_id, topic], total)
        yield from (current, current_sum, lag, lag_sum, members)
