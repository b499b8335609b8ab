"""acks=all on a 3-broker cluster of real processes: nothing acknowledged is ever lost."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import NotEnoughReplicas
from broker_sim.protocol.records import RecordBatchBuilder
from tests.metrics import scrape, value
from tests.wire import WireClient, partition_states, produce_body, wait_for

pytestmark = pytest.mark.integration

FAST = {"replica.lag.time.max.ms": "2000", "log.retention.check.interval.ms": "60000"}


def create(bootstrap: str, topic: str, partitions: int, rf: int = 3, configs: dict | None = None) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, rf, topic_configs=configs or {})])
    finally:
        admin.close()


def fully_replicated(cluster, topic: str, n: int) -> dict:
    """Every live broker reports all n partitions led, with 3 replicas in sync (same view)."""
    views = [partition_states(b.port, topic) for b in cluster.brokers if b.proc.poll() is None]
    states = views[0]
    ok = len(states) == n and all(leader >= 0 and len(isr) == 3 for leader, isr, _ in states.values())
    return states if ok and all(v == states for v in views) else {}


def read_values(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000)
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    consumer.seek_to_beginning()
    values = [r.value for r in consumer]
    consumer.close()
    return values


def batch(*values: bytes) -> bytes:
    b = RecordBatchBuilder()
    for v in values:
        b.append(int(time.time() * 1000), None, v)
    return b.build()


@pytest.mark.parametrize("restart_killed", [False, True], ids=["killed-stays-dead", "killed-restarts"])
def test_acks_all_loses_nothing_when_a_leader_is_killed(cluster_factory, restart_killed):
    cluster = cluster_factory(3, overrides=FAST)
    topic = "acked"
    create(cluster.bootstrap_servers, topic, 4, 3, {"min.insync.replicas": "2"})
    states = wait_for(lambda: fully_replicated(cluster, topic, 4), what="all partitions with 3 in sync")
    victim = states[0][0]

    total = 200_000
    acked: list[bytes] = []
    failed: list[BaseException] = []
    lock = threading.Lock()
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", retries=2**31 - 1,
                             enable_idempotence=False, linger_ms=5, batch_size=64 * 1024,
                             max_in_flight_requests_per_connection=1, request_timeout_ms=15_000,
                             delivery_timeout_ms=120_000)

    def on_ok(value: bytes):
        def cb(_md):
            with lock:
                acked.append(value)
        return cb

    killed_at = None
    for i in range(total):
        value = b"r%07d" % i
        producer.send(topic, value=value, partition=i % 4).add_callback(on_ok(value)).add_errback(failed.append)
        if i == total // 4:
            producer.flush()
            cluster.broker(victim).kill()  # kill -9 the leader of partition 0 mid-stream
            killed_at = time.monotonic()
    producer.flush(timeout=180)
    producer.close()

    alive = next(b for b in cluster.brokers if b.broker_id != victim)
    new_leader = wait_for(lambda: partition_states(alive.port, topic)[0][0] not in (-1, victim) or None,
                          what="a new leader for partition 0")
    assert new_leader
    assert killed_at is not None
    if restart_killed:
        cluster.broker(victim).start()
        wait_for(lambda: fully_replicated(cluster, topic, 4), timeout=60, what="the restarted broker rejoining the ISR")

    values = read_values(alive.bootstrap_servers, topic, 4)
    distinct = set(values)
    lost = set(acked) - distinct
    duplicates = len(values) - len(distinct)
    print(f"acknowledged {len(acked)}, failed {len(failed)}, read {len(values)}, "
          f"duplicates {duplicates}, lost {len(lost)}")
    assert not lost, f"{len(lost)} acknowledged records were lost, e.g. {sorted(lost)[:5]}"
    assert len(acked) + len(failed) == total
    assert len(acked) >= total * 0.99  # retries carry the sends through the election


def test_paused_followers_leave_the_isr_and_rejoin(cluster_factory):
    cluster = cluster_factory(3, overrides=FAST)
    topic = "paused"
    create(cluster.bootstrap_servers, topic, 1, 3, {"min.insync.replicas": "2"})
    states = wait_for(lambda: fully_replicated(cluster, topic, 1), what="3 in sync")
    leader_id = states[0][0]
    leader = cluster.broker(leader_id)
    followers = [b for b in cluster.brokers if b.broker_id != leader_id]

    followers[0].pause()
    wait_for(lambda: len(partition_states(leader.port, topic)[0][1]) == 2, timeout=20,
             what="the paused follower leaving the ISR")
    with WireClient(leader.port) as c:
        r = c.request(ApiKey.PRODUCE, 8, produce_body(topic, 0, batch(b"with two in sync")))
        assert r.responses[0].partition_responses[0].error_code == 0

    followers[1].pause()
    wait_for(lambda: len(partition_states(leader.port, topic)[0][1]) == 1, timeout=20,
             what="the second paused follower leaving the ISR")
    with WireClient(leader.port) as c:
        r = c.request(ApiKey.PRODUCE, 8, produce_body(topic, 0, batch(b"with one in sync")))
        assert r.responses[0].partition_responses[0].error_code == NotEnoughReplicas.code

    for f in followers:
        f.resume()
    wait_for(lambda: fully_replicated(cluster, topic, 1), timeout=30, what="both followers rejoining")
    with WireClient(leader.port) as c:
        r = c.request(ApiKey.PRODUCE, 8, produce_body(topic, 0, batch(b"all back")))
        assert r.responses[0].partition_responses[0].error_code == 0
    values = read_values(leader.bootstrap_servers, topic, 1)
    assert values == [b"with two in sync", b"all back"]


def test_divergent_leader_truncates_when_it_returns_as_follower(cluster_factory):
    cluster = cluster_factory(3, overrides={"replica.lag.time.max.ms": "30000", "metrics.port": "0"},
                              session_timeout_ms=3000)
    topic = "diverge"
    create(cluster.bootstrap_servers, topic, 1, 3, {"min.insync.replicas": "1"})
    states = wait_for(lambda: fully_replicated(cluster, topic, 1), what="3 in sync")
    leader_id = states[0][0]
    leader = cluster.broker(leader_id)
    followers = [b for b in cluster.brokers if b.broker_id != leader_id]

    with WireClient(leader.port) as c:
        for i in range(5):
            r = c.request(ApiKey.PRODUCE, 8, produce_body(topic, 0, batch(b"committed-%d" % i)))
            assert r.responses[0].partition_responses[0].error_code == 0
    # the followers stop replicating; the leader appends records nobody else gets
    for f in followers:
        f.pause()
    # until the followers' outstanding long-poll fetches (500 ms) have answered empty, so
    # that no fetch is waiting at the leader to carry the next records out: none in its
    # Fetch purgatory or its request queue, and no Fetch answered since the last look
    assert leader.metrics_port is not None
    answered: list[float] = []

    def no_fetch_waiting() -> bool:
        s = scrape(leader.metrics_port)
        answered.append(value(s, "pyq_requests_total", api="Fetch"))
        return (value(s, "pyq_purgatory_delayed_operations", purgatory="Fetch") == 0
                and value(s, "pyq_request_queue_size") == 0
                and len(answered) >= 2 and answered[-1] == answered[-2])

    wait_for(no_fetch_waiting, timeout=10, what="no follower fetch waiting at the leader")
    with WireClient(leader.port) as c:
        for i in range(3):
            r = c.request(ApiKey.PRODUCE, 8, produce_body(topic, 0, batch(b"doomed-%d" % i), acks=1))
            assert r.responses[0].partition_responses[0].error_code == 0
    leader.kill()
    for f in followers:
        f.resume()
    survivor = followers[0]
    wait_for(lambda: partition_states(survivor.port, topic)[0][0] in (followers[0].broker_id,
                                                                      followers[1].broker_id),
             timeout=20, what="a follower elected leader")
    new_leader = cluster.broker(partition_states(survivor.port, topic)[0][0])
    wait_for(lambda: partition_states(new_leader.port, topic)[0][0] == new_leader.broker_id,
             what="the new leader knowing it leads")
    with WireClient(new_leader.port) as c:
        r = c.request(ApiKey.PRODUCE, 8, produce_body(topic, 0, batch(b"after-failover")))
        assert r.responses[0].partition_responses[0].error_code == 0

    leader.start()  # comes back as a follower and must drop the doomed records
    wait_for(lambda: fully_replicated(cluster, topic, 1), timeout=30, what="the old leader rejoining")
    values = read_values(new_leader.bootstrap_servers, topic, 1)
    assert values == [b"committed-%d" % i for i in range(5)] + [b"after-failover"]
    assert "truncating follower log" in leader.output()

    # every replica holds exactly the same bytes (the followers fetch the last batch in
    # their own time: read while they run until all agree, then again once stopped)
    def replica_bytes() -> list[bytes]:
        return [b"".join(f.read_bytes() for f in sorted(Path(b.data_dir, "logs", f"{topic}-0").glob("*.log")))
                for b in cluster.brokers]

    wait_for(lambda: len(set(replica_bytes())) == 1, what="every replica holding the same bytes")
    for b in cluster.brokers:
        b.stop()
    contents = replica_bytes()
    assert contents[0] == contents[1] == contents[2]
    assert b"doomed" not in contents[leader_id]


def test_idle_partitions_stay_in_sync_while_fetch_sessions_skip_them(cluster_factory):
    """Followers fetch in incremental sessions: their requests stop naming idle partitions
    and the leader's answers leave them out, yet the leader still counts each follower as
    caught up on them (it reads every partition of the session), so writing to one topic
    for several ``replica.lag.time.max.ms`` leaves the idle ones fully in sync, and what
    was written reaches every replica."""
    cluster = cluster_factory(3, overrides=FAST)
    create(cluster.bootstrap_servers, "busy", 2, 3, {"min.insync.replicas": "3"})
    for i in range(4):
        create(cluster.bootstrap_servers, f"idle{i}", 3, 3)
    for topic, n in [("busy", 2)] + [(f"idle{i}", 3) for i in range(4)]:
        wait_for(lambda t=topic, k=n: fully_replicated(cluster, t, k), what=f"{topic} in sync")

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=5)
    deadline = time.monotonic() + 3 * int(FAST["replica.lag.time.max.ms"]) / 1000
    sent = 0
    while time.monotonic() < deadline:
        # acks=all with min.insync.replicas=3: each acknowledgement means all three
        # replicas of the busy partition have the record
        producer.send("busy", b"v%06d" % sent, partition=sent % 2).get(timeout=10)
        sent += 1
    producer.close()

    for i in range(4):
        assert fully_replicated(cluster, f"idle{i}", 3), f"idle{i} lost a replica from its ISR"
    assert sorted(read_values(cluster.bootstrap_servers, "busy", 2)) == [b"v%06d" % i for i in range(sent)]
