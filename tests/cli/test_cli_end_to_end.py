"""``pyq`` against a real broker: topics, produce, consume, lag — on pyq's broker process,
then on Apache Kafka (``broker_under_test``), the same tests on both. The broker is the
module's (the session's, on Kafka), so each test has topics and groups of its own and
looks at those among whatever else the broker holds.

The produce-then-consume pipeline and the live consumer run ``pyq`` as separate processes
(real stdin and stdout); the other commands run ``main()`` in this process, for speed.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from connector.client import Admin, OffsetAndMetadata
from tests.cli.support import PYQ, pyq, pyq_here, terminate

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def broker(broker_under_test):
    return broker_under_test


@pytest.fixture(scope="module")
def bootstrap(broker):
    return ["--bootstrap-server", broker.bootstrap_servers]


@pytest.fixture(scope="module")
def node(broker) -> str:
    """The broker's node id as the CLI prints it (pyq's broker is 0, Kafka's node 1)."""
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        [only] = admin.describe_cluster().brokers
    return str(only.node_id)


@pytest.fixture
def run(monkeypatch):
    """``run(*args, input=...)``: pyq in this process -> (returncode, stdout, stderr)."""
    return lambda *args, input="": pyq_here(monkeypatch, *args, input=input)


@pytest.fixture
def ok(run):
    """``ok(*args, input=...)``: pyq in this process must succeed; returns its stdout."""
    def ok(*args: str, input: str = "") -> str:
        out = run(*args, input=input)
        assert out.returncode == 0, out.stderr
        return out.stdout
    return ok


def table(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


def test_topics_create_list_describe_delete(bootstrap, node, ok, run):
    events, audit = "e2e-events", "e2e-audit"

    def listed() -> list[str]:
        names = ok("topics", "list", *bootstrap).splitlines()
        assert names == sorted(names)  # one name a line, in order
        return names

    assert ok("topics", "create", events, "--partitions", "3", "--replication-factor", "1",
              "--config", "retention.ms=3600000", *bootstrap) == f"created topic {events}\n"
    assert ok("topics", "create", audit, *bootstrap) == f"created topic {audit}\n"
    assert {audit, events} <= set(listed())

    again = run("topics", "create", events, *bootstrap)
    assert again.returncode == 1
    assert again.stderr.startswith("pyq topics create: error: TopicAlreadyExists: ")
    assert len(again.stderr.splitlines()) == 1
    ok("topics", "create", events, "--if-not-exists", *bootstrap)

    ok("produce", events, "--partition", "2", *bootstrap, input="x\ny\n")
    assert table(ok("topics", "describe", events, *bootstrap)) == [
        ["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "EARLIEST", "LATEST"],
        [events, "0", node, node, node, "0", "0"],
        [events, "1", node, node, node, "0", "0"],
        [events, "2", node, node, node, "0", "2"],
    ]
    assert ok("topics", "alter", events, "--partitions", "4", *bootstrap) == \
        f"topic {events} now has 4 partitions\n"
    assert [row[1] for row in table(ok("topics", "describe", events, *bootstrap))[1:]] == \
        ["0", "1", "2", "3"]
    fewer = run("topics", "alter", events, "--partitions", "2", *bootstrap)
    assert fewer.returncode == 1 and fewer.stderr.startswith(
        "pyq topics alter: error: InvalidPartitions: ")
    every = table(ok("topics", "describe", *bootstrap))[1:]  # every topic, in order
    assert [(row[0], int(row[1])) for row in every] == sorted((row[0], int(row[1])) for row in every)
    assert [row[:2] for row in every if row[0] in (audit, events)] == [
        [audit, "0"], [events, "0"], [events, "1"], [events, "2"], [events, "3"]]

    assert ok("topics", "delete", audit, *bootstrap) == f"deleted topic {audit}\n"
    assert audit not in listed() and events in listed()
    for args in (["topics", "describe", audit], ["topics", "delete", audit]):
        gone = run(*args, *bootstrap)
        assert gone.returncode == 1
        assert len(gone.stderr.splitlines()) == 1
        assert f"'{audit}'" in gone.stderr
    assert run("topics", "describe", audit, *bootstrap).stderr == \
        f"pyq topics describe: error: topic '{audit}' does not exist\n"
    ok("topics", "delete", audit, "--if-exists", *bootstrap)


def test_produce_lines_then_consume_them_from_the_beginning(bootstrap, ok):
    ok("topics", "create", "e2e-lines", "--partitions", "1", *bootstrap)
    lines = "first\nuser-7\tclicked\nthird line\tmore\tcolumns\n\nlast\n"
    out = pyq("produce", "e2e-lines", *bootstrap, input=lines)  # a real process, real stdin
    assert out.returncode == 0, out.stderr
    assert out.stderr == "sent 5 records to e2e-lines\n"

    out = pyq("consume", "e2e-lines", "--from-beginning", "--max", "5", *bootstrap)
    assert (out.returncode, out.stdout, out.stderr) == (
        0, "first\nclicked\nmore\tcolumns\n\nlast\n", "consumed 5 records\n")
    assert ok("consume", "e2e-lines", "--from-beginning", "--max", "3", "--print-key",
              *bootstrap) == "null\tfirst\nuser-7\tclicked\nthird line\tmore\tcolumns\n"
    # --max larger than the topic: stops when nothing arrives for --timeout-ms
    assert ok("consume", "e2e-lines", "--from-beginning", "--max", "100", "--timeout-ms", "300",
              *bootstrap).splitlines() == ["first", "clicked", "more\tcolumns", "", "last"]


def test_produce_with_other_separators_and_partitions(bootstrap, ok, run):
    ok("topics", "create", "e2e-kv", "--partitions", "2", *bootstrap)
    ok("produce", "e2e-kv", "--key-separator", ":", "--partition", "1", "--acks", "1",
       "--compression-type", "gzip", *bootstrap, input="a:1\nb:2\nno separator\n")
    ok("produce", "e2e-kv", "--no-key", "--partition", "0", *bootstrap, input="c:3\n")
    assert ok("consume", "e2e-kv", "--partition", "1", "--from-beginning", "--print-key",
              "--timeout-ms", "300", *bootstrap) == "a\t1\nb\t2\nnull\tno separator\n"
    assert ok("consume", "e2e-kv", "--partition", "0", "--from-beginning", "--print-key",
              "--timeout-ms", "300", *bootstrap) == "null\tc:3\n"
    missing = run("consume", "e2e-kv", "--partition", "5", *bootstrap)
    assert (missing.returncode, missing.stderr) == (
        1, "pyq consume: error: --partition 5: topic 'e2e-kv' has partitions 0..1\n")


def test_consume_without_from_beginning_prints_only_new_records(bootstrap, ok):
    ok("topics", "create", "e2e-live", "--partitions", "2", *bootstrap)
    ok("produce", "e2e-live", *bootstrap, input="old-1\nold-2\n")
    assert ok("consume", "e2e-live", "--timeout-ms", "200", *bootstrap) == ""

    consumer = subprocess.Popen([*PYQ, "consume", "e2e-live", "--max", "2", "--timeout-ms", "30000",
                                 *bootstrap], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    try:
        # Keep producing until the consumer has seen two records, whenever it got going.
        for i in range(200):
            if consumer.poll() is not None:
                break
            ok("produce", "e2e-live", *bootstrap, input=f"new-{i}\n")
        out, err = consumer.communicate(timeout=30)
    finally:
        terminate(consumer)
    assert consumer.returncode == 0, err
    got = out.splitlines()
    assert len(got) == 2 and all(line.startswith("new-") for line in got), out


def test_lag_shows_committed_latest_lag_and_json_counters(broker, bootstrap, node, ok, run):
    ok("topics", "create", "e2e-clicks", "--partitions", "3", *bootstrap)
    for partition, count in ((0, 5), (1, 2)):
        ok("produce", "e2e-clicks", "--partition", str(partition), *bootstrap,
           input="".join(f"r{i}\n" for i in range(count)))
    counters = {"query": "q-7", "skipped": 1, "lost": 0, "retried": 4, "dead_lettered": 2}
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.commit_offsets("e2e-spark-q", {("e2e-clicks", 0): OffsetAndMetadata(3, json.dumps(counters)),
                                         ("e2e-clicks", 1): OffsetAndMetadata(2, "not json")})

    shown = table(ok("lag", "--group", "e2e-spark-q", *bootstrap))
    assert shown[:2] == [["GROUP", "e2e-spark-q", "TYPE", "simple", "STATE", "Empty", "MEMBERS", "0",
                          "COORDINATOR", node], []]
    assert shown[2:] == [
        ["TOPIC", "PARTITION", "COMMITTED", "LATEST", "LAG", "QUERY", "SKIPPED", "LOST",
         "RETRIED", "DEAD_LETTERED"],
        ["e2e-clicks", "0", "3", "5", "2", "q-7", "1", "0", "4", "2"],
        ["e2e-clicks", "1", "2", "2", "0", "-", "-", "-", "-", "-"],
    ]
    # --topic lists every partition of the topic, committed or not
    assert table(ok("lag", "--group", "e2e-spark-q", "--topic", "e2e-clicks", *bootstrap))[3:] == [
        ["e2e-clicks", "0", "3", "5", "2", "q-7", "1", "0", "4", "2"],
        ["e2e-clicks", "1", "2", "2", "0", "-", "-", "-", "-", "-"],
        ["e2e-clicks", "2", "-", "0", "-", "-", "-", "-", "-", "-"],
    ]
    nothing = run("lag", "--group", "e2e-nobody", *bootstrap)
    assert (nothing.returncode, nothing.stderr) == (
        1, "pyq lag: error: group 'e2e-nobody' has no committed offsets\n")
