"""Faults injected into a running cluster on a seeded schedule, one at a time, each healed
before the next (so a topic with replication factor 3 and ``min.insync.replicas=2`` keeps a
quorum once it is healed):

- ``pause``: SIGSTOP a node, SIGCONT it later (the garbage-collection pause or stalled VM of
  Jepsen's reports);
- ``kill``: SIGKILL a node (nothing flushed), start it again on the same ports and data;
- ``partition-leader``: the leader of a partition of the workload's topic cut off from every
  other node of the cluster (a minority of one against the majority; the clients still reach
  both sides);
- ``partition-controller``: the active controller cut off from the other nodes (pyq's
  controller process from every broker; Kafka's KRaft leader from the other nodes);
- ``asymmetric``: a partition leader cannot reach one other broker, which still reaches it;
- ``leader-controller`` (soaks only): a partition leader and the active controller cut off
  from each other, everything else still connected (the leader keeps its clients and its
  followers but not its controller: the stale leader of a split brain). On Kafka the
  leader of another partition is taken when this one's leads the quorum too; when every
  partition's does, nothing is cut (the log says so).

The three network faults need the cluster in network namespaces (:mod:`tests.faults.netns`).

:class:`Nodes` is what the nemesis needs of a cluster; :class:`PyqNodes` and
:class:`KafkaNodes` adapt pyq's :class:`~broker_sim.cluster.LocalCluster` (its brokers:
pyq's single controller is paused or killed by no fault until the controller quorum exists;
it is partitioned) and Apache Kafka's :class:`~reference.kafka_cluster.KafkaCluster` (every
node is broker and KRaft controller, so Kafka's active controller is a target too).
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from broker_sim.cluster import LocalCluster
from reference.kafka_cluster import KafkaCluster
from tests.faults.clusters import NetnsKafkaCluster, NetnsPyqCluster
from tests.faults.netns import Network

PROCESS_FAULTS = ("pause", "kill")
NETWORK_FAULTS = ("partition-leader", "partition-controller", "asymmetric")
#: network faults only the soak's schedule draws (the suite's stays within its time)
SOAK_NETWORK_FAULTS = ("leader-controller",)


class Nodes(Protocol):
    ids: list[int]
    network: Network | None

    def pause(self, node: int) -> None: ...
    def resume(self, node: int) -> None: ...
    def kill(self, node: int) -> None: ...
    def restart(self, node: int) -> None: ...
    def namespace(self, node: int) -> str: ...
    def controller_namespace(self) -> str: ...
    def namespaces(self) -> list[str]: ...


class PyqNodes:
    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.ids = [b.broker_id for b in cluster.brokers]
        self.network = cluster.network if isinstance(cluster, NetnsPyqCluster) else None

    def pause(self, node: int) -> None:
        self.cluster.broker(node).pause()

    def resume(self, node: int) -> None:
        self.cluster.broker(node).resume()

    def kill(self, node: int) -> None:
        self.cluster.broker(node).kill()

    def restart(self, node: int) -> None:
        self.cluster.broker(node).start()

    def _netns(self) -> NetnsPyqCluster:
        assert isinstance(self.cluster, NetnsPyqCluster), "this cluster is not in namespaces"
        return self.cluster

    def namespace(self, node: int) -> str:
        return self._netns().broker_ns[node]

    def controller_namespace(self) -> str:
        return self._netns().controller_ns

    def namespaces(self) -> list[str]:
        return [self._netns().controller_ns, *self._netns().broker_ns]


class KafkaNodes:
    def __init__(self, cluster: KafkaCluster) -> None:
        self.cluster = cluster
        self.ids = [n.node_id for n in cluster.nodes]
        self.network = cluster.network if isinstance(cluster, NetnsKafkaCluster) else None

    def pause(self, node: int) -> None:
        os.kill(self.cluster.node(node).pid, signal.SIGSTOP)

    def resume(self, node: int) -> None:
        os.kill(self.cluster.node(node).pid, signal.SIGCONT)

    def kill(self, node: int) -> None:
        self.cluster.kill(node)

    def restart(self, node: int) -> None:
        self.cluster.restart(node)

    def _netns(self) -> NetnsKafkaCluster:
        assert isinstance(self.cluster, NetnsKafkaCluster), "this cluster is not in namespaces"
        return self.cluster

    def namespace(self, node: int) -> str:
        return self._netns().namespace[node]

    def controller_namespace(self) -> str:
        return self.namespace(self._netns().active_controller())

    def namespaces(self) -> list[str]:
        return list(self._netns().namespace.values())


@dataclass(frozen=True)
class Fault:
    kind: str  # one of PROCESS_FAULTS or NETWORK_FAULTS
    node: int  # pause/kill: the node's index; partitions: the workload partition's number
    seconds: float  # how long the fault lasts


def schedule(seed: int, nodes: list[int], rounds: int) -> list[Fault]:
    """Pauses and kills: the same faults for the same seed, whichever cluster runs them."""
    rng = random.Random(seed)
    return [Fault(rng.choice(["pause", "kill"]), rng.choice(nodes), rng.uniform(3.0, 6.0))
            for _ in range(rounds)]


def mixed_schedule(seed: int, nodes: int, partitions: int, rounds: int,
                   kinds: tuple[str, ...] = PROCESS_FAULTS + NETWORK_FAULTS,
                   seconds: tuple[float, float] = (3.0, 5.0)) -> list[Fault]:
    """Every kind of ``kinds`` once in a seeded order, then more drawn at random up to
    ``rounds``; ``node`` indexes the nodes for a pause or kill, the partitions for a
    partition."""
    rng = random.Random(seed)
    order = rng.sample(kinds, len(kinds)) + [rng.choice(kinds) for _ in range(rounds - len(kinds))]
    return [Fault(kind, rng.randrange(nodes if kind in PROCESS_FAULTS else partitions),
                  rng.uniform(*seconds)) for kind in order]


def _cut(nodes: Nodes, fault: Fault, leader: Callable[[int], int], partitions: int) -> str:
    """Apply a network fault; what was cut, for the log."""
    network = nodes.network
    assert network is not None, f"{fault.kind} needs the cluster in network namespaces"
    everyone = nodes.namespaces()
    if fault.kind == "partition-controller":
        isolated = nodes.controller_namespace()
        network.isolate([isolated], [ns for ns in everyone if ns != isolated])
        return f"controller {isolated} cut off"
    if fault.kind == "leader-controller":
        controller = nodes.controller_namespace()
        for p in ((fault.node + i) % partitions for i in range(partitions)):
            lead = leader(p)
            if nodes.namespace(lead) != controller:
                network.isolate([nodes.namespace(lead)], [controller])
                return f"leader {lead} of partition {p} and the controller cut apart"
        return "every partition's leader is the controller: nothing cut"
    lead = leader(fault.node)
    if fault.kind == "partition-leader":
        isolated = nodes.namespace(lead)
        network.isolate([isolated], [ns for ns in everyone if ns != isolated])
        return f"leader {lead} of partition {fault.node} cut off"
    others = [n for n in nodes.ids if n != lead]
    peer = others[fault.node % len(others)]
    network.block(nodes.namespace(lead), nodes.namespace(peer))
    return f"leader {lead} of partition {fault.node} cannot reach {peer} (which reaches it)"


def run(nodes: Nodes, faults: list[Fault], gap_s: float = 2.0,
        phase: Callable[[str], None] = lambda _: None,
        leader: Callable[[int], int] | None = None, partitions: int = 1) -> list[str]:
    """Inject each fault, heal it, wait ``gap_s``; what happened, one line per fault.
    ``phase(kind)`` is called as each fault starts (the workload tags its writes with it);
    ``leader(partition)`` names a partition's leader for the network faults (of the
    workload topic's ``partitions``)."""
    log = []
    for fault in faults:
        phase(fault.kind)
        start = time.monotonic()
        if fault.kind in NETWORK_FAULTS + SOAK_NETWORK_FAULTS:
            assert leader is not None, f"{fault.kind} needs leader()"
            what = _cut(nodes, fault, leader, partitions)
            time.sleep(fault.seconds)  # the fault's length: this sleep *is* the partition
            assert nodes.network is not None
            nodes.network.heal()
        else:
            node = nodes.ids[fault.node % len(nodes.ids)]
            what = f"node {node}"
            if fault.kind == "pause":
                nodes.pause(node)
                time.sleep(fault.seconds)  # the fault's length: this sleep *is* the pause
                nodes.resume(node)
            else:
                nodes.kill(node)
                time.sleep(fault.seconds)  # the time the node stays down
                nodes.restart(node)
        log.append(f"{fault.kind} {what} for {fault.seconds:.1f} s "
                   f"(healed after {time.monotonic() - start:.1f} s)")
        time.sleep(gap_s)  # the cluster runs healthy between faults
    return log
