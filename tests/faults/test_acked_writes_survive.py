"""Jepsen-style: an idempotent acks=all producer writes while a nemesis pauses and kills
nodes one at a time, on a 3-node pyq cluster and on a 3-node Apache Kafka cluster side by
side (the same seeded fault schedule, the same workload, the same checker). Afterwards every
acknowledged write is in the log exactly once, where its acknowledgement said, in the order
it was sent (see :mod:`tests.faults.history`).

pyq's faults hit its brokers only: its controller is one process until the controller
quorum is built (Kafka's nodes are its KRaft quorum, so there the active controller is hit
too). Network partitions are not injected yet: this machine has no packet filter installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from connector.client import Admin
from reference.kafka_cluster import KafkaCluster
from tests.faults import nemesis
from tests.faults.history import Workload, check
from tests.wire import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

TOPIC = "faults"
PARTITIONS = 3
SEED = 34


class Target:
    def __init__(self, name: str, bootstrap: str, nodes: nemesis.Nodes) -> None:
        self.name, self.bootstrap, self.nodes = name, bootstrap, nodes


@pytest.fixture(scope="module", params=["pyq", "kafka"])
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    directory: Path = tmp_path_factory.mktemp(f"faults-{request.param}")
    if request.param == "pyq":
        from broker_sim.cluster import LocalCluster

        cluster = LocalCluster(directory, 3, {"replica.lag.time.max.ms": "2000"}).start()
        try:
            yield Target("pyq", cluster.bootstrap_servers, nemesis.PyqNodes(cluster))
        finally:
            cluster.stop()
    else:
        kafka = KafkaCluster(directory, 3, overrides={"auto.create.topics.enable": "false"}).start()
        try:
            yield Target("kafka", kafka.bootstrap_servers, nemesis.KafkaNodes(kafka))
        finally:
            kafka.stop()


def test_nothing_acknowledged_is_lost_duplicated_or_reordered_under_pauses_and_kills(
        target: Target) -> None:
    with Admin({"bootstrap.servers": target.bootstrap}) as admin:
        admin.create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
    workload = Workload(target.bootstrap, TOPIC, PARTITIONS).start()
    wait_for(lambda: len(workload.history.acked) >= 200, 60, what="the workload under way")
    faults = nemesis.schedule(SEED, target.nodes.ids, rounds=4)
    events = nemesis.run(target.nodes, faults)
    acked_before_end = len(workload.history.acked)
    wait_for(lambda: len(workload.history.acked) >= acked_before_end + 200, 120,
             what="writes acknowledged again once every fault is healed")
    history = workload.stop()

    verdict = check(target.bootstrap, TOPIC, PARTITIONS, history)
    report = (f"{target.name}: {history.sent} sent, {len(history.acked)} acked, "
              f"{len(history.failed)} failed, {verdict.logged} in the log; faults: {events}")
    print(report)
    assert verdict.ok, f"{report}\n{verdict}"
    assert len(history.acked) > history.sent * 0.9, report  # the faults never stopped writes long
