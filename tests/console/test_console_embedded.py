"""The web console started beside a local cluster and stopped with it:
``EmbeddedCluster(console_port=N)`` (a client of it as the cluster's first user, here over
SASL_SSL) and ``pyq cluster start --console-port N`` (``pyq-broker cluster``'s, a child
process)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import urllib.error
import urllib.request

import pytest

from connector.client import Admin
from connector.cluster import EmbeddedCluster
from tests.cli.support import PYQ, pid_alive
from tests.wire import wait_for

pytestmark = pytest.mark.cluster


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_the_console_serves_a_secured_cluster_beside_it_and_stops_with_it():
    with EmbeddedCluster(brokers=1, security="SASL_SSL", console_port=0) as cluster:
        url = cluster.console_url
        assert url.startswith("http://127.0.0.1:")
        with Admin(cluster.client_options()) as admin:
            admin.create_topic("audited", 2)
        status, page = get(url + "topics")
        assert status == 200 and 'data-topic="audited"' in page  # it authenticated
        status, page = get(url + "topics/missing")
        assert status == 400 and "UnknownTopicOrPartition" in page
    with pytest.raises(urllib.error.URLError):
        get(url)  # stopped before the brokers


@pytest.mark.parametrize("port", [-1, 65536])
def test_a_console_port_out_of_range_is_refused_naming_it(port):
    with pytest.raises(ValueError, match=f"console_port={port} is not allowed: must be a port "
                                         r"0\.\.65535"):
        EmbeddedCluster(console_port=port)


def test_pyq_cluster_start_serves_the_console_as_a_child_and_stops_it(tmp_path):
    proc = subprocess.Popen([*PYQ, "cluster", "start", "--brokers", "1", "--data-dir",
                             str(tmp_path), "--console-port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    console_pid = None
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            found = re.match(r"console pid (\d+) on (http://127\.0\.0\.1:\d+/)$", line.strip())
            if found:
                break
        assert found, "".join(lines)
        console_pid, url = int(found.group(1)), found.group(2)
        status, page = get(url)
        assert status == 200 and 'data-broker="0"' in page
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        wait_for(lambda: not pid_alive(console_pid), what="the console stopped with the cluster")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if console_pid is not None and pid_alive(console_pid):
            os.kill(console_pid, signal.SIGKILL)


def test_a_console_port_out_of_range_is_refused_by_pyq_broker_cluster(tmp_path):
    out = subprocess.run([*PYQ[:2], "broker_sim.cli", "cluster", "--data-dir", str(tmp_path),
                          "--console-port", "70000"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "--console-port 70000 is not allowed: must be a port 0..65535" in out.stderr
