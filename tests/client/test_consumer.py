"""pyq's group consumer against a broker, beside kafka-python's and librdkafka's: on pyq's
broker process, then on Apache Kafka (``broker_under_test``), the same tests on both, and
where the behaviour should not depend on it, under both group protocols (``classic`` and
KIP-848's ``consumer``)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer as CkConsumer
from kafka import KafkaConsumer

from connector.client import (
    KAFKA_SCHEMA,
    Admin,
    CommitFailedError,
    ConfigError,
    Consumer,
    NewTopic,
    NoOffsetForPartitionError,
    Producer,
    TopicPartition,
)
from connector.client.assignors import range_assign, roundrobin_assign
from tests.conftest import BrokerUnderTest

pytestmark = pytest.mark.integration

#: Sessions of 3 s (Kafka's default floor is 6 s, a static setting): each broker is this module's.
#: Consumer-protocol members heartbeat every 500 ms (the coordinator's setting; 5 s by default).
BROKER_OVERRIDES = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "500",
                    "auto.create.topics.enable": "false",
                    "group.consumer.heartbeat.interval.ms": "500"}
#: Kafka refuses a heartbeat interval below this floor (pyq's broker has none).
KAFKA_OVERRIDES = {"group.consumer.min.heartbeat.interval.ms": "500"}
PROTOCOLS = ["classic", "consumer"]


@pytest.fixture(scope="module", params=["pyq", "kafka"])
def broker_under_test(request, tmp_path_factory) -> Iterator[BrokerUnderTest]:
    """Conftest's ``broker_under_test`` with ``BROKER_OVERRIDES``: a pyq broker, then an Apache
    Kafka node, of this module's own."""
    directory = tmp_path_factory.mktemp(f"consumer-{request.param}")
    if request.param == "kafka":
        from reference.kafka_cluster import KafkaCluster

        cluster = KafkaCluster(directory, 1, overrides={**BROKER_OVERRIDES, **KAFKA_OVERRIDES}).start()
        yield BrokerUnderTest("kafka", cluster.bootstrap_servers)
        cluster.stop()
    else:
        from broker_sim.process import BrokerProcess

        proc = BrokerProcess(directory, overrides=BROKER_OVERRIDES).start()
        yield BrokerUnderTest("pyq", proc.bootstrap_servers)
        proc.stop()


@pytest.fixture(scope="module")
def broker(broker_under_test) -> BrokerUnderTest:
    return broker_under_test


def topic_with(broker, name: str, partitions: int, records: int) -> None:
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(name, partitions, 1)])
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        for i in range(records):
            producer.send(name, f"{name}-{i}".encode(), key=str(i).encode(), partition=i % partitions)


def consumer(broker, group: str, protocol: str = "classic", **options) -> Consumer:
    """A member of ``group`` under ``protocol``: classic with 3 s sessions; the consumer
    protocol takes its session from the coordinator (and refuses those options)."""
    session = {"session_timeout_ms": 3000, "heartbeat_interval_ms": 300} if protocol == "classic" else {}
    settings = {"auto_offset_reset": "earliest", "group_protocol": protocol, **session, **options}
    return Consumer(bootstrap_servers=broker.bootstrap_servers, group_id=group, **settings)


def poll_until(consumers, done, timeout=30.0):
    got = {id(c): [] for c in consumers}
    deadline = time.monotonic() + timeout
    while not done(got):
        assert time.monotonic() < deadline, "timed out"
        for c in consumers:
            table = c.poll(100)
            if table.num_rows:
                got[id(c)].append(table)
    return got


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_poll_returns_arrow_in_sparks_schema_and_commit_resumes(broker, protocol):
    topic = f"c-arrow-{protocol}"
    topic_with(broker, topic, 3, 90)
    with consumer(broker, topic, protocol, enable_auto_commit=False) as c:
        c.subscribe([topic])
        got = poll_until([c], lambda g: sum(t.num_rows for t in g[id(c)]) >= 90)[id(c)]
        assert all(t.schema == KAFKA_SCHEMA for t in got)
        values = sorted(v for t in got for v in t.column("value").to_pylist())
        assert values == sorted(f"{topic}-{i}".encode() for i in range(90))
        assert {c.position(tp) for tp in c.assignment()} == {30}
        c.commit({TopicPartition(topic, 0): 10})
        assert c.committed([TopicPartition(topic, 0)]) == {TopicPartition(topic, 0): 10}
    with consumer(broker, topic, protocol, enable_auto_commit=False) as again:
        again.subscribe([topic])
        got = poll_until([again], lambda g: sum(t.num_rows for t in g[id(again)]) >= 20)[id(again)]
        offsets = sorted(o for t in got for o, p in zip(t.column("offset").to_pylist(),
                                                         t.column("partition").to_pylist(),
                                                         strict=True) if p == 0)
        assert offsets == list(range(10, 30))  # partition 0 resumes at its committed offset


def test_members_of_three_clients_share_a_group_and_rebalance_with_callbacks(broker):
    topic_with(broker, "c-mixed", 6, 600)
    events: list[tuple[str, list[TopicPartition]]] = []
    ours = consumer(broker, "c-mixed")
    ours.subscribe(["c-mixed"], on_assign=lambda ps: events.append(("assign", ps)),
                   on_revoke=lambda ps: events.append(("revoke", ps)))
    kp = KafkaConsumer("c-mixed", bootstrap_servers=broker.bootstrap_servers, group_id="c-mixed",
                       auto_offset_reset="earliest", session_timeout_ms=3000, heartbeat_interval_ms=300)
    ck = CkConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "c-mixed",
                     "auto.offset.reset": "earliest", "session.timeout.ms": 3000,
                     "heartbeat.interval.ms": 300})
    ck_assigned: list[int] = []
    ck.subscribe(["c-mixed"], on_assign=lambda c, ps: ck_assigned.__init__([p.partition for p in ps]),
                 on_revoke=lambda c, ps: ck_assigned.clear())
    try:
        deadline = time.monotonic() + 60
        while True:
            ours.poll(50)
            kp.poll(50)
            ck.poll(0.05)
            shares = [sorted(tp.partition for tp in ours.assignment()),
                      sorted(tp.partition for tp in kp.assignment()), sorted(ck_assigned)]
            if sorted(p for s in shares for p in s) == list(range(6)) and all(len(s) == 2 for s in shares):
                break
            assert time.monotonic() < deadline, shares
        assert events[0][0] == "assign" and events[-1] == ("assign", ours.assignment())
        kp.close()
        ck.close()
        taken = time.monotonic()
        while len(ours.assignment()) < 6:
            ours.poll(50)
            assert time.monotonic() - taken < 10, "the others left cleanly: no session timeout"
        assert events[-2][0] == "revoke" and len(events[-1][1]) == 6
    finally:
        ours.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_commit_async_callbacks_and_a_member_that_stops_polling_loses_its_partitions(broker, protocol):
    topic = f"c-async-{protocol}"
    topic_with(broker, topic, 2, 20)
    c = consumer(broker, topic, protocol, enable_auto_commit=False, max_poll_interval_ms=1500)
    c.subscribe([topic])
    poll_until([c], lambda g: sum(t.num_rows for t in g[id(c)]) >= 20)
    results = []
    c.commit_async(callback=lambda offsets, error: results.append((offsets, error)))
    deadline = time.monotonic() + 10
    while not results:
        c.poll(50)
        assert time.monotonic() < deadline
    assert results == [({TopicPartition(topic, 0): 10, TopicPartition(topic, 1): 10}, None)]
    other = consumer(broker, topic, protocol, enable_auto_commit=False)
    other.subscribe([topic])
    poll_until([c, other], lambda g: len(c.assignment()) == 1 and len(other.assignment()) == 1)
    # c stops polling for longer than max.poll.interval.ms: it leaves, other takes over
    deadline = time.monotonic() + 30
    while len(other.assignment()) < 2:
        other.poll(100)
        assert time.monotonic() < deadline
    with pytest.raises(CommitFailedError, match="rebalanced"):
        c.commit({TopicPartition(topic, 0): 11})
    poll_until([c, other], lambda g: len(c.assignment()) == 1 and len(other.assignment()) == 1)
    other.close()
    c.close()


def produce(broker, topic: str, start: int, count: int, partitions: int) -> None:
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        for i in range(start, start + count):
            producer.send(topic, f"{topic}-{i}".encode(), partition=i % partitions)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_partitions_move_to_a_second_member_and_back_with_no_record_read_twice_or_lost(broker, protocol):
    """Auto commit commits what a member gives up before the other takes it, and closing
    leaves the group at once: every record is read exactly once across the two members."""
    topic = f"c-move-{protocol}"
    topic_with(broker, topic, 4, 100)
    read: list[tuple[int, int]] = []

    def poll_all(consumers, total: int, also=lambda: True, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while len(read) < total or not also():
            assert time.monotonic() < deadline, (len(read), [c.assignment() for c in consumers])
            for c in consumers:
                table = c.poll(100)
                read.extend(zip(table.column("partition").to_pylist(),
                                table.column("offset").to_pylist(), strict=True))

    first = consumer(broker, topic, protocol)
    first.subscribe([topic])
    second = consumer(broker, topic, protocol)
    try:
        poll_all([first], 100)
        second.subscribe([topic])
        poll_all([first, second], 100,
                 lambda: len(first.assignment()) == 2 and len(second.assignment()) == 2)
        produce(broker, topic, 100, 200, 4)
        poll_all([first, second], 300)
        second.close()
        taken = time.monotonic()
        poll_all([first], 300, lambda: len(first.assignment()) == 4, timeout=10)
        assert time.monotonic() - taken < 10, "the second member left on close: no session timeout"
        produce(broker, topic, 300, 100, 4)
        poll_all([first], 400)
        first.commit()
    finally:
        second.close()
        first.close()
    assert len(read) == len(set(read)) == 400
    assert sorted(read) == sorted((p, o) for p in range(4) for o in range(100))
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        committed = admin.fetch_offsets(topic)
    assert {tp.partition: o.offset for tp, o in committed.items()} == dict.fromkeys(range(4), 100)


def test_a_consumer_protocol_member_beside_librdkafkas_shares_the_partitions_incrementally(broker):
    topic = "c-848-mixed"
    topic_with(broker, topic, 4, 40)
    events: list[tuple[str, list[TopicPartition]]] = []
    ours = consumer(broker, topic, "consumer")
    ours.subscribe([topic], on_assign=lambda ps: events.append(("assign", ps)),
                   on_revoke=lambda ps: events.append(("revoke", ps)))
    ck = CkConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": topic,
                     "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    ck_assigned: set[int] = set()
    try:
        poll_until([ours], lambda g: len(ours.assignment()) == 4)
        # librdkafka joins from its own threads once subscribed: only after ours holds all four
        ck.subscribe([topic], on_assign=lambda c, ps: ck_assigned.update(p.partition for p in ps),
                     on_revoke=lambda c, ps: ck_assigned.difference_update(p.partition for p in ps))
        deadline = time.monotonic() + 30
        while len(ours.assignment()) != 2 or len(ck_assigned) != 2:
            ours.poll(50)
            ck.poll(0.05)
            assert time.monotonic() < deadline, (ours.assignment(), ck_assigned)
        assert {tp.partition for tp in ours.assignment()} | ck_assigned == set(range(4))
        # incremental: ours gave up two partitions and kept the other two, never all four
        assert events[0] == ("assign", [TopicPartition(topic, p) for p in range(4)])
        theirs = sorted(TopicPartition(topic, p) for p in ck_assigned)
        assert [ps for kind, ps in events if kind == "revoke"] == [theirs]
        ck.close()
        taken = time.monotonic()
        while len(ours.assignment()) < 4:
            ours.poll(50)
            assert time.monotonic() - taken < 10, "librdkafka left on close: no session timeout"
        assert events[-1] == ("assign", theirs)
    finally:
        ours.close()
        ck.close()  # a no-op once closed


def test_a_consumer_protocol_group_is_a_consumer_group_to_admin_and_kafka_consumer_groups(broker):
    from reference.kafka_tools import run_tool

    topic = "c-848-described"
    topic_with(broker, topic, 3, 30)
    with consumer(broker, topic, "consumer", group_remote_assignor="range",
                  client_id="pyq-848") as c:
        c.subscribe([topic])
        poll_until([c], lambda g: sum(t.num_rows for t in g[id(c)]) >= 30)
        c.commit()
        with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
            [listing] = [g for g in admin.list_groups() if g.group_id == topic]
            described = admin.describe_consumer_groups([topic])[topic]
            committed = admin.fetch_offsets(topic)
        assert (listing.group_type, listing.protocol_type) == ("consumer", "consumer")
        assert (described.state, described.assignor) == ("Stable", "range")
        [member] = described.members
        assert (member.member_id, member.member_epoch, member.client_id) == (
            c.member_id, c.generation, "pyq-848")
        assert member.subscribed_topics == [topic]
        assert sorted(member.assignment) == sorted(member.target_assignment) == sorted(c.assignment())
        assert {tp.partition: o.offset for tp, o in committed.items()} == {0: 10, 1: 10, 2: 10}
        out = run_tool("kafka-consumer-groups", "--bootstrap-server", broker.bootstrap_servers,
                       "--describe", "--group", topic, timeout=60).stdout
        lines = [line.split() for line in out.splitlines() if line.strip()]
        header = next(i for i, words in enumerate(lines) if words[0] == "GROUP")
        rows = [dict(zip(lines[header], words, strict=False)) for words in lines[header + 1:]]
        assert sorted((r["PARTITION"], r["CURRENT-OFFSET"], r["LAG"], r["CONSUMER-ID"], r["CLIENT-ID"])
                      for r in rows) == [(str(p), "10", "0", c.member_id, "pyq-848") for p in range(3)]
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        after = admin.describe_consumer_groups([topic])[topic]
    assert (after.state, after.members) == ("Empty", [])  # it left the group on close


@pytest.mark.parametrize(("options", "says"), [
    ({"group_protocol": "cooperative"}, "group.protocol: must be one of classic, consumer"),
    ({"group_protocol": "consumer", "session_timeout_ms": 3000}, "session.timeout.ms=3000 may not be set"),
    ({"group_protocol": "consumer", "heartbeat_interval_ms": 3000}, "heartbeat.interval.ms=3000 may not be set"),
    ({"group_protocol": "consumer", "partition_assignment_strategy": "roundrobin"},
     "partition.assignment.strategy=roundrobin may not be set"),
    ({"group_protocol": "consumer", "group_remote_assignor": "sticky"},
     "group.remote.assignor: must be one of uniform, range"),
    ({"group_remote_assignor": "uniform"}, "it applies only with group.protocol=consumer"),
])
def test_options_the_group_protocol_does_not_take_fail_at_construction(broker, options, says):
    with pytest.raises(ConfigError, match=says):
        Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="g", **options)


def test_auto_offset_reset_none_and_invalid_options(broker):
    topic_with(broker, "c-none", 1, 1)
    with consumer(broker, "c-none", auto_offset_reset="none") as c:
        c.subscribe(["c-none"])
        with pytest.raises(NoOffsetForPartitionError, match="auto.offset.reset is none"):
            c.poll(5000)
    with pytest.raises(ConfigError, match="group.id"):
        Consumer(bootstrap_servers=broker.bootstrap_servers)
    with pytest.raises(ConfigError, match="heartbeat.interval.ms"):
        Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="g",
                 session_timeout_ms=1000, heartbeat_interval_ms=1000)
    with pytest.raises(ConfigError, match="auto.offset.reset"):
        Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="g", auto_offset_reset="begin")


def test_assignors_match_kafkas():
    subs = {"m1": ["a", "b"], "m2": ["a"], "m3": ["a", "b"]}
    r = range_assign(subs, {"a": 4, "b": 3})
    assert r == {"m1": [TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0),
                        TopicPartition("b", 1)],
                 "m2": [TopicPartition("a", 2)],
                 "m3": [TopicPartition("a", 3), TopicPartition("b", 2)]}
    rr = roundrobin_assign({"m1": ["a"], "m2": ["a"]}, {"a": 3})
    assert rr == {"m1": [TopicPartition("a", 0), TopicPartition("a", 2)], "m2": [TopicPartition("a", 1)]}


def test_a_dead_bootstrap_server_is_skipped_not_waited_for(broker):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        [node] = admin.describe_cluster().brokers  # pyq's broker is node 0, Kafka's node 1
    for _ in range(5):  # the first node tried is random: try often enough to meet the dead one
        started = time.monotonic()
        with Admin(bootstrap_servers=f"127.0.0.1:{dead},{broker.bootstrap_servers}",
                   default_api_timeout_ms=20_000) as admin:
            assert admin.find_coordinator("any-group") == node.node_id
        assert time.monotonic() - started < 5
