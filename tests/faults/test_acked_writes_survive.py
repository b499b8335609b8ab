"""Jepsen-style: an idempotent acks=all producer, a transactional producer and a
read_committed consumer work while a nemesis pauses, kills and partitions nodes one at a
time, on a 3-node pyq cluster and on a 3-node Apache Kafka cluster side by side (the same
seeded fault schedule, the same workload, the same checker). Afterwards every acknowledged
write is in the log exactly once, where its acknowledgement said, in the order it was sent;
no aborted record was read, no committed transaction partly, and the reader caught up (see
:mod:`tests.faults.history`).

Where this machine allows it (root, ``ip`` and ``tc``, network namespaces), each node lives
in a network namespace of its own and the clients in another (:mod:`tests.faults.netns`),
pyq runs a quorum of 3 controllers (Kafka's 3 nodes are its KRaft quorum), and the partition
test runs: the partition leader, the active controller and an asymmetric cut, and the active
controller paused, in a seeded order. Elsewhere the clusters run on loopback (pyq with one
controller) and that test skips, naming what is missing.

At the end of the module the per-fault table (acknowledged, read, lost, duplicated,
aborted-read and partly visible transactions, for pyq and for Kafka) is printed (``-s``
shows it). ``PYQ_FAULT_ROUNDS=N`` makes the partition test a soak of N faults of every kind
(broker pauses and kills, the active controller killed, a leader cut from its controller
too), ``PYQ_FAULT_SEED`` picks another schedule and ``PYQ_FAULT_SECONDS=LOW,HIGH`` longer
faults (``PYQ_FAULT_ROUNDS=40 PYQ_FAULT_SEED=7 pytest -s tests/faults -k partitions``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from reference.kafka_cluster import KafkaCluster
from tests.faults import nemesis, netns
from tests.faults.client import WorkloadProcess
from tests.faults.clusters import NetnsKafkaCluster, NetnsPyqCluster
from tests.wire import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

PARTITIONS = 3
SEED = int(os.environ.get("PYQ_FAULT_SEED", "34"))
SOAK_ROUNDS = int(os.environ.get("PYQ_FAULT_ROUNDS", "0"))
#: how long each partition-test fault lasts, "LOW,HIGH" seconds (drawn per fault)
SECONDS = tuple(float(x) for x in os.environ.get("PYQ_FAULT_SECONDS", "3,4").split(","))
#: target name -> phase -> counts, filled by the tests, printed at the module's end
RESULTS: dict[str, dict[str, dict[str, int]]] = {}


@cache
def _no_netns() -> str | None:
    netns.sweep_stale()
    return netns.unavailable()


class Target:
    def __init__(self, name: str, bootstrap: str, nodes: nemesis.Nodes, directory: Path,
                 network: netns.Network | None) -> None:
        self.name, self.bootstrap, self.nodes = name, bootstrap, nodes
        self.directory, self.network = directory, network
        self.client_ns = network.add("client") if network is not None else None

    def workload(self, topic: str) -> WorkloadProcess:
        config = {"bootstrap": self.bootstrap, "topic": topic, "txn_topic": f"{topic}-txn",
                  "partitions": PARTITIONS, "seed": SEED}
        prefix = None
        if self.network is not None and self.client_ns is not None:
            prefix = self.network.exec_prefix(self.client_ns)
        return WorkloadProcess(config, self.directory / f"workload-{topic}.err", prefix)


@pytest.fixture(scope="module", autouse=True)
def table() -> Iterator[None]:
    yield
    kinds = ["healthy", *nemesis.PROCESS_FAULTS, *nemesis.CONTROLLER_FAULTS,
             *nemesis.NETWORK_FAULTS, *nemesis.SOAK_NETWORK_FAULTS]
    columns = ("acked", "read", "lost", "duplicated", "aborted_read", "partial")
    lines = ["fault                 target " + " ".join(f"{c:>12}" for c in columns)]
    for kind in kinds:
        for name, phases in sorted(RESULTS.items()):
            if kind in phases:
                lines.append(f"{kind:<21} {name:<6} "
                             + " ".join(f"{phases[kind][c]:>12}" for c in columns))
    print("\n" + "\n".join(lines))


@pytest.fixture(scope="module", params=["pyq", "kafka"])
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    directory: Path = tmp_path_factory.mktemp(f"faults-{request.param}")
    network = netns.Network() if _no_netns() is None else None
    try:
        if request.param == "pyq":
            from broker_sim.cluster import LocalCluster

            overrides = {"replica.lag.time.max.ms": "2000"}
            cluster = (NetnsPyqCluster(directory, network, 3, overrides, controllers=3)
                       if network is not None else LocalCluster(directory, 3, overrides))
            try:
                cluster.start()
                yield Target("pyq", cluster.bootstrap_servers, nemesis.PyqNodes(cluster),
                             directory, network)
            finally:
                cluster.stop()
        else:
            overrides = {"auto.create.topics.enable": "false"}
            kafka = (NetnsKafkaCluster(directory, network, 3, overrides=overrides)
                     if network is not None else KafkaCluster(directory, 3, overrides=overrides))
            try:
                kafka.start()
                yield Target("kafka", kafka.bootstrap_servers, nemesis.KafkaNodes(kafka),
                             directory, network)
            finally:
                kafka.stop()
    finally:
        if network is not None:
            network.close()


def _run(target: Target, topic: str, faults: list[nemesis.Fault]) -> tuple[dict[str, Any], list[str]]:
    client = target.workload(topic)
    try:
        wait_for(lambda: client.acked() >= 200, 60, what="the workload under way")
        events = nemesis.run(target.nodes, faults, client, gap_s=1.5, partitions=PARTITIONS)
        client.phase("healthy")
        acked_before_end = client.acked()
        wait_for(lambda: client.acked() >= acked_before_end + 200, 120,
                 what="writes acknowledged again once every fault is healed")
        verdict = client.stop()
    finally:
        client.close()
    rows = RESULTS.setdefault(target.name, {})
    for phase, counts in verdict["phases"].items():
        row = rows.setdefault(phase, dict.fromkeys(counts, 0))
        for k, v in counts.items():
            row[k] += v
    return verdict, events


def _assert_clean(target: Target, verdict: dict[str, Any], events: list[str]) -> None:
    txns = verdict["transactions"]
    report = (f"{target.name}: {verdict['sent']} sent, {verdict['acked']} acked, "
              f"{verdict['failed']} failed, {verdict['logged']} in the log; transactions "
              f"{txns['outcomes']} (errors {txns['errors']}), reader caught up in "
              f"{verdict['caught_up_s']} s; faults: {events}")
    print(report)
    anomalies = {k: verdict[k] for k in ("lost", "duplicated", "misplaced", "reordered", "stuck")
                 if verdict[k]}
    anomalies.update({f"transactions {k}": txns[k]
                      for k in ("lost", "duplicated", "aborted_read", "partial", "backwards")
                      if txns[k]})
    assert not anomalies, f"{report}\n{anomalies}"
    assert verdict["acked"] > verdict["sent"] * 0.9, report  # the faults never stopped writes long
    assert txns["outcomes"].get("committed", 0) > 0, report


def test_nothing_acknowledged_is_lost_duplicated_or_reordered_under_pauses_and_kills(
        target: Target) -> None:
    verdict, events = _run(target, "faults", nemesis.schedule(SEED, target.nodes.ids, rounds=4))
    _assert_clean(target, verdict, events)


def test_nothing_acknowledged_is_lost_and_no_aborted_read_under_partitions(target: Target) -> None:
    if target.network is None:
        pytest.skip(str(_no_netns()))
    kinds = nemesis.NETWORK_FAULTS + (
        ("pause", "kill", *nemesis.CONTROLLER_FAULTS, *nemesis.SOAK_NETWORK_FAULTS)
        if SOAK_ROUNDS else ("pause-controller",))
    faults = nemesis.mixed_schedule(SEED, len(target.nodes.ids), PARTITIONS,
                                    max(SOAK_ROUNDS, len(kinds)), kinds,
                                    seconds=(SECONDS[0], SECONDS[-1]))
    verdict, events = _run(target, "partitions", faults)
    _assert_clean(target, verdict, events)
