"""Real consumer groups on a 3-broker pyq cluster: kafka-python and librdkafka consumers in
their own processes share a topic, move partitions when one leaves or dies, and survive
the death of the group's coordinator."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from broker_sim.cluster import LocalCluster
from connector.client.admin import Admin
from tests.groups.group_clients import ConsumerProcess, covers, wait_for

pytestmark = pytest.mark.cluster

PARTITIONS = 6
CLIENTS = ["kafka-python", "confluent"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = LocalCluster(tmp_path_factory.mktemp("groups"), 3, overrides={
        "group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000"})
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
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    values = {f"{name}-{i}" for i in range(records)}
    for i, v in enumerate(sorted(values)):
        producer.produce(name, v.encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    return values


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
    wait_for(lambda: {r[2] for m in members for r in m.records()} == values, 60, "every record")
    left = time.monotonic()
    members[0].terminate()
    moved = wait_for(lambda: covers(members[1:], PARTITIONS), 30, "the survivors to take over")
    assert moved - left < 10, "a clean leave must not wait for the 30 s session timeout"
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
    session_ms = 3000
    members = [start(consumers, client, bootstrap, group, topic, session_ms=session_ms, pause_ms=50)
               for _ in range(3)]
    wait_for(lambda: covers(members, PARTITIONS) and all(m.assignment for m in members), 60,
             "three members")
    victim, survivors = members[0], members[1:]
    wait_for(lambda: len(victim.records()) >= 100, 60, "the victim to consume")
    victim.kill()
    killed = time.monotonic()
    moved = wait_for(lambda: covers(survivors, PARTITIONS), 60, "the survivors to take over")
    assert moved - killed >= session_ms / 1000 * 0.5, "partitions moved before the session expired"
    wait_for(lambda: values <= {r[2] for m in members for r in m.records()}, 90, "every record")
    committed_by_victim = {(p, o) for p, o, _ in victim.records()}
    reread = committed_by_victim & {(p, o) for m in survivors for p, o, _ in m.records()}
    assert not reread, f"records committed by the killed member were consumed again: {sorted(reread)[:5]}"
    counts = Counter((p, o) for m in survivors for p, o, _ in m.records())
    assert max(counts.values()) == 1


def test_a_static_member_restarted_within_its_session_keeps_its_partitions(cluster, consumers):
    bootstrap = cluster.bootstrap_servers
    topic, group = "static", "static"
    make_topic(bootstrap, topic, 60)
    members = [start(consumers, "confluent", bootstrap, group, topic, session_ms=20_000,
                     instance_id=f"pod-{i}") for i in range(3)]
    wait_for(lambda: covers(members, PARTITIONS) and all(len(m.assignment) == 2 for m in members),
             60, "three static members with two partitions each")
    before = [list(m.assignment) for m in members]
    others = [len(m.assignments) for m in members[1:]]
    members[0].kill()
    again = start(consumers, "confluent", bootstrap, group, topic, session_ms=20_000,
                  instance_id="pod-0")
    wait_for(lambda: again.assignment == before[0], 30, "the restarted member's old partitions")
    time.sleep(2)
    assert [len(m.assignments) for m in members[1:]] == others, "the others saw a rebalance"
    with Admin(bootstrap_servers=bootstrap) as admin:
        described = admin.describe_groups([group])[group]
    assert described.state == "Stable" and len(described.members) == 3


def test_the_coordinator_broker_killed_mid_consumption(cluster, consumers):
    bootstrap = cluster.bootstrap_servers
    topic, group = "coord-kill", "coord-kill"
    values = make_topic(bootstrap, topic, 3000)
    members = [start(consumers, "confluent", bootstrap, group, topic, session_ms=6000, pause_ms=50)
               for _ in range(2)]
    wait_for(lambda: covers(members, PARTITIONS) and all(m.assignment for m in members), 60,
             "two members")
    wait_for(lambda: sum(len(m.records()) for m in members) >= 300, 60, "some consumption")
    with Admin(bootstrap_servers=bootstrap) as admin:
        coordinator = admin.find_coordinator(group)
        before = admin.fetch_offsets(group)
    cluster.broker(coordinator).kill()
    try:
        wait_for(lambda: values <= {r[2] for m in members for r in m.records()}, 120,
                 "every record after the coordinator died")
        with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
            assert admin.find_coordinator(group) != coordinator
            after = admin.fetch_offsets(group)
        assert all(after[tp].offset >= om.offset for tp, om in before.items())
        assert sum(om.offset for om in after.values()) == 3000
    finally:
        cluster.broker(coordinator).start()
