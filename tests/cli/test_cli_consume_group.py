"""``pyq consume --group``: a member of a consumer group, against a real broker — pyq's
broker process, then Apache Kafka (``broker_under_test``), the same tests on both.

Its commits are read back with ``pyq groups describe`` (and the Admin API); a run of the
same group resumes after what the previous one printed; two processes of one group share
the partitions; Ctrl-C commits and leaves the group at once.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from connector.client import Admin, Producer, TopicPartition
from tests.cli.support import PYQ, pyq_here, terminate
from tests.conftest import BrokerUnderTest
from tests.wire import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", params=["pyq", "kafka"])
def broker_under_test(request, tmp_path_factory) -> Iterator[BrokerUnderTest]:
    """A pyq broker of this module's own that starts a group's first rebalance at once
    (``group.initial.rebalance.delay.ms=0``), then the session's Apache Kafka, set so too."""
    if request.param == "kafka":
        yield BrokerUnderTest("kafka", request.getfixturevalue("kafka").bootstrap_servers)
        return
    from broker_sim.process import BrokerProcess

    proc = BrokerProcess(tmp_path_factory.mktemp("consume-group"), overrides={
        "group.initial.rebalance.delay.ms": "0", "auto.create.topics.enable": "false"}).start()
    yield BrokerUnderTest("pyq", proc.bootstrap_servers)
    proc.stop()


@pytest.fixture(scope="module")
def broker(broker_under_test):
    return broker_under_test


@pytest.fixture(scope="module")
def bootstrap(broker):
    return ["--bootstrap-server", broker.bootstrap_servers]


@pytest.fixture
def ok(monkeypatch, bootstrap):
    """``ok(*args)``: pyq in this process must succeed; returns (stdout lines, stderr)."""
    def ok(*args: str) -> tuple[list[str], str]:
        out = pyq_here(monkeypatch, *args, *bootstrap)
        assert out.returncode == 0, out.stderr
        return out.stdout.splitlines(), out.stderr
    return ok


def produce(broker, topic: str, first: int, count: int, partitions: int) -> list[str]:
    """Values ``<topic>-<p>-<i>`` written to partition p = i % partitions; returns them."""
    values = []
    with Producer(bootstrap_servers=broker.bootstrap_servers, acks="all") as producer:
        for i in range(first, first + count):
            value = f"{topic}-{i % partitions}-{i}"
            producer.send(topic, value.encode(), key=f"k{i}".encode(), partition=i % partitions)
            values.append(value)
        producer.flush()
    return values


def partition_of(value: str) -> int:
    return int(value.rsplit("-", 2)[1])


def per_partition(values: list[str], partitions: int) -> list[int]:
    return [sum(1 for v in values if partition_of(v) == p) for p in range(partitions)]


def described(ok, group: str) -> tuple[list[str], dict[int, list[str]]]:
    """``pyq groups describe G``: its summary line, and the rows by partition."""
    lines, _ = ok("groups", "describe", group)
    rows = [line.split() for line in lines[3:]]
    assert lines[2].split()[:5] == ["TOPIC", "PARTITION", "COMMITTED", "LATEST", "LAG"]
    return lines[0].split(), {int(r[1]): r for r in rows}


def test_group_consume_commits_what_it_printed_and_the_next_run_resumes_there(broker, ok):
    ok("topics", "create", "gc-orders", "--partitions", "3")
    first = produce(broker, "gc-orders", 0, 12, 3)

    # --max stops in the middle of a poll: only the printed records are committed
    printed, err = ok("consume", "gc-orders", "--group", "gc-billing", "--from-beginning", "--max", "5")
    assert err == "consumed 5 records\n"
    assert len(printed) == 5 and set(printed) <= set(first)
    counts = per_partition(printed, 3)
    summary, rows = described(ok, "gc-billing")
    assert summary[:8] == ["GROUP", "gc-billing", "TYPE", "consumer", "STATE", "Empty", "MEMBERS", "0"]
    # a partition's printed records are its first ones, so its commit is their count
    assert [rows[p][2:5] for p in sorted(rows)] == [[str(c), "4", str(4 - c)]
                                                    for p, c in enumerate(counts) if c]
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        committed = admin.fetch_offsets("gc-billing")
    assert {tp: om.offset for tp, om in committed.items()} == {
        TopicPartition("gc-orders", p): c for p, c in enumerate(counts) if c}

    # the group's commits win over --from-beginning: the rest, nothing printed twice
    rest, err = ok("consume", "gc-orders", "--group", "gc-billing", "--from-beginning",
                   "--timeout-ms", "1500", "--print-key")
    assert sorted(line.split("\t")[1] for line in rest) == sorted(set(first) - set(printed))
    assert all(line.split("\t")[0] == "k" + line.rsplit("-", 1)[1] for line in rest)
    assert err == "consumed 7 records\n"

    # a later run prints only what was produced after the previous one
    later = produce(broker, "gc-orders", 12, 6, 3)
    again, _ = ok("consume", "gc-orders", "--group", "gc-billing", "--timeout-ms", "1500")
    assert sorted(again) == sorted(later)
    summary, rows = described(ok, "gc-billing")
    assert summary[4:8] == ["STATE", "Empty", "MEMBERS", "0"]
    assert [rows[p][:5] for p in sorted(rows)] == [["gc-orders", str(p), "6", "6", "0"]
                                                   for p in range(3)]
    # another group starts on its own: latest by default (nothing), earliest when asked
    assert ok("consume", "gc-orders", "--group", "gc-audit", "--timeout-ms", "1000")[0] == []
    everything, _ = ok("consume", "gc-orders", "--group", "gc-audit-2", "--from-beginning",
                       "--timeout-ms", "1000")
    assert sorted(everything) == sorted(first + later)


def test_two_group_consumers_share_the_partitions(broker, bootstrap, tmp_path: Path):
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topic("gc-shared", 2, 1)
    outs = [tmp_path / f"out{i}" for i in range(2)]
    procs = [subprocess.Popen([*PYQ, "consume", "gc-shared", "--group", "gc-sharers",
                               "--from-beginning", "--max", "5", "--timeout-ms", "60000", *bootstrap],
                              stdout=out.open("w"), stderr=subprocess.PIPE, text=True)
             for out in outs]
    try:
        with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
            def one_partition_each() -> bool:
                d = admin.describe_groups(["gc-sharers"])["gc-sharers"]
                return d.state == "Stable" and sorted(len(m.assignment) for m in d.members) == [1, 1]
            wait_for(one_partition_each, 60, what="two members with a partition each")
        values = produce(broker, "gc-shared", 0, 10, 2)
        for proc in procs:
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
    finally:
        for proc in procs:
            terminate(proc)
    got = [out.read_text().splitlines() for out in outs]
    # each process printed exactly the records of one partition, the two partitions between them
    assert sorted(sorted(lines) for lines in got) == [
        sorted(v for v in values if partition_of(v) == p) for p in range(2)]
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        d = admin.describe_groups(["gc-sharers"])["gc-sharers"]
        committed = admin.fetch_offsets("gc-sharers")
    assert (d.state, d.members) == ("Empty", [])
    assert {tp.partition: om.offset for tp, om in committed.items()} == {0: 5, 1: 5}


def test_ctrl_c_commits_what_was_printed_and_leaves_the_group(broker, bootstrap, tmp_path: Path):
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topic("gc-live", 2, 1)
        # the group starts at 0 (its commits), however late the consumer gets going
        admin.commit_offsets("gc-live", {("gc-live", 0): 0, ("gc-live", 1): 0})
    out = tmp_path / "out"
    proc = subprocess.Popen([*PYQ, "consume", "gc-live", "--group", "gc-live", "--timeout-ms", "60000",
                             *bootstrap], stdout=out.open("w"), stderr=subprocess.PIPE, text=True)
    try:
        sent: list[str] = []
        deadline = time.monotonic() + 60
        while len(out.read_text().splitlines()) < 3:  # it prints records as they come
            assert time.monotonic() < deadline and proc.poll() is None, out.read_text()
            sent += produce(broker, "gc-live", len(sent), 1, 2)
            time.sleep(0.1)
        with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
            d = admin.describe_groups(["gc-live"])["gc-live"]
            assert (d.state, [len(m.assignment) for m in d.members]) == ("Stable", [2])
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
            assert proc.returncode == 0, err  # as kcat: a signal ends it cleanly
            assert err.endswith("records\n"), err
            # it left the group: no member waits out its 45 s session timeout
            d = admin.describe_groups(["gc-live"])["gc-live"]
            assert (d.state, d.members) == ("Empty", [])
            committed = admin.fetch_offsets("gc-live")
    finally:
        terminate(proc)
    printed = out.read_text().splitlines()
    assert len(printed) >= 3 and set(printed) <= set(sent)
    assert {tp.partition: om.offset for tp, om in committed.items()} == dict(
        enumerate(per_partition(printed, 2)))


def test_partition_and_conflicting_options_with_group_are_refused(monkeypatch):
    cases = [
        (["--partition", "1"], "pyq consume: error: --partition cannot be used with --group: "
                               "the group 'g' assigns the partitions"),
        (["-X", "group.id=other"], "pyq consume: error: --group 'g' conflicts with the client "
                                   "option group.id='other'"),
        (["--from-beginning", "-X", "auto.offset.reset=latest"],
         "pyq consume: error: --from-beginning conflicts with the client option "
         "auto.offset.reset='latest'"),
    ]
    for extra, message in cases:
        # refused before connecting: no broker listens on this address
        out = pyq_here(monkeypatch, "consume", "t", "--group", "g", *extra,
                       "--bootstrap-server", "127.0.0.1:1")
        assert (out.returncode, out.stdout) == (1, "")
        assert out.stderr.startswith(message), out.stderr
        assert len(out.stderr.splitlines()) == 1
