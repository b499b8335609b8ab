"""``pyq groups`` and ``pyq lag`` against a broker with a real kafka-python consumer group
beside an offsets-only group (what the Spark source's ``groupId`` makes), and a librdkafka
group on the consumer protocol — on pyq's broker process, then on Apache Kafka
(``broker_under_test``), the same tests on both. The broker is the module's (the session's,
on Kafka): tables are looked at for this module's groups (``cg-*``) among any others."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from connector.client import Admin, OffsetAndMetadata, Producer
from tests.cli.support import pyq_here
from tests.conftest import BrokerUnderTest
from tests.groups.group_clients import ConsumerProcess, wait_for

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", params=["pyq", "kafka"])
def broker_under_test(request, tmp_path_factory) -> Iterator[BrokerUnderTest]:
    """A pyq broker of this module's own that starts a group's first rebalance at once
    (``group.initial.rebalance.delay.ms=0``), then the session's Apache Kafka, set so too."""
    if request.param == "kafka":
        yield BrokerUnderTest("kafka", request.getfixturevalue("kafka").bootstrap_servers)
        return
    from broker_sim.process import BrokerProcess

    proc = BrokerProcess(tmp_path_factory.mktemp("cli-groups"), overrides={
        "group.initial.rebalance.delay.ms": "0", "auto.create.topics.enable": "false"}).start()
    yield BrokerUnderTest("pyq", proc.bootstrap_servers)
    proc.stop()


@pytest.fixture(scope="module")
def broker(broker_under_test):
    return broker_under_test


def ours(rows: list[list[str]]) -> list[list[str]]:
    """The rows of this module's groups (``cg-*``) of a ``pyq groups list`` table."""
    return [row for row in rows[1:] if row[0].startswith("cg-")]


@pytest.fixture
def run(monkeypatch, broker):
    return lambda *args: pyq_here(monkeypatch, *args, "--bootstrap-server", broker.bootstrap_servers)


@pytest.fixture
def ok(run):
    def ok(*args: str) -> list[list[str]]:
        out = run(*args)
        assert out.returncode == 0, out.stderr
        return [line.split() for line in out.stdout.splitlines()]
    return ok


@pytest.fixture
def consumer(broker):
    started = []

    def start() -> ConsumerProcess:
        c = ConsumerProcess("kafka-python", broker.bootstrap_servers, "cg-app", "cg-orders", session_ms=10_000)
        started.append(c)
        return c
    yield start
    for c in started:
        c.stop()


def test_groups_list_describe_reset_and_delete(broker, ok, run, consumer):
    ok("topics", "create", "cg-orders", "--partitions", "3")
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
            for i in range(30):
                producer.send("cg-orders", f"o{i}".encode(), partition=i % 3)
        admin.commit_offsets("cg-spark-q", {("cg-orders", 0): OffsetAndMetadata(4, '{"query": "q"}')})
    member = consumer()
    wait_for(lambda: len(member.records()) == 30, 60, "the consumer to read everything", [member])

    listed = ok("groups", "list")
    assert listed[0] == ["GROUP", "TYPE", "STATE", "MEMBERS", "COORDINATOR", "PROTOCOL"]
    assert [row[0] for row in listed[1:]] == sorted(row[0] for row in listed[1:])
    assert [row[:4] for row in ours(listed)] == [["cg-app", "consumer", "Stable", "1"],
                                                 ["cg-spark-q", "simple", "Empty", "0"]]
    assert [row[0] for row in ours(ok("groups", "list", "--state", "Empty"))] == ["cg-spark-q"]

    shown = ok("groups", "describe", "cg-app")
    assert shown[0][:8] == ["GROUP", "cg-app", "TYPE", "consumer", "STATE", "Stable", "MEMBERS", "1"]
    assert shown[2] == ["TOPIC", "PARTITION", "COMMITTED", "LATEST", "LAG", "CONSUMER", "HOST", "CLIENT"]
    assert [r[:5] for r in shown[3:]] == [["cg-orders", str(p), "10", "10", "0"] for p in range(3)]
    assert all(r[5].startswith("kafka-python") for r in shown[3:])
    lag = ok("lag", "--group", "cg-spark-q")
    assert lag[0][:6] == ["GROUP", "cg-spark-q", "TYPE", "simple", "STATE", "Empty"]
    assert lag[3] == ["cg-orders", "0", "4", "10", "6", "q"]

    refused = run("groups", "reset-offsets", "--group", "cg-app", "--all-topics", "--to-earliest")
    assert refused.returncode == 1 and "is Stable with 1 member(s)" in refused.stderr
    refused = run("groups", "delete", "cg-app")
    assert refused.returncode == 1 and "NonEmptyGroup" in refused.stderr

    member.terminate()
    plan = ok("groups", "reset-offsets", "--group", "cg-app", "--all-topics", "--to-earliest")
    assert plan[1:4] == [["cg-app", "cg-orders", str(p), "10", "0"] for p in range(3)]
    assert plan[4][0] == "(dry"
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        assert {om.offset for om in admin.fetch_offsets("cg-app").values()} == {10}
    ok("groups", "reset-offsets", "--group", "cg-app", "--topic", "cg-orders:1", "--to-earliest", "--execute")
    ok("groups", "reset-offsets", "--group", "cg-app", "--topic", "cg-orders:1", "--shift-by", "3", "--execute")
    ok("groups", "reset-offsets", "--group", "cg-app", "--topic", "cg-orders:2", "--to-offset", "99", "--execute")
    moved = ok("groups", "reset-offsets", "--group", "cg-app", "--topic", "cg-orders:0",
               "--to-datetime", "2100-01-01T00:00:00")
    assert moved[1] == ["cg-app", "cg-orders", "0", "10", "10"]  # nothing that late: the end
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        offsets = {tp.partition: om.offset for tp, om in admin.fetch_offsets("cg-app").items()}
    assert offsets == {0: 10, 1: 3, 2: 10}  # 99 is clamped to the latest offset

    # the restarted consumer resumes where the reset put it
    again = consumer()
    wait_for(lambda: len(again.records()) == 7, 60, "the re-read of partition 1 from offset 3")
    assert sorted(r[1] for r in again.records()) == list(range(3, 10))
    again.terminate()

    assert ok("groups", "delete", "cg-app") == [["deleted", "group", "cg-app"]]
    assert [row[0] for row in ours(ok("groups", "list"))] == ["cg-spark-q"]
    gone = run("groups", "describe", "cg-app")
    assert gone.returncode == 1 and "does not exist" in gone.stderr


def test_a_consumer_protocol_group_is_listed_described_and_guarded(broker, ok, run):
    """librdkafka with group.protocol=consumer (KIP-848): DescribeGroups reports such a group
    Dead, as Kafka does, so the CLI describes it with ConsumerGroupDescribe."""
    ok("topics", "create", "cg-events", "--partitions", "2")
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        for i in range(8):
            producer.send("cg-events", f"e{i}".encode(), partition=i % 2)
    member = ConsumerProcess("confluent-consumer", broker.bootstrap_servers, "cg-new", "cg-events")
    try:
        wait_for(lambda: len(member.records()) == 8, 60, "the KIP-848 consumer", [member])
        listed = {row[0]: row for row in ours(ok("groups", "list"))}
        assert listed["cg-new"][1:4] == ["consumer", "Stable", "1"]
        assert listed["cg-new"][5] == "consumer"
        shown = ok("groups", "describe", "cg-new")
        assert shown[0][:8] == ["GROUP", "cg-new", "TYPE", "consumer", "STATE", "Stable", "MEMBERS", "1"]
        assert shown[0][8:10] == ["PROTOCOL", "uniform"]
        assert [r[:5] for r in shown[3:]] == [["cg-events", str(p), "4", "4", "0"] for p in range(2)]
        assert all(r[7].startswith("rdkafka") for r in shown[3:])
        refused = run("groups", "reset-offsets", "--group", "cg-new", "--all-topics", "--to-earliest")
        assert refused.returncode == 1 and "is Stable with 1 member(s)" in refused.stderr
    finally:
        member.terminate()
    assert ok("groups", "describe", "cg-new")[0][5] == "Empty"
    assert ok("groups", "delete", "cg-new") == [["deleted", "group", "cg-new"]]
