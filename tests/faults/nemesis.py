"""Faults injected into a running cluster on a seeded schedule: pause a node (SIGSTOP, the
garbage-collection pause or stalled VM of Jepsen's reports) and resume it, or kill it
(SIGKILL, nothing flushed) and start it again on the same ports and data. One node at a
time, so a topic with replication factor 3 and ``min.insync.replicas=2`` keeps a quorum.

:class:`Nodes` is what the nemesis needs of a cluster; :class:`PyqNodes` and
:class:`KafkaNodes` adapt pyq's :class:`~broker_sim.cluster.LocalCluster` (its brokers:
pyq's single controller is not a target until the controller quorum exists) and Apache
Kafka's :class:`~reference.kafka_cluster.KafkaCluster` (every node is broker and KRaft
controller, so Kafka's active controller is a target too).
"""

from __future__ import annotations

import os
import random
import signal
import time
from dataclasses import dataclass
from typing import Protocol

from broker_sim.cluster import LocalCluster
from reference.kafka_cluster import KafkaCluster


class Nodes(Protocol):
    ids: list[int]

    def pause(self, node: int) -> None: ...
    def resume(self, node: int) -> None: ...
    def kill(self, node: int) -> None: ...
    def restart(self, node: int) -> None: ...


class PyqNodes:
    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.ids = [b.broker_id for b in cluster.brokers]

    def pause(self, node: int) -> None:
        self.cluster.broker(node).pause()

    def resume(self, node: int) -> None:
        self.cluster.broker(node).resume()

    def kill(self, node: int) -> None:
        self.cluster.broker(node).kill()

    def restart(self, node: int) -> None:
        self.cluster.broker(node).start()


class KafkaNodes:
    def __init__(self, cluster: KafkaCluster) -> None:
        self.cluster = cluster
        self.ids = [n.node_id for n in cluster.nodes]

    def pause(self, node: int) -> None:
        os.kill(self.cluster.node(node).pid, signal.SIGSTOP)

    def resume(self, node: int) -> None:
        os.kill(self.cluster.node(node).pid, signal.SIGCONT)

    def kill(self, node: int) -> None:
        self.cluster.kill(node)

    def restart(self, node: int) -> None:
        self.cluster.restart(node)


@dataclass(frozen=True)
class Fault:
    kind: str  # "pause" or "kill"
    node: int
    seconds: float  # how long the node stays paused or down


def schedule(seed: int, nodes: list[int], rounds: int) -> list[Fault]:
    """The same faults for the same seed, whichever cluster runs them."""
    rng = random.Random(seed)
    return [Fault(rng.choice(["pause", "kill"]), rng.choice(nodes), rng.uniform(3.0, 6.0))
            for _ in range(rounds)]


def run(nodes: Nodes, faults: list[Fault], gap_s: float = 2.0) -> list[str]:
    """Inject each fault, heal it, wait ``gap_s``; what happened, one line per fault."""
    log = []
    for fault in faults:
        node = nodes.ids[fault.node % len(nodes.ids)]
        start = time.monotonic()
        if fault.kind == "pause":
            nodes.pause(node)
            time.sleep(fault.seconds)  # the fault's length: this sleep *is* the pause
            nodes.resume(node)
        else:
            nodes.kill(node)
            time.sleep(fault.seconds)  # the time the node stays down
            nodes.restart(node)
        log.append(f"{fault.kind} node {node} for {fault.seconds:.1f} s "
                   f"(healed after {time.monotonic() - start:.1f} s)")
        time.sleep(gap_s)  # the cluster runs healthy between faults
    return log
