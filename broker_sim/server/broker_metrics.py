"""A broker's metrics (``--override metrics.port=N``): what to watch, read when scraped."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import Counter
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ..metrics import MetricsServer, NetworkCollector, WaitingCollector
from ..purgatory import DelayedOperationPurgatory
from .group_metrics import ConsumerGroupCollector
from .partition import Partition
from .partition_metrics import TopicPartitionCollector

if TYPE_CHECKING:
    from ..controller.controller import Controller
    from ..coordinator.group import GroupCoordinator
    from ..coordinator.group.store import GroupStore
    from ..coordinator.transaction.coordinator import TransactionCoordinator
    from ..network import SocketServer
    from .metadata_cache import MetadataCache
    from .replica_manager import ReplicaManager


class Watched(Protocol):
    """The parts of a broker (:class:`~.broker.Broker`) its metrics read when scraped."""

    @property
    def socket_server(self) -> SocketServer: ...
    @property
    def replica_manager(self) -> ReplicaManager: ...
    @property
    def group_coordinator(self) -> GroupCoordinator: ...
    @property
    def group_store(self) -> GroupStore: ...
    @property
    def txn_coordinator(self) -> TransactionCoordinator: ...
    @property
    def embedded_controller(self) -> Controller | None: ...
    @property
    def metadata(self) -> MetadataCache: ...
    @property
    def retention_checks(self) -> int: ...


class PartitionCollector(Collector):
    """Partition health from this broker's replicas, read when scraped (attributes only,
    no lock: a scrape may see a partition mid-change, never a torn number).

    ``pyq_partitions`` (hosted here), ``pyq_leader_partitions``,
    ``pyq_under_replicated_partitions`` (led here, ISR smaller than the replica set: Kafka's
    ``UnderReplicatedPartitions``) and ``pyq_under_min_isr_partitions`` (led here, ISR below
    ``min.insync.replicas``: acks=all is refused).
    """

    def __init__(self, partitions: Callable[[], Iterable[Partition]]) -> None:
        self.partitions = partitions

    def collect(self) -> Iterator[GaugeMetricFamily]:
        hosted = leaders = under = under_min = 0
        for p in self.partitions():
            hosted += 1
            if p.is_leader:
                leaders += 1
                isr = len(p.isr)
                under += isr < len(p.replicas)
                under_min += isr < p.min_isr
        yield GaugeMetricFamily("pyq_partitions", "Partitions hosted by this broker", value=hosted)
        yield GaugeMetricFamily("pyq_leader_partitions", "Partitions this broker leads",
                                value=leaders)
        yield GaugeMetricFamily("pyq_under_replicated_partitions",
                                "Partitions led here whose ISR is smaller than their replica set",
                                value=under)
        yield GaugeMetricFamily("pyq_under_min_isr_partitions",
                                "Partitions led here whose ISR is below min.insync.replicas",
                                value=under_min)


class HousekeepingCollector(Collector):
    """``pyq_log_retention_checks_total``: log-retention checks finished, read when scraped
    (one every ``log.retention.check.interval.ms``; shows a check ran even when it deleted
    nothing)."""

    def __init__(self, retention_checks: Callable[[], int]) -> None:
        self.retention_checks = retention_checks

    def collect(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily("pyq_log_retention_checks", "Log-retention checks finished",
                                  value=self.retention_checks())


class BrokerMetrics:
    """The broker's :class:`MetricsServer` and the few metrics counted as events.

    Almost everything is a collector over live state (:meth:`watch`, called once the
    broker's components exist): the network layer's per-API stats and connections, the
    purgatories and timers, the partitions, and, on a single broker, its embedded
    controller; per topic and partition (:class:`~.partition_metrics.TopicPartitionCollector`)
    and per consumer group (:class:`~.group_metrics.ConsumerGroupCollector`) under
    kafka_exporter's names. Only ISR changes are counted as they happen (``pyq_isr_shrinks_total``,
    ``pyq_isr_expands_total``: AlterPartition requests the controller accepted), which is
    rare and off the request path.

    Threading: ``record_isr_change`` from any thread (prometheus counters lock
    internally); collectors run on the endpoint's scrape threads.
    """

    def __init__(self) -> None:
        self.server = MetricsServer()
        registry = self.server.registry
        self.isr_shrinks = Counter("pyq_isr_shrinks", "ISR shrinks accepted by the controller",
                                   registry=registry)
        self.isr_expands = Counter("pyq_isr_expands", "ISR expansions accepted by the controller",
                                   registry=registry)

    def record_isr_change(self, old: Iterable[int], new: Iterable[int]) -> None:
        before, after = set(old), set(new)
        if before - after:
            self.isr_shrinks.inc()
        if after - before:
            self.isr_expands.inc()

    def watch(self, broker: Watched) -> None:
        registry = self.server.registry
        registry.register(NetworkCollector(broker.socket_server))
        rm = broker.replica_manager

        def purgatories() -> list[DelayedOperationPurgatory[Any]]:
            return [rm.produce_purgatory, rm.fetch_purgatory, rm.delete_records_purgatory,
                    broker.group_coordinator.join_purgatory,
                    broker.group_coordinator.heartbeat_purgatory,
                    broker.txn_coordinator.timeouts, broker.txn_coordinator.waiting]

        embedded = broker.embedded_controller
        registry.register(WaitingCollector(
            purgatories, lambda: [embedded.timer] if embedded is not None else []))
        registry.register(PartitionCollector(rm.partitions))
        registry.register(TopicPartitionCollector(rm.partitions, lambda: broker.metadata.image))
        registry.register(ConsumerGroupCollector(broker.group_store.groups, rm.partitions))
        registry.register(HousekeepingCollector(lambda: broker.retention_checks))
        if embedded is not None:
            from ..controller.metrics import ControllerCollector
            registry.register(ControllerCollector(embedded))
