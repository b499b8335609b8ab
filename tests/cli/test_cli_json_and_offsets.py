"""``--format json`` / ``-J`` on the list and describe commands (one JSON document on
stdout, parsed here), ``pyq offsets`` (kcat's ``-Q``) and ``pyq groups delete-offsets``
(OffsetDelete): on pyq's broker process, then on Apache Kafka (``broker_under_test``).
The secured commands' JSON (users, ACLs) is in ``test_cli_secured.py``, the registry's in
``test_cli_schemas.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from connector.client import Admin, Consumer, NewTopic, Producer, TopicPartition
from tests.cli.support import pyq_here
from tests.wire import wait_for

pytestmark = pytest.mark.integration

PYQ = str(Path(sys.executable).parent / "pyq")  # the console script pip installed
BASE_TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def bootstrap(broker_under_test) -> str:
    return broker_under_test.bootstrap_servers


@pytest.fixture(scope="module")
def stamped(bootstrap: str) -> str:
    """Topic ``js-stamped``: partition 0 holds 5 records stamped BASE_TS + i*1000, partition 1
    holds 2 stamped BASE_TS + i*1000."""
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic("js-stamped", 2, 1)])
    with Producer(bootstrap_servers=bootstrap, acks="all") as producer:
        for partition, count in ((0, 5), (1, 2)):
            for i in range(count):
                producer.send("js-stamped", b"v", partition=partition, timestamp=BASE_TS + i * 1000)
        producer.flush()
    return "js-stamped"


def installed(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYQ, *args], capture_output=True, text=True, timeout=60)


def document(monkeypatch, *args: str) -> object:
    """``pyq ARGS --format json``'s stdout, which must be exactly one JSON document."""
    out = pyq_here(monkeypatch, *args, "--format", "json")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("\n") == 1, out.stdout  # one line
    return json.loads(out.stdout)


@pytest.mark.parametrize(("time", "expected"), [
    ([], [[0, 5, None], [1, 2, None]]),                                  # latest, the default
    (["--time", "-1"], [[0, 5, None], [1, 2, None]]),
    (["--time", "-2"], [[0, 0, None], [1, 0, None]]),
    (["--time", "earliest"], [[0, 0, None], [1, 0, None]]),
    (["--time", str(BASE_TS + 1500)], [[0, 2, BASE_TS + 2000], [1, -1, None]]),
    (["--time", str(BASE_TS)], [[0, 0, BASE_TS], [1, 0, BASE_TS]]),
    (["--time", str(BASE_TS + 3000), "-p", "0"], [[0, 3, BASE_TS + 3000]]),
])
def test_offsets_for_a_time_latest_earliest(bootstrap, stamped, time, expected):
    """The installed ``pyq offsets``: the text table and ``-J`` agree with kcat -Q's answers
    (-1 when no record is that late)."""
    text = installed("offsets", stamped, *time, "--bootstrap-server", bootstrap)
    assert text.returncode == 0, text.stderr
    lines = [line.split() for line in text.stdout.splitlines()]
    assert lines[0] == ["TOPIC", "PARTITION", "OFFSET", "TIMESTAMP"]
    assert lines[1:] == [[stamped, str(p), str(o), "-" if ts is None else str(ts)]
                         for p, o, ts in expected]
    as_json = installed("offsets", stamped, *time, "-J", "--bootstrap-server", bootstrap)
    assert json.loads(as_json.stdout) == [
        {"topic": stamped, "partition": p, "offset": o, "timestamp": ts} for p, o, ts in expected]


@pytest.mark.parametrize(("args", "message"), [
    (["--time", "-3"], "argument --time: '-3' is not allowed: must be a time in ms since the "
                       "epoch, -1 (latest) or -2 (earliest)"),
    (["-p", "7"], "pyq offsets: error: -p 7: topic 'js-stamped' has partitions 0..1"),
    (["--format", "yaml"], "argument --format: invalid choice: 'yaml'"),
])
def test_offsets_errors_are_one_line(monkeypatch, bootstrap, stamped, args, message):
    out = pyq_here(monkeypatch, "offsets", stamped, *args, "--bootstrap-server", bootstrap)
    assert out.returncode in (1, 2) and message in out.stderr, out.stderr
    assert len(out.stderr.splitlines()) == 1


def test_topics_cluster_and_configs_as_json(monkeypatch, bootstrap, stamped):
    conn = ("--bootstrap-server", bootstrap)
    assert stamped in document(monkeypatch, "topics", "list", *conn)
    described = document(monkeypatch, "topics", "describe", stamped, *conn)
    assert [(p["topic"], p["partition"], p["earliest"], p["latest"], len(p["replicas"]))
            for p in described] == [(stamped, 0, 0, 5, 1), (stamped, 1, 0, 2, 1)]
    assert all(p["isr"] == p["replicas"] == [p["leader"]] for p in described)

    status = document(monkeypatch, "cluster", "status", *conn)
    assert [b["alive"] for b in status["brokers"]] == [True]
    assert status["controller"] is None or isinstance(status["controller"], int)
    assert status["under_replicated"] == [] and status["offline"] == []

    pyq_here(monkeypatch, "topics", "alter", stamped, "--config", "retention.ms=86400000", *conn)
    configs = {c["name"]: c for c in document(monkeypatch, "configs", "describe", "--topic",
                                              stamped, *conn)}
    assert configs["retention.ms"]["value"] == "86400000"
    assert configs["retention.ms"]["read_only"] is False


def test_groups_lag_and_transactions_as_json(monkeypatch, bootstrap, stamped):
    conn = ("--bootstrap-server", bootstrap)
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.commit_offsets("js-group", {(stamped, 0): 3, (stamped, 1): 2})
    listed = document(monkeypatch, "groups", "list", *conn)
    [mine] = [g for g in listed if g["group"] == "js-group"]
    assert (mine["state"], mine["members"]) == ("Empty", 0)

    [group] = document(monkeypatch, "groups", "describe", "js-group", *conn)
    assert (group["group"], group["state"], group["members"]) == ("js-group", "Empty", 0)
    assert [(p["partition"], p["committed"], p["latest"], p["lag"]) for p in group["partitions"]] \
        == [(0, 3, 5, 2), (1, 2, 2, 0)]
    lag = document(monkeypatch, "lag", "--group", "js-group", *conn)
    assert lag["partitions"] == group["partitions"]

    with Producer(bootstrap_servers=bootstrap, transactional_id="js-txn") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(stamped, b"in a transaction", partition=1)
        producer.flush()
        listed_txns = wait_for(lambda: [t for t in document(monkeypatch, "transactions", "list", *conn)
                                        if t["transactional_id"] == "js-txn"],
                               what="js-txn listed")
        assert listed_txns[0]["state"] == "Ongoing"
        [txn] = document(monkeypatch, "transactions", "describe", "js-txn", *conn)
        assert txn["state"] == "Ongoing" and txn["partitions"] == [f"{stamped}-1"]
        producer.abort_transaction()


def test_groups_delete_offsets(monkeypatch, bootstrap, stamped):
    """Forgets the offsets named, keeps the others; refused while a member is subscribed."""
    conn = ("--bootstrap-server", bootstrap)
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic("js-other", 1, 1)])
        admin.commit_offsets("js-forget", {(stamped, 0): 4, (stamped, 1): 1, ("js-other", 0): 0})
        out = installed("groups", "delete-offsets", "js-forget", "--topic", f"{stamped}:1",
                        "--topic", "js-other", *conn)
        assert out.returncode == 0, out.stderr
        assert [line.split() for line in out.stdout.splitlines()] == [
            ["GROUP", "TOPIC", "PARTITION", "STATUS"],
            ["js-forget", stamped, "1", "deleted"], ["js-forget", "js-other", "0", "deleted"]]
        assert {tp: om.offset for tp, om in admin.fetch_offsets("js-forget").items()} == \
            {TopicPartition(stamped, 0): 4}

    with Consumer({"bootstrap.servers": bootstrap, "group.id": "js-busy",
                   "enable.auto.commit": False, "auto.offset.reset": "earliest"}) as consumer:
        consumer.subscribe([stamped])
        wait_for(lambda: consumer.poll(200).num_rows >= 0 and consumer.assignment(),
                 what="the consumer joined js-busy")
        consumer.commit({TopicPartition(stamped, 0): 1})
        refused = pyq_here(monkeypatch, "groups", "delete-offsets", "js-busy", "--topic", stamped,
                           *conn)
    assert refused.returncode == 1
    assert refused.stderr.startswith("pyq groups delete-offsets: error: group 'js-busy' has a "
                                     "member subscribed to the topic"), refused.stderr
    assert "stop the group's consumers first" in refused.stderr
