"""The pyq-broker command: one broker, or a whole local cluster with one command."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

from tests.cli.support import pid_alive
from tests.wire import partition_states, wait_for

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("sub", [[], ["controller"], ["cluster"]])
def test_help(sub):
    out = subprocess.run([sys.executable, "-m", "broker_sim", *sub, "--help"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0
    assert "usage: pyq-broker" in out.stdout


def test_invalid_override_names_the_option(tmp_path):
    out = subprocess.run([sys.executable, "-m", "broker_sim", "--data-dir", str(tmp_path),
                          "--override", "num.io.threads=0"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "num.io.threads=0 is not allowed: must be at least 1" in out.stderr


@pytest.mark.cluster  # starts controller + broker processes
def test_cluster_command_starts_and_stops_every_process(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "broker_sim", "cluster", "--brokers", "3",
                             "--data-dir", str(tmp_path)], stdout=subprocess.PIPE, text=True)
    lines = []
    try:
        while True:
            line = proc.stdout.readline()
            assert line, "the cluster command exited early:\n" + "".join(lines)
            lines.append(line)
            if line.startswith("bootstrap servers:"):
                break
        bootstrap = line.split(":", 1)[1].strip()
        pids = [int(m.group(1)) for m in re.finditer(r"pid (\d+)", "".join(lines))]
        assert len(pids) == 6  # a quorum of 3 controllers (the default with 3 brokers) + 3 brokers
        assert len(bootstrap.split(",")) == 3

        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic("cli-topic", 3, 3)])
        admin.close()
        port = int(bootstrap.split(",")[0].rsplit(":", 1)[1])
        wait_for(lambda: all(len(isr) == 3 for _, isr, _ in partition_states(port, "cli-topic").values())
                 and len(partition_states(port, "cli-topic")) == 3, what="3 replicas in sync")
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=False)
        md = producer.send("cli-topic", b"hello", partition=1).get(timeout=30)
        producer.close()
        assert md.offset == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    assert proc.returncode == 0
    deadline = time.monotonic() + 10
    while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(pid_alive(p) for p in pids), "a child process outlived the cluster command"
