"""``pyq consume`` follows by default (kcat ``-C`` without ``-e``, ``rpk topic consume``):
the installed command, on pyq's broker and on Apache Kafka (``broker_under_test``).

It prints records that arrive after a silence longer than the old 5 s stop, reads several
topics and the topics ``--regex`` matches, and ends on SIGINT or SIGTERM with exit code 0
and ``consumed N records`` on stderr, as kcat does; ``-e``/``--exit`` ends it at the end
of every partition, ``-c N`` after N records.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from connector.client import Admin, NewTopic, Producer
from tests.cli.support import pyq_here
from tests.wire import wait_for

pytestmark = pytest.mark.integration

PYQ = str(Path(sys.executable).parent / "pyq")  # the console script pip installed
OLD_IDLE_STOP_S = 5.0  # pyq consume used to stop after 5 s without a record


@pytest.fixture(scope="module")
def broker(broker_under_test):
    return broker_under_test.bootstrap_servers


@pytest.fixture(scope="module")
def topics(broker) -> list[str]:
    """fl-a (2 partitions), fl-re-1 and fl-re-2 (1 each), each holding 2 records."""
    names = {"fl-a": 2, "fl-re-1": 1, "fl-re-2": 1}
    with Admin(bootstrap_servers=broker) as admin:
        admin.create_topics([NewTopic(t, n, 1) for t, n in names.items()])
    for topic in names:
        send(broker, topic, [f"{topic}:old-0", f"{topic}:old-1"])
    return list(names)


def send(broker: str, topic: str, values: list[str]) -> None:
    with Producer(bootstrap_servers=broker, acks="all") as producer:
        for value in values:
            producer.send(topic, value.encode(), partition=0)
        producer.flush()


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_follows_several_topics_until_interrupted(broker, topics, tmp_path, stop):
    out = tmp_path / "out"
    proc = subprocess.Popen([PYQ, "consume", "fl-a", "--regex", "fl-re-.*", "-o", "beginning",
                             "-f", r"%t %s\n", "--bootstrap-server", broker],
                            stdout=out.open("w"), stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(lines(out)) >= 6, what="the records there are")
        if stop == signal.SIGINT:  # once is enough: a record after a long silence is printed
            time.sleep(OLD_IDLE_STOP_S + 0.5)
        new = f"fl-re-2:new-{stop.name}"
        send(broker, "fl-re-2", [new])
        wait_for(lambda: f"fl-re-2 {new}" in lines(out), what="the new record")
        assert proc.poll() is None
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == 0, err
    printed = lines(out)
    assert err == f"consumed {len(printed)} records\n"
    assert {f"{t} {t}:old-{i}" for t in topics for i in range(2)} | {f"fl-re-2 {new}"} <= \
        set(printed)
    assert len(printed) == len(set(printed))


@pytest.mark.parametrize("exit_flag", ["-e", "--exit"])
def test_exit_at_end_of_several_topics(broker, topics, exit_flag):
    out = subprocess.run([PYQ, "consume", "fl-a", "fl-re-1", exit_flag, "-o", "beginning",
                          "-f", r"%t:%p:%o\n", "--bootstrap-server", broker],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["fl-a:0:0", "fl-a:0:1", "fl-re-1:0:0", "fl-re-1:0:1"]
    assert out.stderr == "consumed 4 records\n"


def test_a_group_reads_several_topics_and_exits_at_end(broker, topics):
    out = subprocess.run([PYQ, "consume", "--regex", "fl-re-[12]", "--group", "fl-g", "-e",
                          "--from-beginning", "-f", r"%t %s\n", "--bootstrap-server", broker],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert {line.split()[0] for line in out.stdout.splitlines()} == {"fl-re-1", "fl-re-2"}
    with Admin(bootstrap_servers=broker) as admin:
        committed = {tp.topic: om.offset for tp, om in admin.fetch_offsets("fl-g").items()}
    assert committed["fl-re-1"] == 2 and committed["fl-re-2"] >= 2


@pytest.mark.parametrize(("args", "message"), [
    ([], "pyq consume: error: name a TOPIC (or several), or give --regex PATTERN"),
    (["--regex", "fl-("], "argument --regex: 'fl-(' is not a regular expression"),
    (["--regex", "no-such-.*"], "pyq consume: error: --regex 'no-such-.*' matches no topic"),
    (["fl-a", "fl-re-1", "-p", "0"], "pyq consume: error: --partition 0 needs a single topic"),
])
def test_topic_choice_errors_are_one_line(monkeypatch, broker, topics, args, message):
    out = pyq_here(monkeypatch, "consume", *args, "-e", "--bootstrap-server", broker)
    assert out.returncode in (1, 2)
    assert message in out.stderr, out.stderr
    assert len(out.stderr.splitlines()) == 1
