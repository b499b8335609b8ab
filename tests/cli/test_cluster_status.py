"""``pyq cluster status``, run as the installed ``pyq`` command against a cluster whose last
broker is then killed: brokers alive and gone, the controller, under-replicated and offline
partitions — on a 2-broker pyq cluster, then on the module's 3-node Apache Kafka
(``kafka_cluster``; ``broker_under_test``), the same test on both."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from broker_sim.protocol.api import ApiKey
from tests.wire import WireClient, wait_for, wait_for_topic_everywhere

pytestmark = pytest.mark.integration

PYQ = str(Path(sys.executable).parent / "pyq")


class Cluster(NamedTuple):
    cluster_id: str
    #: node id -> the address it listens on
    nodes: dict[int, str]
    #: SIGKILL the node
    kill: Callable[[int], None]


@pytest.fixture(scope="module", params=["pyq", "kafka"])
def broker_under_test(request: pytest.FixtureRequest,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Two pyq broker processes (ids 0, 1) with their controller, then three Apache Kafka
    nodes (ids 1-3, each broker and controller: losing one leaves a quorum)."""
    if request.param == "kafka":
        kafka = request.getfixturevalue("kafka_cluster")
        yield Cluster(kafka.cluster_id, {n.node_id: f"127.0.0.1:{n.port}" for n in kafka.nodes},
                      kafka.kill)
        return
    from broker_sim.cluster import LocalCluster

    local = LocalCluster(tmp_path_factory.mktemp("cluster-status"), 2)
    local.start()
    try:
        yield Cluster("pyq-cluster", {i: b.bootstrap_servers for i, b in enumerate(local.brokers)},
                      lambda i: local.brokers[i].kill())
    finally:
        local.stop()


def status(bootstrap: str) -> str:
    out = subprocess.run([PYQ, "cluster", "status", "--bootstrap-server", bootstrap],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def table(text: str, header: str) -> list[list[str]]:
    """The rows (split into cells) of the table whose header line starts with ``header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 1:]:
        if not line or line.split()[0].endswith(":") or line.startswith(("under-", "offline")):
            break
        rows.append(line.split())
    return rows


def create_topic(address: str, name: str, replicas: list[list[int]]) -> None:
    """CreateTopics v4 with each partition's replicas given (partition i: ``replicas[i]``)."""
    with WireClient(int(address.rsplit(":", 1)[1])) as c:
        r = c.request(ApiKey.CREATE_TOPICS, 4, {
            "topics": [{"name": name, "num_partitions": -1, "replication_factor": -1,
                        "assignments": [{"partition_index": i, "broker_ids": ids}
                                        for i, ids in enumerate(replicas)],
                        "configs": []}],
            "timeout_ms": 10_000, "validate_only": False})
    assert r.topics[0].error_code == 0, r


@pytest.mark.cluster  # several broker processes, either kind
def test_cluster_status_reports_brokers_and_partition_health(broker_under_test: Cluster):
    cluster = broker_under_test
    first, victim = min(cluster.nodes), max(cluster.nodes)
    address = cluster.nodes[first]
    bootstrap = ",".join(cluster.nodes.values())
    create_topic(address, "solo", [[first], [victim]])
    create_topic(address, "pair", [[first, victim], [victim, first]])
    wait_for_topic_everywhere(bootstrap, "solo", 2)
    wait_for_topic_everywhere(bootstrap, "pair", 2)

    healthy = wait_for(lambda: (s := status(address))
                       and "under-replicated partitions: 0" in s and s, what="a healthy cluster")
    assert f"cluster id: {cluster.cluster_id}" in healthy
    assert "offline partitions: 0" in healthy
    assert table(healthy, "BROKER") == [[str(n), a, "yes"] for n, a in sorted(cluster.nodes.items())]
    # the broker clients send admin requests to (pyq: broker 0; Kafka: one of its live brokers)
    named = int(healthy.splitlines()[1].split()[1])
    assert healthy.splitlines()[1] == f"controller: {named} ({cluster.nodes[named]})"

    cluster.kill(victim)  # kill -9: fenced after the session timeout (pyq 3 s, Kafka 9 s)
    text = wait_for(lambda: (s := status(address))
                    and "offline partitions: 0" not in s and s,
                    timeout=60, what=f"broker {victim}'s partitions to go offline")
    assert table(text, "BROKER") == [[str(n), "-", "no"] if n == victim else [str(n), a, "yes"]
                                     for n, a in sorted(cluster.nodes.items())]
    under = table(text.split("under-replicated partitions:")[1], "TOPIC")
    led = [r for r in under if r[2] != "-"]
    assert {(r[0], r[1]) for r in led} == {("pair", "0"), ("pair", "1")}
    assert all(r[4] == str(first) for r in led)  # ISR: only the first broker left
    # A partition without a leader is under-replicated too when its ISR is emptied: Kafka 4
    # (eligible leader replicas, KIP-966) takes the last in-sync replica out of the ISR when
    # its broker is fenced, pyq's broker leaves it there, so it is listed on Kafka only.
    assert {(r[0], r[1], r[4]) for r in under if r[2] == "-"} <= {("solo", "1", "-")}
    offline = table(text.split("offline partitions:")[1], "TOPIC")
    assert len(offline) == 1 and offline[0][:3] == ["solo", "1", "-"]  # no leader
    assert offline[0][3] == str(victim)  # its one replica was on the killed broker
    assert "offline partitions: 1" in text


def test_cluster_status_help():
    out = subprocess.run([PYQ, "cluster", "status", "--help"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0
    assert "offline partitions" in out.stdout and "--bootstrap-server" in out.stdout
