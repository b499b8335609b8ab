"""Faults injected into a running cluster on a seeded schedule, one at a time, each healed
before the next (so a topic with replication factor 3 and ``min.insync.replicas=2`` keeps a
quorum once it is healed):

- ``pause``: SIGSTOP a node, SIGCONT it later (the garbage-collection pause or stalled VM of
  Jepsen's reports);
- ``kill``: SIGKILL a node (nothing flushed), start it again on the same ports and data;
- ``partition-leader``: the leader of a partition of the workload's topic cut off from every
  other node of the cluster (a minority of one against the majority; the clients still reach
  both sides);
- ``partition-controller``: the active controller cut off from every other node (pyq's
  quorum leader from the other controllers and the brokers; Kafka's KRaft leader, a broker
  too, from the other nodes);
- ``pause-controller``, ``kill-controller``: the active controller paused or killed (and
  started again on the same addresses and data), as the issue's SIGSTOP finding did;
- ``asymmetric``: a partition leader cannot reach one other broker, which still reaches it;
- ``leader-controller`` (soaks only): a partition leader and the active controller cut off
  from each other, everything else still connected (the leader keeps its clients and its
  followers but not its controller: the stale leader of a split brain). On Kafka the
  leader of another partition is taken when this one's leads the quorum too; when every
  partition's does, nothing is cut (the log says so).

The network faults need the cluster in network namespaces (:mod:`tests.faults.netns`), and
so do the controller faults on pyq (its controllers keep their ports across a restart only
there). Which node leads a partition or the controller quorum is asked of the workload's
client process (:class:`Observer`: Metadata and DescribeQuorum) just before the fault.

:class:`Nodes` is what the nemesis needs of a cluster; :class:`PyqNodes` and
:class:`KafkaNodes` adapt pyq's :class:`~broker_sim.cluster.LocalCluster` (brokers by id,
controllers by id from 3000) and Apache Kafka's :class:`~reference.kafka_cluster.KafkaCluster`
(every node is broker and KRaft voter, so a node fault may hit Kafka's active controller).
"""

from __future__ import annotations

import os
import random
import signal
import time
from dataclasses import dataclass
from typing import Protocol

from broker_sim.cluster import FIRST_CONTROLLER_ID, LocalCluster
from broker_sim.process import ManagedProcess
from reference.kafka_cluster import KafkaCluster
from tests.faults.clusters import NetnsKafkaCluster, NetnsPyqCluster
from tests.faults.netns import Network

PROCESS_FAULTS = ("pause", "kill")
NETWORK_FAULTS = ("partition-leader", "partition-controller", "asymmetric")
#: the active controller paused or killed: Kafka's KRaft leader, pyq's quorum leader
CONTROLLER_FAULTS = ("pause-controller", "kill-controller")
#: network faults only the soak's schedule draws (the suite's stays within its time)
SOAK_NETWORK_FAULTS = ("leader-controller",)


class Observer(Protocol):
    """What the nemesis asks the workload's client process."""

    def phase(self, name: str) -> None: ...
    def leader(self, partition: int) -> int: ...
    def controller(self) -> int: ...


class Nodes(Protocol):
    """A cluster's processes by node id (pyq: brokers and controllers 3000...; Kafka: its
    nodes) and, in namespaces, each one's namespace. ``ids`` are the brokers."""

    ids: list[int]
    network: Network | None

    def pause(self, node: int) -> None: ...
    def resume(self, node: int) -> None: ...
    def kill(self, node: int) -> None: ...
    def restart(self, node: int) -> None: ...
    def namespace(self, node: int) -> str: ...
    def namespaces(self) -> list[str]: ...


class PyqNodes:
    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.ids = [b.broker_id for b in cluster.brokers]
        self.network = cluster.network if isinstance(cluster, NetnsPyqCluster) else None

    def _process(self, node: int) -> ManagedProcess:
        if node >= FIRST_CONTROLLER_ID:
            return self.cluster.controllers[node - FIRST_CONTROLLER_ID]
        return self.cluster.broker(node)

    def pause(self, node: int) -> None:
        self._process(node).pause()

    def resume(self, node: int) -> None:
        self._process(node).resume()

    def kill(self, node: int) -> None:
        self._process(node).kill()

    def restart(self, node: int) -> None:
        self._process(node).start()

    def _netns(self) -> NetnsPyqCluster:
        assert isinstance(self.cluster, NetnsPyqCluster), "this cluster is not in namespaces"
        return self.cluster

    def namespace(self, node: int) -> str:
        cluster = self._netns()
        return cluster.controller_ns[node] if node >= FIRST_CONTROLLER_ID else cluster.broker_ns[node]

    def namespaces(self) -> list[str]:
        return [*self._netns().controller_ns.values(), *self._netns().broker_ns]


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

    def namespaces(self) -> list[str]:
        return list(self._netns().namespace.values())


@dataclass(frozen=True)
class Fault:
    kind: str  # one of PROCESS_FAULTS, CONTROLLER_FAULTS, NETWORK_FAULTS, SOAK_NETWORK_FAULTS
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


def _cut(nodes: Nodes, fault: Fault, observer: Observer, partitions: int) -> str:
    """Apply a network fault; what was cut, for the log."""
    network = nodes.network
    assert network is not None, f"{fault.kind} needs the cluster in network namespaces"
    everyone = nodes.namespaces()
    if fault.kind == "partition-controller":
        active = observer.controller()
        isolated = nodes.namespace(active)
        network.isolate([isolated], [ns for ns in everyone if ns != isolated])
        return f"active controller {active} cut off"
    if fault.kind == "leader-controller":
        controller = nodes.namespace(observer.controller())
        for p in ((fault.node + i) % partitions for i in range(partitions)):
            lead = observer.leader(p)
            if nodes.namespace(lead) != controller:
                network.isolate([nodes.namespace(lead)], [controller])
                return f"leader {lead} of partition {p} and the controller cut apart"
        return "every partition's leader is the controller: nothing cut"
    lead = observer.leader(fault.node)
    if fault.kind == "partition-leader":
        isolated = nodes.namespace(lead)
        network.isolate([isolated], [ns for ns in everyone if ns != isolated])
        return f"leader {lead} of partition {fault.node} cut off"
    others = [n for n in nodes.ids if n != lead]
    peer = others[fault.node % len(others)]
    network.block(nodes.namespace(lead), nodes.namespace(peer))
    return f"leader {lead} of partition {fault.node} cannot reach {peer} (which reaches it)"


def run(nodes: Nodes, faults: list[Fault], observer: Observer, gap_s: float = 2.0,
        partitions: int = 1) -> list[str]:
    """Inject each fault, heal it, wait ``gap_s``; what happened, one line per fault.
    ``observer.phase(kind)`` is called as each fault starts (the workload tags its writes
    with it); the observer names partition leaders (of the workload topic's ``partitions``)
    and the active controller for the faults aimed at them."""
    log = []
    for fault in faults:
        observer.phase(fault.kind)
        start = time.monotonic()
        if fault.kind in NETWORK_FAULTS + SOAK_NETWORK_FAULTS:
            what = _cut(nodes, fault, observer, partitions)
            time.sleep(fault.seconds)  # the fault's length: this sleep *is* the partition
            assert nodes.network is not None
            nodes.network.heal()
        else:
            if fault.kind in CONTROLLER_FAULTS:
                node = observer.controller()
                what = f"active controller {node}"
            else:
                node = nodes.ids[fault.node % len(nodes.ids)]
                what = f"node {node}"
            if fault.kind.startswith("pause"):
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
