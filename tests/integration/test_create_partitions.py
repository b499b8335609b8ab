"""CreatePartitions: a topic grows under kafka-python's admin and our own, on a 3-broker
cluster; the new partitions get leaders and in-sync replicas on every broker's metadata,
take records and serve them; a topic never shrinks and an unknown topic is refused."""

from __future__ import annotations

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewPartitions
from kafka.errors import InvalidPartitionsError, UnknownTopicOrPartitionError

from broker_sim.protocol.errors import InvalidPartitions, UnknownTopicOrPartition
from connector.client import Admin, NewTopic
from tests.wire import partition_states, wait_for

pytestmark = pytest.mark.integration


def _grown(cluster, topic: str, count: int) -> dict:
    """Every broker's view of the topic once it has ``count`` partitions, all fully in sync."""
    views = [partition_states(b.port, topic) for b in cluster.brokers]
    ok = all(len(v) == count and all(leader >= 0 and len(isr) == 3
                                     for leader, isr, _e in v.values()) for v in views)
    return views[0] if ok else {}


def test_kafka_python_grows_a_topic_and_uses_the_new_partitions(cluster_factory):
    cluster = cluster_factory(3)
    bootstrap = cluster.bootstrap_servers
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic("grow", 2, 3)])
    wait_for(lambda: _grown(cluster, "grow", 2), what="2 partitions in sync")

    kadmin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        kadmin.create_partitions({"grow": NewPartitions(total_count=5)})
        with pytest.raises(InvalidPartitionsError):  # a topic never shrinks
            kadmin.create_partitions({"grow": NewPartitions(total_count=3)})
        with pytest.raises(UnknownTopicOrPartitionError):
            kadmin.create_partitions({"no-such-topic": NewPartitions(total_count=3)})
    finally:
        kadmin.close()
    states = wait_for(lambda: _grown(cluster, "grow", 5), what="5 partitions in sync")
    assert sorted({leader for leader, _isr, _e in states.values()}) == [0, 1, 2]  # spread

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for p in range(5):
        producer.send("grow", value=f"to-{p}".encode(), partition=p).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=10_000)
    consumer.assign([TopicPartition("grow", p) for p in range(5)])
    consumer.seek_to_beginning()
    got = {(r.partition, r.value) for r in consumer}
    consumer.close()
    assert got == {(p, f"to-{p}".encode()) for p in range(5)}


def test_our_admin_grows_a_topic_and_names_what_it_refuses(cluster_factory):
    cluster = cluster_factory(3)
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic("ours", 1, 3)])
        admin.create_partitions({"ours": 3}, validate_only=True)  # checked, nothing changes
        admin.create_partitions({"ours": 3})
        with pytest.raises(InvalidPartitions, match="'ours' has 3 partitions.*got 2"):
            admin.create_partitions({"ours": 2})
        with pytest.raises(UnknownTopicOrPartition, match="missing"):
            admin.create_partitions({"missing": 2})
    wait_for(lambda: _grown(cluster, "ours", 3), what="3 partitions in sync")
