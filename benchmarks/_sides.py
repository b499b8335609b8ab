"""The two brokers a head-to-head benchmark starts side by side: pyq's and Apache Kafka's.

A :class:`Side` is one broker side of a topology, however many processes it has: the
bootstrap address its clients use, the pids whose CPU the benchmark reads from ``/proc``,
the ports ``wait_in_sync`` asks, and how to stop it. ``start_pyq`` and ``start_kafka``
build the same topology on each side (one node, or ``nodes`` brokers with pyq's controller
or Kafka's KRaft quorum): Kafka with ``kafka-server-start.sh``'s JVM options and its
defaults otherwise, both with ``auto.create.topics.enable=false`` (pyq's default).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Side:
    """One broker side of a topology: its bootstrap address, its processes and ports, how to stop."""

    name: str
    bootstrap: str
    pids: list[int]
    ports: list[int]
    stop: Callable[[], object]


def start_pyq(directory: Path, nodes: int) -> Side:
    """One pyq ``BrokerProcess``, or a ``LocalCluster`` of ``nodes`` brokers and its controller
    (the controller's pid is among ``pids``: its CPU is the cluster's too)."""
    from broker_sim.cluster import LocalCluster
    from broker_sim.process import BrokerProcess

    if nodes == 1:
        broker = BrokerProcess(directory, port=0).start()
        assert broker.port is not None
        return Side("pyq", broker.bootstrap_servers, [broker.pid], [broker.port], broker.stop)
    cluster = LocalCluster(directory, brokers=nodes).start()
    return Side("pyq", cluster.bootstrap_servers,
                [b.pid for b in cluster.brokers] + [cluster.controller.pid],
                [int(a.rsplit(":", 1)[1]) for a in cluster.bootstrap_servers.split(",")], cluster.stop)


def start_kafka(directory: Path, nodes: int) -> Side:
    """An Apache Kafka KRaft cluster of ``nodes`` combined broker+controller nodes."""
    from reference.kafka_cluster import KAFKA_SERVER_JVM_OPTIONS, KafkaCluster

    cluster = KafkaCluster(directory, nodes, jvm_options=KAFKA_SERVER_JVM_OPTIONS,
                           overrides={"auto.create.topics.enable": "false"}).start()
    return Side("kafka", cluster.bootstrap_servers, [n.pid for n in cluster.nodes],
                [n.port for n in cluster.nodes], cluster.stop)
