"""pyq's cluster and Apache Kafka's, each node in a network namespace of its own
(:class:`~tests.faults.netns.Network`), for the partition nemeses.

:class:`NetnsPyqCluster` is a :class:`~broker_sim.cluster.LocalCluster` whose controller and
brokers listen on their namespace's address and are started with ``ip netns exec``;
:class:`NetnsKafkaCluster` is a :class:`~reference.kafka_cluster.KafkaCluster` whose nodes
listen (clients, replication and the KRaft quorum) on theirs. Both stop their processes by
pid as the loopback clusters do; the network is the caller's to close afterwards.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from broker_sim.cluster import LocalCluster
from broker_sim.process import BrokerProcess
from reference.kafka_cluster import KafkaCluster, KafkaNode
from tests.faults.netns import Network


class _NamespacedBroker(BrokerProcess):
    def __init__(self, prefix: list[str], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.prefix = prefix

    def _command(self) -> list[str]:
        return [*self.prefix, *super()._command()]


class NetnsPyqCluster(LocalCluster):
    """The controller in namespace ``ctl``, broker i in ``b<i>``."""

    def __init__(self, data_dir: Path, network: Network, brokers: int = 3,
                 overrides: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(data_dir, brokers, overrides, **kwargs)
        self.network = network
        self.controller_ns = network.add("ctl")
        self.broker_ns = [network.add(f"b{i}") for i in range(brokers)]
        self.controller.host = network.address[self.controller_ns]
        self.controller.command = [*network.exec_prefix(self.controller_ns),
                                   *self.controller.command, "--host", self.controller.host]

    def start(self) -> NetnsPyqCluster:
        self.controller.start()
        controller = f"{self.controller.host}:{self.controller.port}"
        try:
            for i, ns in enumerate(self.broker_ns):
                b = _NamespacedBroker(self.network.exec_prefix(ns), self.data_dir / f"broker-{i}",
                                      broker_id=i, host=self.network.address[ns],
                                      overrides={"controller": controller, **self.overrides},
                                      python=self.python, log_args=self.log_args)
                self.brokers.append(b)
                b.start()
        except BaseException:
            self.stop()
            raise
        return self


class NetnsKafkaCluster(KafkaCluster):
    """Node i (broker and KRaft voter) in namespace ``k<i>``."""

    def __init__(self, directory: Path, network: Network, nodes: int = 3, **kwargs: Any) -> None:
        super().__init__(directory, nodes, **kwargs)
        self.network = network
        self.namespace = {n.node_id: network.add(f"k{n.node_id}") for n in self.nodes}

    def host(self, node_id: int) -> str:
        return self.network.address[self.namespace[node_id]]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{self.host(n.node_id)}:{n.port}" for n in self.nodes)

    def _properties(self, node: KafkaNode) -> dict[str, str]:
        props = super()._properties(node)
        moves = {f"127.0.0.1:{port}": f"{self.host(m.node_id)}:{port}"
                 for m in self.nodes for port in (m.port, m.controller_port)}
        for key, value in props.items():
            for old, new in moves.items():
                value = value.replace(old, new)
            props[key] = value
        return props

    def _launcher(self, node: KafkaNode) -> list[str]:
        return self.network.exec_prefix(self.namespace[node.node_id])

    def active_controller(self) -> int:
        """The KRaft leader of the highest epoch any node's ``quorum-state`` file records."""
        best = (-1, -1)
        for n in self.nodes:
            path = n.directory / "data" / "__cluster_metadata-0" / "quorum-state"
            try:
                state = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if state.get("leaderId", -1) >= 0:
                best = max(best, (int(state["leaderEpoch"]), int(state["leaderId"])))
        if best[1] < 0:
            raise RuntimeError("no node's quorum-state names a KRaft leader")
        return best[1]
