"""pyq's cluster and Apache Kafka's, each node in a network namespace of its own
(:class:`~tests.faults.netns.Network`), for the partition nemeses.

:class:`NetnsPyqCluster` is a :class:`~broker_sim.cluster.LocalCluster` whose controller and
brokers listen on their namespace's address and are started with ``ip netns exec``;
:class:`NetnsKafkaCluster` is a :class:`~reference.kafka_cluster.KafkaCluster` whose nodes
listen (clients, replication and the KRaft quorum) on theirs. Both stop their processes by
pid as the loopback clusters do; the network is the caller's to close afterwards.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from broker_sim.cluster import FIRST_CONTROLLER_ID, LocalCluster
from broker_sim.process import BrokerProcess, ManagedProcess
from reference.kafka_cluster import KafkaCluster, KafkaNode
from tests.faults.netns import Network

#: the port every controller listens on for brokers, each on its own namespace's address
CONTROLLER_PORT = 9093


class _NamespacedBroker(BrokerProcess):
    def __init__(self, prefix: list[str], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.prefix = prefix

    def _command(self) -> list[str]:
        return [*self.prefix, *super()._command()]


class NetnsPyqCluster(LocalCluster):
    """Controller ``3000 + i`` in namespace ``ctl<i>``, broker i in ``b<i>``. Every
    controller listens on :data:`CONTROLLER_PORT` of its own address (so a killed one comes
    back where the brokers look for it) and on its quorum port of that address."""

    def __init__(self, data_dir: Path, network: Network, brokers: int = 3,
                 overrides: dict[str, str] | None = None, controllers: int = 1,
                 **kwargs: Any) -> None:
        super().__init__(data_dir, brokers, overrides, controllers=controllers, **kwargs)
        self.network = network
        self.controller_ns = {FIRST_CONTROLLER_ID + i: network.add(f"ctl{i}")
                              for i in range(controllers)}
        self.broker_ns = [network.add(f"b{i}") for i in range(brokers)]
        for node_id, process in zip(self.controller_ns, self.controllers, strict=True):
            ns = self.controller_ns[node_id]
            process.host = network.address[ns]
            command = list(process.command)
            command[command.index("--port") + 1] = str(CONTROLLER_PORT)
            for i, arg in enumerate(command):
                if arg.startswith("controller.quorum.voters="):
                    command[i] = re.sub(r"(\d+)@127\.0\.0\.1:", self._voter, arg)
            process.command = [*network.exec_prefix(ns), *command, "--host", process.host]

    def _voter(self, m: re.Match[str]) -> str:
        return f"{m.group(1)}@{self.network.address[self.controller_ns[int(m.group(1))]]}:"

    def controller_process(self, node_id: int) -> ManagedProcess:
        return self.controllers[node_id - FIRST_CONTROLLER_ID]

    def start(self) -> NetnsPyqCluster:
        try:
            for c in self.controllers:
                c.start()
            controller = ",".join(f"{c.host}:{c.port}" for c in self.controllers)
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
