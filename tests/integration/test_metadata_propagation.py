"""Metadata is pushed to brokers (long poll), not picked up at their next heartbeat.

On a 3-broker cluster of real processes: when CreateTopics returns, every broker already
answers Metadata with the new topic and its leaders and every replica is fetching (asserted
at once, no waiting); a leader's successor is known to every broker soon after the
controller elects it; a broker restarted within its session is fenced and comes back with
bumped leader epochs. The latency itself is measured by ``benchmarks/metadata.py``.
"""

from __future__ import annotations

import time

import pytest

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.records import RecordBatchBuilder
from tests.wire import WireClient, partition_states, produce_body, wait_for

pytestmark = pytest.mark.integration


def batch(*values: bytes) -> bytes:
    b = RecordBatchBuilder()
    for v in values:
        b.append(int(time.time() * 1000), None, v)
    return b.build()


def create_topics(port: int, name: str, partitions: int, rf: int = 3, configs: dict | None = None) -> None:
    with WireClient(port) as c:
        r = c.request(ApiKey.CREATE_TOPICS, 4, {
            "topics": [{"name": name, "num_partitions": partitions, "replication_factor": rf,
                        "assignments": [], "configs": [{"name": k, "value": v}
                                                       for k, v in (configs or {}).items()]}],
            "timeout_ms": 30_000, "validate_only": False})
    assert r.topics[0].error_code == 0, r


def produce(port: int, topic: str, partition: int, value: bytes, acks: int = -1) -> tuple[int, int]:
    """(error code, base offset) of one Produce to the broker at ``port``."""
    with WireClient(port) as c:
        r = c.request(ApiKey.PRODUCE, 8, produce_body(topic, partition, batch(value), acks=acks))
    p = r.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def list_latest(port: int, topic: str, partition: int) -> int:
    with WireClient(port) as c:
        r = c.request(ApiKey.LIST_OFFSETS, 5, {
            "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
                {"partition_index": partition, "current_leader_epoch": -1, "timestamp": -1}]}]})
    p = r.topics[0].partitions[0]
    assert p.error_code == 0, p
    return p.offset


def test_create_topics_returns_once_every_broker_knows_the_topic(cluster_factory):
    cluster = cluster_factory(3)
    # An existing replicated topic first: the followers' fetcher threads are then parked in
    # long polls at the leaders, which a new partition must not wait out.
    create_topics(cluster.brokers[0].port, "warm", 3)
    wait_for(lambda: all(len(partition_states(b.port, "warm")) == 3 for b in cluster.brokers),
             what="warm-up topic everywhere")

    for n, via in enumerate(cluster.brokers):
        topic = f"fresh-{n}"
        create_topics(via.port, topic, 3)
        # No wait from here on: every broker knows the topic, the same leaders, all in sync.
        views = [partition_states(b.port, topic) for b in cluster.brokers]
        assert len(views[0]) == 3, views
        assert all(v == views[0] for v in views), views
        assert all(leader >= 0 and isr == [0, 1, 2] for leader, isr, _ in views[0].values()), views
        # Every replica fetches: an acks=all write (ISR of 3, the default min.insync.replicas
        # of 2) is acknowledged only once both followers fetched it.
        for partition, (leader, _, _) in views[0].items():
            error, offset = produce(cluster.broker(leader).port, topic, partition, b"first")
            assert (error, offset) == (0, 0)
            assert list_latest(cluster.broker(leader).port, topic, partition) == 1


def test_new_partitions_and_configs_are_in_effect_everywhere_when_answered(cluster_factory):
    cluster = cluster_factory(3)
    create_topics(cluster.brokers[0].port, "growing", 1)
    with WireClient(cluster.brokers[1].port) as c:
        r = c.request(ApiKey.CREATE_PARTITIONS, 1, {
            "topics": [{"name": "growing", "count": 4, "assignments": None}],
            "timeout_ms": 30_000, "validate_only": False})
    assert r.results[0].error_code == 0, r
    views = [partition_states(b.port, "growing") for b in cluster.brokers]
    assert len(views[0]) == 4 and all(v == views[0] for v in views), views
    for partition, (leader, _, _) in views[0].items():
        assert produce(cluster.broker(leader).port, "growing", partition, b"x")[0] == 0

    # A config change through broker 2 is in effect on every broker when it is answered.
    with WireClient(cluster.brokers[2].port) as c:
        r = c.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, {
            "resources": [{"resource_type": 2, "resource_name": "growing", "configs": [
                {"name": "retention.ms", "config_operation": 0, "value": "1234567"}]}],
            "validate_only": False})
    assert r.responses[0].error_code == 0, r
    for b in cluster.brokers:
        with WireClient(b.port) as c:
            r = c.request(ApiKey.DESCRIBE_CONFIGS, 4, {
                "resources": [{"resource_type": 2, "resource_name": "growing",
                               "configuration_keys": ["retention.ms"]}],
                "include_synonyms": False, "include_documentation": False})
        assert [(c.name, c.value) for c in r.results[0].configs] == [("retention.ms", "1234567")]


def states_everywhere(cluster, topic: str, brokers) -> dict | None:
    views = [partition_states(b.port, topic) for b in brokers]
    return views[0] if views[0] and all(v == views[0] for v in views) else None


def test_a_new_leader_is_known_to_every_broker_soon_after_its_election(cluster_factory):
    cluster = cluster_factory(3, session_timeout_ms=2000)
    topic = "failover"
    create_topics(cluster.brokers[0].port, topic, 3)
    before = states_everywhere(cluster, topic, cluster.brokers)
    assert before is not None
    victim_id = before[0][0]
    cluster.broker(victim_id).kill()
    survivors = [b for b in cluster.brokers if b.broker_id != victim_id]

    def moved() -> dict | None:
        now = states_everywhere(cluster, topic, survivors)
        if now is None:
            return None
        led = [p for p, s in before.items() if s[0] == victim_id]
        ok = all(now[p][0] not in (victim_id, -1) and now[p][2] > before[p][2] for p in led)
        ok = ok and all(victim_id not in isr for _, isr, _ in now.values())
        return now if ok else None

    after = wait_for(moved, timeout=30, interval=0.02, what="every survivor agreeing on new leaders")
    for partition, (leader, _, _) in after.items():
        assert produce(cluster.broker(leader).port, topic, partition, b"after")[0] == 0


def test_a_broker_restarted_within_its_session_leads_in_a_new_epoch(cluster_factory):
    # A long session: the restarted broker re-registers long before its old session expires.
    cluster = cluster_factory(3, session_timeout_ms=60_000)
    topic = "restarted"
    create_topics(cluster.brokers[0].port, topic, 6)
    before = states_everywhere(cluster, topic, cluster.brokers)
    assert before is not None
    for partition, (leader, _, _) in before.items():
        assert produce(cluster.broker(leader).port, topic, partition, b"before")[0] == 0
    victim = cluster.broker(0)
    led = {p: s for p, s in before.items() if s[0] == 0}
    assert led, before
    victim.kill()
    victim.start()

    def fenced() -> dict | None:
        now = states_everywhere(cluster, topic, cluster.brokers)
        return now if now and all(now[p][2] > led[p][2] for p in led) else None

    after = wait_for(fenced, timeout=30, what="the restarted broker's partitions in new leader epochs")
    for p, (_, _, epoch) in after.items():
        if p not in led:
            assert epoch == before[p][2]  # partitions it did not lead keep their leader epoch
    for partition, (leader, _, _) in after.items():
        assert leader >= 0
        error, _ = produce(cluster.broker(leader).port, topic, partition, b"after")
        assert error == 0
    assert "registered again (new incarnation) within its session" in \
        (cluster.data_dir / "controller" / "controller.out").read_text()


def test_a_stuck_broker_delays_create_topics_by_at_most_a_session(cluster_factory):
    """A broker that stopped answering but is not fenced yet cannot acknowledge the new
    image: CreateTopics waits for it at most until it is fenced, and the forwarding broker's
    heartbeats (on another connection) keep its own session alive meanwhile."""
    cluster = cluster_factory(3, session_timeout_ms=3000)
    stuck = cluster.broker(2)
    stuck.pause()
    try:
        start = time.monotonic()
        create_topics(cluster.brokers[0].port, "while-stuck", 2, rf=2, configs={"min.insync.replicas": "1"})
        took = time.monotonic() - start
    finally:
        stuck.resume()
    assert took < 15, took  # bounded by the stuck broker's session (plus slack), never hangs
    controller_log = (cluster.data_dir / "controller" / "controller.out").read_text()
    assert "broker 0 session expired" not in controller_log
    assert "broker 1 session expired" not in controller_log
    views = [partition_states(b.port, "while-stuck") for b in cluster.brokers[:2]]
    assert len(views[0]) == 2 and views[0] == views[1], views
    for partition, (leader, _, _) in views[0].items():
        assert leader in (0, 1)
        assert produce(cluster.broker(leader).port, "while-stuck", partition, b"x")[0] == 0
