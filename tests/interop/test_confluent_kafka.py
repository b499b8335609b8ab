"""confluent-kafka (librdkafka, a C client we did not write) against our broker process.

What a librdkafka application does without consumer groups: an idempotent acks=all
producer with each compression codec, a consumer that assigns partitions and reads them
in batches, metadata, watermarks and offsets-for-times, topic creation with the admin
client; and records crossing between librdkafka and pyq's own client both ways.
(Consumer groups — ``subscribe()`` — come with the group coordinator.)
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connector.client import Fetcher
from connector.client import Producer as PyqProducer
from tests.interop.clients import CODECS, record

pytestmark = pytest.mark.integration

N = 5000
PARTITIONS = 3


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                                  operation_timeout=10)
    futures[topic].result(timeout=30)  # raises on failure


def produce(bootstrap: str, topic: str, codec: str, n: int = N) -> dict[tuple[int, int], int]:
    """Records 0..n-1 with librdkafka; returns {(partition, offset): i} from the delivery reports."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "compression.type": codec, "linger.ms": 5})
    sent: dict[tuple[int, int], int] = {}
    errors: list = []

    def delivered(i: int):
        def report(err, msg) -> None:
            if err is not None:
                errors.append(err)
            else:
                sent[(msg.partition(), msg.offset())] = i
        return report

    for i in range(n):
        key, value, headers, ts = record(i)
        producer.produce(topic, value=value, key=key, headers=headers or None, timestamp=ts,
                         partition=i % PARTITIONS, on_delivery=delivered(i))
        producer.poll(0)
    assert producer.flush(30) == 0
    assert errors == []
    return sent


def consume(bootstrap: str, topic: str, expected: int) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-no-subscribe",
                         "enable.auto.commit": False, "enable.partition.eof": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    out: list = []
    try:
        for _ in range(200):
            if len(out) >= expected:
                break
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                assert msg.error() is None, msg.error()
                out.append(msg)
    finally:
        consumer.close()
    return out


def headers_of(msg) -> list:
    return [(k, v) for k, v in (msg.headers() or [])]


@pytest.mark.parametrize("codec", CODECS)
def test_an_idempotent_librdkafka_producer_and_a_batch_consumer_round_trip(shared_broker, codec):
    bootstrap = shared_broker.bootstrap_servers
    topic = f"librdkafka-{codec}"
    create_topic(bootstrap, topic)
    sent = produce(bootstrap, topic, codec)
    assert len(sent) == N
    got = consume(bootstrap, topic, N)
    assert len(got) == N
    for msg in got:
        key, value, headers, ts = record(sent[(msg.partition(), msg.offset())])
        assert (msg.key(), msg.value(), msg.timestamp()[1]) == (key, value, ts)
        assert headers_of(msg) == headers
    for p in range(PARTITIONS):
        offsets = sorted(m.offset() for m in got if m.partition() == p)
        assert offsets == list(range(len(offsets)))


def test_metadata_watermarks_and_offsets_for_times(shared_broker):
    bootstrap = shared_broker.bootstrap_servers
    topic = "librdkafka-offsets"
    create_topic(bootstrap, topic)
    sent = produce(bootstrap, topic, "none", n=300)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-no-subscribe"})
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        assert sorted(metadata.topics[topic].partitions) == list(range(PARTITIONS))
        assert metadata.topics[topic].error is None
        for p in range(PARTITIONS):
            count = sum(1 for (q, _) in sent if q == p)
            assert consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) == (0, count)
        # record i has timestamp 1_600_000_000_000 + i and goes to partition i % 3
        wanted = [TopicPartition(topic, p, 1_600_000_000_000 + 150) for p in range(PARTITIONS)]
        found = consumer.offsets_for_times(wanted, timeout=10)
        by_index = {i: o for (p, o), i in sent.items()}
        for tp in found:
            first = min(i for i in range(150, 300) if i % PARTITIONS == tp.partition)
            assert tp.offset == by_index[first]
    finally:
        consumer.close()


def test_records_cross_between_librdkafka_and_pyqs_client(shared_broker):
    bootstrap = shared_broker.bootstrap_servers
    topic = "librdkafka-crossing"
    create_topic(bootstrap, topic)
    sent = produce(bootstrap, topic, "zstd", n=1000)
    with Fetcher(bootstrap_servers=bootstrap) as fetcher:
        for p in range(PARTITIONS):
            end = 1 + max(o for (q, o) in sent if q == p)
            for r in fetcher.iter_records(topic, p, 0, end):
                key, value, headers, ts = record(sent[(p, r.offset)])
                assert (r.key, r.value, [tuple(h) for h in r.headers], r.timestamp) == \
                    (key, value, headers, ts)
    back = "librdkafka-crossing-back"
    create_topic(bootstrap, back)
    with PyqProducer(bootstrap_servers=bootstrap, compression_type="lz4") as producer:
        futures = {i: producer.send(back, record(i)[1], key=record(i)[0], headers=record(i)[2],
                                    timestamp=record(i)[3], partition=i % PARTITIONS)
                   for i in range(1000)}
        producer.flush(timeout=30)
    where = {(f.result(0).partition, f.result(0).offset): i for i, f in futures.items()}
    got = consume(bootstrap, back, 1000)
    assert len(got) == 1000
    for msg in got:
        key, value, headers, ts = record(where[(msg.partition(), msg.offset())])
        assert (msg.key(), msg.value(), msg.timestamp()[1], headers_of(msg)) == (key, value, ts, headers)


def test_librdkafka_admin_describes_the_cluster_and_asks_for_elections(shared_broker):
    from confluent_kafka import ElectionType, KafkaError
    from confluent_kafka import TopicPartition as TP

    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap_servers})
    described = admin.describe_cluster(include_authorized_operations=True).result(30)
    assert [(n.id, n.host, n.port) for n in described.nodes] == [(0, "127.0.0.1", shared_broker.port)]
    assert described.controller.id == 0 and described.cluster_id
    assert {op.name for op in described.authorized_operations} >= {"DESCRIBE", "ALTER", "CREATE"}

    create_topic(shared_broker.bootstrap_servers, "rdkafka-elect", partitions=1)
    results = admin.elect_leaders(ElectionType.PREFERRED, [TP("rdkafka-elect", 0)]).result(30)
    # its one replica already leads: nothing to do, said per partition
    assert [(tp.topic, tp.partition, err.code()) for tp, err in results.items()] == \
        [("rdkafka-elect", 0, KafkaError.ELECTION_NOT_NEEDED)]
