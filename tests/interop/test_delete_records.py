"""DeleteRecords through admin clients we did not write, against a broker process.

kafka-python's ``KafkaAdminClient.delete_records`` and confluent-kafka's
``AdminClient.delete_records`` move a partition's log start offset: ListOffsets earliest
answers it, consumers reading from the earliest offset start there, and records below it
are gone (a fetch below it is OFFSET_OUT_OF_RANGE). -1 deletes up to the high watermark; an
offset above it is OFFSET_OUT_OF_RANGE and changes nothing; an unknown topic is
UNKNOWN_TOPIC_OR_PARTITION. pyq's own ``Admin.delete_records`` answers the low watermarks.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer as CkConsumer
from confluent_kafka import KafkaException
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KpNewTopic
from kafka.errors import OffsetOutOfRangeError, UnknownTopicOrPartitionError

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import OffsetOutOfRange
from connector.client import Admin, TopicPartition
from tests.wire import WireClient, fetch_body

pytestmark = pytest.mark.integration


@pytest.fixture
def kp_admin(shared_broker):
    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap_servers)
    yield admin
    admin.close()


def _topic(broker, admin: KafkaAdminClient, name: str, partitions: int = 2,
           records: int = 100, configs: dict[str, str] | None = None) -> None:
    """``records`` records in each partition (values ``p<partition>-<i>``)."""
    admin.create_topics([KpNewTopic(name, partitions, 1, topic_configs=configs or {})])
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all",
                             batch_size=256)  # batches well below segment.bytes
    try:
        for p in range(partitions):
            for i in range(records):
                producer.send(name, f"p{p}-{i}".encode(), partition=p)
        producer.flush(30)
    finally:
        producer.close()


def _earliest(broker, topic: str, partitions: int) -> dict[int, int]:
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        found = admin.list_offsets({(topic, p): "earliest" for p in range(partitions)})
    return {tp.partition: o.offset for tp, o in found.items()}


def _kp_read_from_earliest(broker, topic: str, partition: int) -> list[tuple[int, bytes]]:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=5_000)
    try:
        tp = KpTopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        out = []
        for r in consumer:
            out.append((r.offset, r.value))
            if r.offset == 99:
                break
        return out
    finally:
        consumer.close()


def test_kafka_python_delete_records_moves_the_log_start(shared_broker, kp_admin) -> None:
    topic = "kp-delete-records"
    # small segments, so whole segments below the new start are deleted too
    _topic(shared_broker, kp_admin, topic, configs={"segment.bytes": "1024"})
    result = kp_admin.delete_records({KpTopicPartition(topic, 0): 70,
                                      KpTopicPartition(topic, 1): -1}, timeout_ms=30_000)
    assert {tp.partition: r["low_watermark"] for tp, r in result.items()} == {0: 70, 1: 100}
    assert _earliest(shared_broker, topic, 2) == {0: 70, 1: 100}
    segments = sorted(int(f.stem) for f in (shared_broker.data_dir / "logs" / f"{topic}-0").glob("*.log"))
    assert 0 < segments[0] <= 70  # the segments wholly below 70 are gone

    records = _kp_read_from_earliest(shared_broker, topic, 0)
    assert records[0] == (70, b"p0-70")
    assert [o for o, _ in records] == list(range(70, 100))

    # below the log start: out of range, as Kafka answers
    with WireClient(shared_broker.port) as c:
        r = c.request(ApiKey.FETCH, 11, fetch_body(topic, 0, 69))
    assert r.responses[0].partitions[0].error_code == OffsetOutOfRange.code
    assert r.responses[0].partitions[0].log_start_offset == -1  # as Kafka: ListOffsets says 70

    # deleting less than is already deleted changes nothing
    result = kp_admin.delete_records({KpTopicPartition(topic, 0): 10})
    assert result[KpTopicPartition(topic, 0)]["low_watermark"] == 70


def test_kafka_python_errors(shared_broker, kp_admin) -> None:
    topic = "kp-delete-records-errors"
    _topic(shared_broker, kp_admin, topic, partitions=1, records=10)
    with pytest.raises(OffsetOutOfRangeError):
        kp_admin.delete_records({KpTopicPartition(topic, 0): 11})
    assert _earliest(shared_broker, topic, 1) == {0: 0}  # nothing changed
    with pytest.raises(UnknownTopicOrPartitionError):  # sent as is: no leader lookup first
        kp_admin.delete_records({KpTopicPartition("no-such-topic", 0): 5},
                                partition_leader_id=0, timeout_ms=5_000)


def test_confluent_kafka_delete_records_moves_the_log_start(shared_broker, kp_admin) -> None:
    topic = "ck-delete-records"
    _topic(shared_broker, kp_admin, topic)
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap_servers})
    futures = admin.delete_records([CkTopicPartition(topic, 0, 25), CkTopicPartition(topic, 1, 70)],
                                   operation_timeout=30)
    lows = {tp.partition: f.result(timeout=30).low_watermark for tp, f in futures.items()}
    assert lows == {0: 25, 1: 70}
    assert _earliest(shared_broker, topic, 2) == {0: 25, 1: 70}

    consumer = CkConsumer({"bootstrap.servers": shared_broker.bootstrap_servers,
                           "group.id": "ck-delete-records", "enable.auto.commit": False,
                           "auto.offset.reset": "earliest"})
    try:
        consumer.assign([CkTopicPartition(topic, 1, -2)])  # OFFSET_BEGINNING
        seen: list[tuple[int | None, bytes | None]] = []
        deadline = time.monotonic() + 30
        while len(seen) < 30 and time.monotonic() < deadline:
            m = consumer.poll(1.0)
            if m is not None and m.error() is None:
                seen.append((m.offset(), m.value()))
        assert seen[0] == (70, b"p1-70")
        assert [o for o, _ in seen] == list(range(70, 100))
    finally:
        consumer.close()

    futures = admin.delete_records([CkTopicPartition(topic, 0, 1000)], operation_timeout=10)
    with pytest.raises(KafkaException, match="OFFSET_OUT_OF_RANGE|out of range"):
        next(iter(futures.values())).result(timeout=30)


def test_pyq_admin_delete_records(shared_broker, kp_admin) -> None:
    topic = "pyq-delete-records"
    _topic(shared_broker, kp_admin, topic, records=20)
    with Admin(bootstrap_servers=shared_broker.bootstrap_servers) as admin:
        lows = admin.delete_records({(topic, 0): 5, TopicPartition(topic, 1): -1})
        assert lows == {TopicPartition(topic, 0): 5, TopicPartition(topic, 1): 20}
        with pytest.raises(OffsetOutOfRange, match=f"{topic}"):
            admin.delete_records({(topic, 0): 21})
        with pytest.raises(ValueError, match="must be >= 0"):
            admin.delete_records({(topic, 0): -5})
    assert _earliest(shared_broker, topic, 2) == {0: 5, 1: 20}
