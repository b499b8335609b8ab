"""``pyq cluster status``, run as the installed ``pyq`` command against a 2-broker cluster:
brokers alive and gone, the controller, under-replicated and offline partitions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.wire import create_topic, wait_for, wait_for_topic_everywhere

pytestmark = pytest.mark.integration

PYQ = str(Path(sys.executable).parent / "pyq")


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


def test_cluster_status_reports_brokers_and_partition_health(cluster_factory):
    cluster = cluster_factory(2)
    first = cluster.brokers[0]
    create_topic(first.port, "solo", partitions=2, replication_factor=1)
    create_topic(first.port, "pair", partitions=2, replication_factor=2)
    wait_for_topic_everywhere(cluster.bootstrap_servers, "solo", 2)
    wait_for_topic_everywhere(cluster.bootstrap_servers, "pair", 2)

    healthy = wait_for(lambda: (s := status(first.bootstrap_servers))
                       and "under-replicated partitions: 0" in s and s, what="a healthy cluster")
    assert "cluster id: pyq-cluster" in healthy
    assert "offline partitions: 0" in healthy
    assert table(healthy, "BROKER") == [["0", first.bootstrap_servers, "yes"],
                                        ["1", cluster.brokers[1].bootstrap_servers, "yes"]]
    controller = healthy.splitlines()[1]
    assert controller.startswith("controller: 0 ")  # the broker clients send admin requests to

    cluster.brokers[1].kill()  # kill -9: fenced after the session timeout (3 s)
    text = wait_for(lambda: (s := status(first.bootstrap_servers))
                    and "offline partitions: 0" not in s and s,
                    timeout=30, what="broker 1's partitions to go offline")
    assert table(text, "BROKER") == [["0", first.bootstrap_servers, "yes"], ["1", "-", "no"]]
    under = table(text.split("under-replicated partitions:")[1], "TOPIC")
    assert {(r[0], r[1]) for r in under} == {("pair", "0"), ("pair", "1")}
    assert all(r[4] == "0" for r in under)  # ISR: only broker 0 left
    offline = table(text.split("offline partitions:")[1], "TOPIC")
    assert len(offline) == 1 and offline[0][0] == "solo" and offline[0][2] == "-"  # no leader
    assert offline[0][3] == "1"  # its one replica was on broker 1
    assert "offline partitions: 1" in text


def test_cluster_status_help():
    out = subprocess.run([PYQ, "cluster", "status", "--help"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0
    assert "offline partitions" in out.stdout and "--bootstrap-server" in out.stdout
