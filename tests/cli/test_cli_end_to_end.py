"""``pyq`` against a real broker process: topics, produce, consume, lag.

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


@pytest.fixture
def broker(broker_factory):
    return broker_factory()


@pytest.fixture
def bootstrap(broker):
    return ["--bootstrap-server", broker.bootstrap_servers]


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


def test_topics_create_list_describe_delete(bootstrap, ok, run):
    assert ok("topics", "create", "events", "--partitions", "3", "--replication-factor", "1",
              "--config", "retention.ms=3600000", *bootstrap) == "created topic events\n"
    assert ok("topics", "create", "audit", *bootstrap) == "created topic audit\n"
    assert ok("topics", "list", *bootstrap) == "audit\nevents\n"

    again = run("topics", "create", "events", *bootstrap)
    assert again.returncode == 1
    assert again.stderr.startswith("pyq topics create: error: TopicAlreadyExists: ")
    assert len(again.stderr.splitlines()) == 1
    ok("topics", "create", "events", "--if-not-exists", *bootstrap)

    ok("produce", "events", "--partition", "2", *bootstrap, input="x\ny\n")
    assert table(ok("topics", "describe", "events", *bootstrap)) == [
        ["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "EARLIEST", "LATEST"],
        ["events", "0", "0", "0", "0", "0", "0"],
        ["events", "1", "0", "0", "0", "0", "0"],
        ["events", "2", "0", "0", "0", "0", "2"],
    ]
    assert ok("topics", "alter", "events", "--partitions", "4", *bootstrap) == \
        "topic events now has 4 partitions\n"
    assert [row[1] for row in table(ok("topics", "describe", "events", *bootstrap))[1:]] == \
        ["0", "1", "2", "3"]
    fewer = run("topics", "alter", "events", "--partitions", "2", *bootstrap)
    assert fewer.returncode == 1 and fewer.stderr.startswith(
        "pyq topics alter: error: InvalidPartitions: ")
    every = table(ok("topics", "describe", *bootstrap))
    assert [row[:2] for row in every[1:]] == [["audit", "0"], ["events", "0"], ["events", "1"],
                                              ["events", "2"], ["events", "3"]]

    assert ok("topics", "delete", "audit", *bootstrap) == "deleted topic audit\n"
    assert ok("topics", "list", *bootstrap) == "events\n"
    for args in (["topics", "describe", "audit"], ["topics", "delete", "audit"]):
        gone = run(*args, *bootstrap)
        assert gone.returncode == 1
        assert len(gone.stderr.splitlines()) == 1
        assert "'audit'" in gone.stderr
    assert run("topics", "describe", "audit", *bootstrap).stderr == \
        "pyq topics describe: error: topic 'audit' does not exist\n"
    ok("topics", "delete", "audit", "--if-exists", *bootstrap)


def test_produce_lines_then_consume_them_from_the_beginning(bootstrap, ok):
    ok("topics", "create", "lines", "--partitions", "1", *bootstrap)
    lines = "first\nuser-7\tclicked\nthird line\tmore\tcolumns\n\nlast\n"
    out = pyq("produce", "lines", *bootstrap, input=lines)  # a real process, real stdin
    assert out.returncode == 0, out.stderr
    assert out.stderr == "sent 5 records to lines\n"

    out = pyq("consume", "lines", "--from-beginning", "--max", "5", *bootstrap)
    assert (out.returncode, out.stdout, out.stderr) == (
        0, "first\nclicked\nmore\tcolumns\n\nlast\n", "consumed 5 records\n")
    assert ok("consume", "lines", "--from-beginning", "--max", "3", "--print-key",
              *bootstrap) == "null\tfirst\nuser-7\tclicked\nthird line\tmore\tcolumns\n"
    # --max larger than the topic: stops when nothing arrives for --timeout-ms
    assert ok("consume", "lines", "--from-beginning", "--max", "100", "--timeout-ms", "300",
              *bootstrap).splitlines() == ["first", "clicked", "more\tcolumns", "", "last"]


def test_produce_with_other_separators_and_partitions(bootstrap, ok, run):
    ok("topics", "create", "kv", "--partitions", "2", *bootstrap)
    ok("produce", "kv", "--key-separator", ":", "--partition", "1", "--acks", "1",
       "--compression-type", "gzip", *bootstrap, input="a:1\nb:2\nno separator\n")
    ok("produce", "kv", "--no-key", "--partition", "0", *bootstrap, input="c:3\n")
    assert ok("consume", "kv", "--partition", "1", "--from-beginning", "--print-key",
              "--timeout-ms", "300", *bootstrap) == "a\t1\nb\t2\nnull\tno separator\n"
    assert ok("consume", "kv", "--partition", "0", "--from-beginning", "--print-key",
              "--timeout-ms", "300", *bootstrap) == "null\tc:3\n"
    missing = run("consume", "kv", "--partition", "5", *bootstrap)
    assert (missing.returncode, missing.stderr) == (
        1, "pyq consume: error: --partition 5: topic 'kv' has partitions 0..1\n")


def test_consume_without_from_beginning_prints_only_new_records(bootstrap, ok):
    ok("topics", "create", "live", "--partitions", "2", *bootstrap)
    ok("produce", "live", *bootstrap, input="old-1\nold-2\n")
    assert ok("consume", "live", "--timeout-ms", "200", *bootstrap) == ""

    consumer = subprocess.Popen([*PYQ, "consume", "live", "--max", "2", "--timeout-ms", "30000",
                                 *bootstrap], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    try:
        # Keep producing until the consumer has seen two records, whenever it got going.
        for i in range(200):
            if consumer.poll() is not None:
                break
            ok("produce", "live", *bootstrap, input=f"new-{i}\n")
        out, err = consumer.communicate(timeout=30)
    finally:
        terminate(consumer)
    assert consumer.returncode == 0, err
    got = out.splitlines()
    assert len(got) == 2 and all(line.startswith("new-") for line in got), out


def test_lag_shows_committed_latest_lag_and_json_counters(broker, bootstrap, ok, run):
    ok("topics", "create", "clicks", "--partitions", "3", *bootstrap)
    for partition, count in ((0, 5), (1, 2)):
        ok("produce", "clicks", "--partition", str(partition), *bootstrap,
           input="".join(f"r{i}\n" for i in range(count)))
    counters = {"query": "q-7", "skipped": 1, "lost": 0, "retried": 4, "dead_lettered": 2}
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.commit_offsets("spark-q", {("clicks", 0): OffsetAndMetadata(3, json.dumps(counters)),
                                         ("clicks", 1): OffsetAndMetadata(2, "not json")})

    shown = table(ok("lag", "--group", "spark-q", *bootstrap))
    assert shown[:2] == [["GROUP", "spark-q", "TYPE", "simple", "STATE", "Empty", "MEMBERS", "0",
                          "COORDINATOR", "0"], []]
    assert shown[2:] == [
        ["TOPIC", "PARTITION", "COMMITTED", "LATEST", "LAG", "QUERY", "SKIPPED", "LOST",
         "RETRIED", "DEAD_LETTERED"],
        ["clicks", "0", "3", "5", "2", "q-7", "1", "0", "4", "2"],
        ["clicks", "1", "2", "2", "0", "-", "-", "-", "-", "-"],
    ]
    # --topic lists every partition of the topic, committed or not
    assert table(ok("lag", "--group", "spark-q", "--topic", "clicks", *bootstrap))[3:] == [
        ["clicks", "0", "3", "5", "2", "q-7", "1", "0", "4", "2"],
        ["clicks", "1", "2", "2", "0", "-", "-", "-", "-", "-"],
        ["clicks", "2", "-", "0", "-", "-", "-", "-", "-", "-"],
    ]
    nothing = run("lag", "--group", "nobody", *bootstrap)
    assert (nothing.returncode, nothing.stderr) == (
        1, "pyq lag: error: group 'nobody' has no committed offsets\n")
