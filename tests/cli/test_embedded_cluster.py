"""EmbeddedCluster and ``pyq cluster start``: real controller and broker processes, all of
them gone when the cluster stops, and a temporary data directory removed with them."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from connector.client import Admin
from connector.cluster import EmbeddedCluster
from tests.cli.support import PYQ, pid_alive, pyq, pyq_here, terminate

pytestmark = [pytest.mark.integration, pytest.mark.cluster]  # starts controller + broker processes


def wait_gone(pids: list[int], timeout: float = 10.0) -> list[int]:
    """The pids still alive after up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if pid_alive(p)]


def test_embedded_cluster_starts_three_brokers_and_stops_every_process():
    with EmbeddedCluster(brokers=3) as cluster:
        pids = cluster.pids()
        data_dir = cluster.data_dir
        assert len(set(pids)) == 4 and all(pid_alive(p) for p in pids)  # controller + 3
        assert data_dir.is_dir()
        assert len(cluster.bootstrap_servers.split(",")) == 3
        assert [cluster.broker(i).broker_id for i in range(3)] == [0, 1, 2]
        with pytest.raises(IndexError, match="brokers 0..2"):
            cluster.broker(3)
        with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
            assert [b.node_id for b in admin.describe_cluster().brokers] == [0, 1, 2]
            admin.create_topic("replicated", num_partitions=2, replication_factor=3)
            partitions = admin.describe_topics(["replicated"])["replicated"].partitions
            assert [len(p.replicas) for p in partitions] == [3, 3]
    assert wait_gone(pids) == []
    assert not data_dir.exists()
    with pytest.raises(RuntimeError, match="not running"):
        cluster.pids()


def test_stop_and_start_keep_the_data_of_a_given_directory(tmp_path):
    cluster = EmbeddedCluster(brokers=1, data_dir=tmp_path / "c")
    with cluster:
        with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
            admin.create_topic("kept")
        first = cluster.pids()
        cluster.stop()
        assert wait_gone(first) == []
        assert not cluster.running
        cluster.start()
        assert cluster.start() is cluster  # already running: nothing new starts
        with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
            assert "kept" in admin.list_topics()
        second = cluster.pids()
    assert wait_gone(second) == []
    assert (tmp_path / "c" / "controller").is_dir()  # a given directory is never deleted


def test_pyq_cluster_start_runs_until_sigterm_and_cleans_up(monkeypatch):
    proc = subprocess.Popen([*PYQ, "cluster", "start", "--brokers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        while not (lines and lines[-1].startswith("bootstrap servers:")):
            line = proc.stdout.readline()
            assert line, "pyq cluster start exited early:\n" + "".join(lines) + proc.stderr.read()
            lines.append(line)
        output = "".join(lines)
        data_dir = Path(re.search(r"^data directory: (\S+) \(temporary\)$", output, re.M)[1])
        pids = [int(p) for p in re.findall(r"pid (\d+)", output)]
        bootstrap = lines[-1].split(":", 1)[1].strip()
        assert len(pids) == 3 and len(bootstrap.split(",")) == 2
        created = pyq_here(monkeypatch, "topics", "create", "t", "--bootstrap-server",
                           bootstrap)
        assert created.returncode == 0, created.stderr
        assert data_dir.is_dir()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        terminate(proc)
    assert proc.returncode == 0, err
    assert "cluster stopped" in out
    assert wait_gone(pids) == []
    assert not data_dir.exists()


def test_pyq_cluster_start_with_a_bad_broker_option_fails_with_one_line(tmp_path):
    out = pyq("cluster", "start", "--brokers", "1", "--data-dir", str(tmp_path),
              "--override", "num.io.threads=0")
    assert out.returncode == 1
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("pyq cluster start: error: a cluster process did not start: ")
    assert "num.io.threads=0 is not allowed" in lines[0]
