"""DeleteRecords on a 3-broker cluster of real processes, replication factor 3.

The leader moves its log start offset; the followers take it from their next fetch
response and report theirs back; the request is answered once every in-sync replica got
there (the low watermark), so a new leader after the old one's death starts at the same
offset. A follower that cannot follow (SIGSTOP) holds the answer until the request's
timeout (REQUEST_TIMED_OUT) or until it leaves the ISR; once resumed it catches up, log
start included. A broker that does not lead the partition answers NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

import json

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka import TopicPartition as KpTopicPartition
from kafka.admin import NewTopic

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import NotLeaderOrFollower, RequestTimedOut
from connector.client import Admin
from tests.wire import WireClient, partition_states, wait_for

pytestmark = pytest.mark.integration

FAST = {"replica.lag.time.max.ms": "2000"}


def _setup(cluster, topic: str, records: int = 100) -> tuple[int, list[int]]:
    """A 1-partition RF-3 topic with ``records`` records, all replicas in sync;
    returns (leader, followers)."""
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(topic, 1, 3)])
    finally:
        admin.close()
    wait_for(lambda: all(len(partition_states(b.port, topic).get(0, (-1, []))[1]) == 3
                         for b in cluster.brokers), what=f"{topic} with 3 in-sync replicas everywhere")
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all")
    try:
        for i in range(records):
            producer.send(topic, b"v%d" % i, partition=0)
        producer.flush(30)
    finally:
        producer.close()
    leader = partition_states(cluster.brokers[0].port, topic)[0][0]
    return leader, [b for b in range(3) if b != leader]


def _log_start(cluster, broker: int, topic: str) -> int:
    """The log start offset broker ``broker`` has written for ``topic``-0 (0 before the
    log's state was first written)."""
    state = cluster.broker(broker).data_dir / "logs" / f"{topic}-0" / "log-state.json"
    if not state.exists():
        return 0
    return int(json.loads(state.read_text())["log_start_offset"])


def _delete(port: int, topic: str, offset: int, timeout_ms: int = 10_000):
    with WireClient(port, timeout=30) as c:
        r = c.request(ApiKey.DELETE_RECORDS, 2, {
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": offset}]}],
            "timeout_ms": timeout_ms})
    return r.topics[0].partitions[0]


def test_followers_follow_the_log_start_and_a_new_leader_keeps_it(cluster_factory) -> None:
    cluster = cluster_factory(3, overrides=FAST)
    topic = "truncated-rf3"
    leader, followers = _setup(cluster, topic)

    # a follower is not the leader
    assert _delete(cluster.broker(followers[0]).port, topic, 10).error_code == NotLeaderOrFollower.code

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        result = admin.delete_records({KpTopicPartition(topic, 0): 60}, timeout_ms=30_000)
    finally:
        admin.close()
    # answered once every in-sync replica moved: their logs say so already
    assert result[KpTopicPartition(topic, 0)]["low_watermark"] == 60
    assert [_log_start(cluster, b, topic) for b in range(3)] == [60, 60, 60]

    cluster.broker(leader).kill()
    live = cluster.broker(followers[0]).port
    wait_for(lambda: partition_states(live, topic).get(0, (leader,))[0] in followers,
             what="a new leader")
    with Admin(bootstrap_servers=cluster.broker(followers[0]).bootstrap_servers) as pyq_admin:
        earliest = pyq_admin.list_offsets({(topic, 0): "earliest"}, timeout_ms=30_000)
        latest = pyq_admin.list_offsets({(topic, 0): "latest"}, timeout_ms=30_000)
    assert [o.offset for o in earliest.values()] == [60]
    assert [o.offset for o in latest.values()] == [100]


def test_a_stopped_follower_holds_the_answer_until_the_timeout_then_catches_up(cluster_factory) -> None:
    cluster = cluster_factory(3, overrides=FAST)
    topic = "truncated-stuck-follower"
    leader, followers = _setup(cluster, topic)
    stuck = followers[0]
    cluster.broker(stuck).pause()
    try:
        r = _delete(cluster.broker(leader).port, topic, 50, timeout_ms=300)
        assert r.error_code == RequestTimedOut.code  # still in the ISR, not moved
        assert _log_start(cluster, leader, topic) == 50  # the leader moved at once

        # once it has left the ISR (replica.lag.time.max.ms), the others are enough
        wait_for(lambda: stuck not in partition_states(cluster.broker(leader).port, topic)[0][1],
                 what="the stopped follower out of the ISR")
        r = _delete(cluster.broker(leader).port, topic, 70)
        assert (r.error_code, r.low_watermark) == (0, 70)
        assert _log_start(cluster, followers[1], topic) == 70
        assert _log_start(cluster, stuck, topic) == 0
    finally:
        cluster.broker(stuck).resume()
    wait_for(lambda: _log_start(cluster, stuck, topic) == 70, what="the resumed follower's log start")
    wait_for(lambda: stuck in partition_states(cluster.broker(leader).port, topic)[0][1],
             what="the resumed follower back in the ISR")
