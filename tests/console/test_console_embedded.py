"""The web console started beside a local cluster and stopped with it:
``EmbeddedCluster(console_port=N)`` (a client of it as the cluster's first user, here over
SASL_SSL) and ``pyq cluster start --console-port N`` (``pyq-broker cluster``'s, a child
process; on a SASL_SSL cluster with ACLs, a client of it as the admin user)."""

from __future__ import annotations

import doctest
import os
import re
import signal
import subprocess
import urllib.error
import urllib.request

import pytest

import broker_sim.cli
from connector.client import Admin
from connector.cluster import EmbeddedCluster
from connector.local_security import LocalSecurity
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
    with EmbeddedCluster(brokers=1, security="SASL_SSL", console_port=0,
                         schema_registry=True) as cluster:
        url = cluster.console_url
        assert url.startswith("http://127.0.0.1:")
        with Admin(cluster.client_options()) as admin:
            admin.create_topic("audited", 2)
        status, page = get(url + "topics")
        assert status == 200 and 'data-topic="audited"' in page  # it authenticated
        status, page = get(url + "schemas")  # the https registry: its CA, basic credentials
        assert status == 200 and 'id="global-compatibility">BACKWARD<' in page, page
        status, page = get(url + "topics/missing")
        assert status == 400 and "UnknownTopicOrPartition" in page
    with pytest.raises(urllib.error.URLError):
        get(url)  # stopped before the brokers


@pytest.mark.parametrize("port", [-1, 65536])
def test_a_console_port_out_of_range_is_refused_naming_it(port):
    with pytest.raises(ValueError, match=f"console_port={port} is not allowed: must be a port "
                                         r"0\.\.65535"):
        EmbeddedCluster(console_port=port)


PYQ_BROKER_CLUSTER = [*PYQ[:2], "broker_sim.cli", "cluster"]


def start_with_console(tmp_path, *options: str
                       ) -> tuple[subprocess.Popen[str], int, str, str]:
    """``pyq-broker cluster --console-port 0 OPTIONS``: the process, the console's pid and
    URL, and what the command printed before."""
    proc = subprocess.Popen([*PYQ_BROKER_CLUSTER, "--brokers", "1", "--data-dir",
                             str(tmp_path), "--console-port", "0", *options],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        found = re.match(r"console pid (\d+) on (http://127\.0\.0\.1:\d+/)$", line.strip())
        if found:
            return proc, int(found.group(1)), found.group(2), "".join(lines)
    proc.wait(30)
    raise AssertionError("".join(lines))


def test_pyq_broker_cluster_console_on_a_sasl_ssl_cluster_reads_as_the_admin(tmp_path):
    """ACLs on, SCRAM users admin (a super user) and alice: the console connects to the
    SASL_SSL listener as admin trusting the brokers' CA, and lists a topic alice may not
    see; a SASL listener with no user to connect as is refused at start."""
    security = LocalSecurity(tmp_path / "security", "SASL_SSL",
                             users={"alice": "alice-secret", "admin": "admin-secret"})
    overrides = {**security.broker_overrides(), "authorizer.class.name": "acl",
                 "super.users": "User:admin", "auto.create.topics.enable": "false"}
    flags = [f for name, value in overrides.items() for f in ("--override", f"{name}={value}")]
    refused = subprocess.run([*PYQ_BROKER_CLUSTER, "--data-dir", str(tmp_path / "none"),
                              "--console-port", "0", *flags], capture_output=True, text=True,
                             timeout=60)
    assert refused.returncode == 2
    assert "--console-port: listener SASL_SSL (SASL_SSL) needs a user to connect as" in \
        refused.stderr
    scram = [f for spec in security.scram_specs() for f in ("--add-scram", spec)]
    proc, console_pid, url, printed = start_with_console(tmp_path / "cluster", *flags, *scram)
    try:
        properties = tmp_path / "cluster" / "console.properties"
        assert properties.stat().st_mode & 0o777 == 0o600
        assert "sasl.username=admin" in properties.read_text()
        found = re.search(r"listener SASL_SSL://(127\.0\.0\.1:\d+)", printed)
        assert found, printed
        bootstrap = found.group(1)
        with Admin(security.client_options(bootstrap, "admin")) as admin:
            admin.create_topic("guarded", 2)
        status, page = get(url + "topics")
        assert status == 200 and 'data-topic="guarded"' in page, page
        status, page = get(url + "topics/guarded")
        assert status == 200 and "guarded" in page
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        if pid_alive(console_pid):
            os.kill(console_pid, signal.SIGKILL)


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


def test_the_console_client_examples_hold():
    result = doctest.testmod(broker_sim.cli)
    assert result.attempted >= 2 and result.failed == 0


def test_registry_options_without_a_registry_are_refused_by_pyq_console():
    out = subprocess.run([*PYQ, "console", "--bootstrap-server", "127.0.0.1:1", "--port", "0",
                          "--registry-user", "u:p"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "--registry-ca and --registry-user need --schema-registry URL" in out.stderr
