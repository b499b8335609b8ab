"""A fetch waits in the purgatory: answered when data arrives, or at max_wait_ms."""

from __future__ import annotations

import os
import threading
import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.records import RecordBatchBuilder
from tests.wire import WireClient, fetch_body

pytestmark = pytest.mark.integration


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def produce_request(topic: str, value: bytes) -> dict:
    b = RecordBatchBuilder()
    b.append(int(time.time() * 1000), None, value)
    return {"transactional_id": None, "acks": 1, "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": b.build()}]}]}


@pytest.fixture(scope="module")
def broker(shared_broker):
    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap_servers)
    admin.create_topics([NewTopic("longpoll", 1, 1), NewTopic("idle", 1, 1)])
    admin.close()
    return shared_broker


def test_fetch_waits_until_max_wait_when_no_data(broker):
    with WireClient(broker.port) as c:
        t0 = time.monotonic()
        r = c.request(ApiKey.FETCH, 11, fetch_body("longpoll", 0, 0, max_wait_ms=600, min_bytes=1))
        waited = time.monotonic() - t0
    assert r.responses[0].partitions[0].error_code == 0
    assert len(r.responses[0].partitions[0].records) == 0
    assert 0.55 <= waited < 2.0


def test_fetch_is_answered_as_soon_as_data_arrives(broker):
    with WireClient(broker.port) as consumer, WireClient(broker.port) as producer:
        start = consumer.request(ApiKey.LIST_OFFSETS, 5, {
            "replica_id": -1, "isolation_level": 0, "topics": [{"name": "longpoll", "partitions": [
                {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
        offset = start.topics[0].partitions[0].offset
        timer = threading.Timer(0.3, lambda: producer.request(
            ApiKey.PRODUCE, 8, produce_request("longpoll", b"wake up")))
        timer.start()
        t0 = time.monotonic()
        r = consumer.request(ApiKey.FETCH, 11, fetch_body("longpoll", 0, offset, max_wait_ms=5000, min_bytes=1))
        waited = time.monotonic() - t0
        timer.join()
    part = r.responses[0].partitions[0]
    assert len(part.records) > 0
    assert 0.25 <= waited < 2.0, waited  # well before the 5 s wait


def test_kafka_python_consumer_long_polls_and_idle_costs_no_cpu(broker):
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False,
                             fetch_max_wait_ms=500, fetch_min_bytes=10_000_000)
    tp = TopicPartition("idle", 0)
    consumer.assign([tp])
    consumer.seek_to_end(tp)
    consumer.poll(timeout_ms=500)  # connect, settle
    before = cpu_seconds(broker.pid)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 3.0:
        assert consumer.poll(timeout_ms=500) == {}
    idle_cpu = cpu_seconds(broker.pid) - before
    assert idle_cpu < 0.3, f"an idle consumer cost the broker {idle_cpu:.2f}s of CPU in 3s"

    # data arrives: the consumer gets it at the wait (min_bytes is never reached), not later
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=False)
    producer.send("idle", b"hello").get(timeout=10)
    producer.close()
    t0 = time.monotonic()
    got = []
    while not got and time.monotonic() - t0 < 5:
        for recs in consumer.poll(timeout_ms=1000).values():
            got.extend(r.value for r in recs)
    assert got == [b"hello"]
    assert time.monotonic() - t0 < 2.0
    consumer.close()
