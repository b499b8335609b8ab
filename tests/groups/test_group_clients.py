"""Real consumer groups on a 3-broker pyq cluster: kafka-python and librdkafka consumers in
their own processes share a topic, move partitions when one leaves or dies, and survive
the death of the group's coordinator — with the classic protocol, and with librdkafka's
``group.protocol=consumer`` (KIP-848), whose session timeout the broker sets."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from broker_sim.cluster import LocalCluster
from connector.client.admin import Admin
from tests.groups.group_clients import ConsumerProcess, covers, wait_for
from tests.metrics import scrape, value
from tests.wire import wait_for_topic_everywhere

pytestmark = pytest.mark.cluster

PARTITIONS = 6
CLIENTS = ["kafka-python", "confluent", "confluent-consumer"]
#: group.consumer.session.timeout.ms of the cluster: KIP-848 members do not choose their own.
CONSUMER_SESSION_MS = 8000


def session(client: str, classic_ms: int) -> int:
    return CONSUMER_SESSION_MS if client == "confluent-consumer" else classic_ms


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = LocalCluster(tmp_path_factory.mktemp("groups"), 3, overrides={
        "group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000",
        "group.consumer.session.timeout.ms": str(CONSUMER_SESSION_MS),
        "group.consumer.heartbeat.interval.ms": "500", "metrics.port": "0"})
    c.start()
    yield c
    c.stop()


@pytest.fixture
def consumers():
    started: list[ConsumerProcess] = []
    yield started
    for c in started:
        c.stop()


def make_topic(bootstrap: str, name: str, records: int) -> set[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, PARTITIONS, 3)])[name].result(30)
    wait_for_topic_everywhere(bootstrap, name, PARTITIONS)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    values = {f"{name}-{i}" for i in range(records)}
    for i, v in enumerate(sorted(values)):
        producer.produce(name, v.encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    return values


def heartbeats_answered(cluster: LocalCluster, api: str) -> float:
    """Heartbeats (``api``: "Heartbeat" or "ConsumerGroupHeartbeat") every broker answered."""
    return sum(value(scrape(b.metrics_port), "pyq_requests_total", api=api)
               for b in cluster.brokers if b.metrics_port is not None)


def start(consumers: list, *args, **kwargs) -> ConsumerProcess:
    c = ConsumerProcess(*args, **kwargs)
    consumers.append(c)
    return c


@pytest.mark.parametrize("client", CLIENTS)
def test_three_members_share_the_topic_and_a_clean_leave_moves_partitions_at_once(
        cluster, consumers, client):
    bootstrap = cluster.bootstrap_servers
    topic, group = f"share-{client}", f"share-{client}"
    values = make_topic(bootstrap, topic, 600)
    members = [start(consumers, client, bootstrap, group, topic, session_ms=30_000) for _ in range(3)]
    wait_for(lambda: covers(members, PARTITIONS) and all(len(m.assignment) == 2 for m in members),
             60, "three members with two partitions each")
    wait_for(lambda: {r[2] for m in members for r in m.records()} == values, 60, "every record",
             consumers)
    left = time.monotonic()
    members[0].terminate()
    moved = wait_for(lambda: covers(members[1:], PARTITIONS), 30, "the survivors to take over",
                     consumers)
    assert moved - left < session(client, 30_000) / 2000, \
        "a clean leave must not wait for the session timeout"
    with Admin(bootstrap_servers=bootstrap) as admin:
        committed = admin.fetch_offsets(group)
    assert sorted(tp.partition for tp in committed) == list(range(PARTITIONS))
    assert sum(om.offset for om in committed.values()) == 600


@pytest.mark.parametrize("client", CLIENTS)
def test_a_killed_member_is_replaced_after_its_session_timeout_and_nothing_committed_is_reread(
        cluster, consumers, client):
    bootstrap = cluster.bootstrap_servers
    topic, group = f"kill-{client}", f"kill-{client}"
    values = make_topic(bootstrap, topic, 3000)
    session_ms = session(client, 3000)
    members = [start(consumers, client, bootstrap, group, topic, session_ms=session_ms, pause_ms=50)
               for _ in range(3)]
    wait_for(lambda: covers(members, PARTITIONS) and all(m.assignment for m in members), 60,
             "three members", consumers)
    victim, survivors = members[0], members[1:]
    wait_for(lambda: len(victim.records()) >= 100, 60, "the victim to consume", consumers)
    victim_owned = list(victim.assignment)
    victim.kill()
    killed = time.monotonic()
    moved = wait_for(lambda: covers(survivors, PARTITIONS), 60, "the survivors to take over",
                     consumers)
    assert moved - killed >= session_ms / 1000 * 0.5, "partitions moved before the session expired"
    with Admin(bootstrap_servers=bootstrap) as admin:
        wait_for(lambda: sum(om.offset for om in admin.fetch_offsets(group).values()) == 3000,
                 90, "every record committed", consumers)
    # A record nobody reported was committed by the victim in the poll it was killed in,
    # after its commit and before it could say so: at most that one poll, right after what
    # it last reported, on a partition it owned.
    index = {v: i for i, v in enumerate(sorted(values))}  # produced round robin, in order
    reported = {r[2] for m in members for r in m.records()}
    unreported = {(index[v] % PARTITIONS, index[v] // PARTITIONS) for v in values - reported}
    last = {p: max(o for q, o, _ in victim.records() if q == p) for p in victim_owned
            if any(q == p for q, _, _ in victim.records())}
    assert len(unreported) <= 50, f"{len(unreported)} records were never consumed"
    assert all(p in victim_owned and o > last.get(p, -1) for p, o in unreported), unreported
    committed_by_victim = {(p, o) for p, o, _ in victim.records()}
    reread = committed_by_victim & {(p, o) for m in survivors for p, o, _ in m.records()}
    assert not reread, f"records committed by the killed member were consumed again: {sorted(reread)[:5]}"
    counts = Counter((p, o) for m in survivors for p, o, _ in m.records())
    assert max(counts.values()) == 1


@pytest.mark.parametrize("client", ["confluent", "confluent-consumer"])
def test_a_static_member_restarted_within_its_session_keeps_its_partitions(
        cluster, consumers, client):
    bootstrap = cluster.bootstrap_servers
    topic, group = f"static-{client}", f"static-{client}"
    make_topic(bootstrap, topic, 60)
    members = [start(consumers, client, bootstrap, group, topic, session_ms=20_000,
                     instance_id=f"pod-{i}", heartbeat_ms=500) for i in range(3)]
    wait_for(lambda: covers(members, PARTITIONS) and all(len(m.assignment) == 2 for m in members),
             60, "three static members with two partitions each")
    before = [list(m.assignment) for m in members]
    others = [len(m.assignments) for m in members[1:]]
    if client == "confluent-consumer":
        members[0].terminate()  # KIP-848: a static member's close is a temporary leave (-2)
    else:
        members[0].kill()
    again = start(consumers, client, bootstrap, group, topic, session_ms=20_000,
                  instance_id="pod-0", heartbeat_ms=500)
    wait_for(lambda: again.assignment == before[0], 30, "the restarted member's old partitions",
             consumers)
    # A rebalance would reach the others in a heartbeat's answer: let every member
    # heartbeat twice more (500 ms apart; 3 members) before looking at theirs.
    api = "ConsumerGroupHeartbeat" if client == "confluent-consumer" else "Heartbeat"
    answered = heartbeats_answered(cluster, api)
    wait_for(lambda: heartbeats_answered(cluster, api) >= answered + 2 * 3, 30,
             "two more heartbeats of every member", consumers)
    assert [len(m.assignments) for m in members[1:]] == others, "the others saw a rebalance"
    with Admin(bootstrap_servers=bootstrap) as admin:
        if client == "confluent-consumer":
            described = admin.describe_consumer_groups([group])[group]
        else:
            described = admin.describe_groups([group])[group]
    assert described.state == "Stable" and len(described.members) == 3


@pytest.mark.parametrize("client", ["confluent", "confluent-consumer"])
def test_the_coordinator_broker_killed_mid_consumption(cluster, consumers, client):
    bootstrap = cluster.bootstrap_servers
    topic, group = f"coord-kill-{client}", f"coord-kill-{client}"
    values = make_topic(bootstrap, topic, 3000)
    members = [start(consumers, client, bootstrap, group, topic, session_ms=6000, pause_ms=50)
               for _ in range(2)]
    wait_for(lambda: covers(members, PARTITIONS) and all(m.assignment for m in members), 60,
             "two members", consumers)
    wait_for(lambda: sum(len(m.records()) for m in members) >= 300, 60, "some consumption",
             consumers)
    with Admin(bootstrap_servers=bootstrap) as admin:
        coordinator = admin.find_coordinator(group)
        before = admin.fetch_offsets(group)
    owned = [m.assignment for m in members]
    cluster.broker(coordinator).kill()
    try:
        wait_for(lambda: values <= {r[2] for m in members for r in m.records()}, 120,
                 "every record after the coordinator died", consumers)
        with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
            assert admin.find_coordinator(group) != coordinator
            after = admin.fetch_offsets(group)
        assert all(after[tp].offset >= om.offset for tp, om in before.items())
        assert sum(om.offset for om in after.values()) == 3000
        if client == "confluent-consumer":  # the new coordinator restored the group's state
            assert [m.assignment for m in members] == owned, "the members were reassigned"
    finally:
        cluster.broker(coordinator).start()
