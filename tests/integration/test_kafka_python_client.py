"""kafka-python, a client we did not write, against our broker running as a process."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

pytestmark = pytest.mark.integration

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]
N = 100_000
PARTITIONS = 4


def create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS, configs=None) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic(name, partitions, 1, topic_configs=configs or {})])
    finally:
        admin.close()


def record(i: int) -> tuple[bytes | None, bytes, list, int]:
    key = None if i % 10 == 0 else f"key-{i % 997}".encode()
    value = f"value-{i}-".encode() + bytes([i % 256]) * (i % 50)
    headers = [("h", str(i).encode()), ("n\u00e9", b"" if i % 3 == 0 else b"x")]
    return key, value, headers, 1_700_000_000_000 + i


def consume_all(bootstrap: str, topic: str, partitions: int, expected: int, **kw) -> list:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=10_000, **kw)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, 0)
    out = []
    deadline = time.monotonic() + 120
    while len(out) < expected and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=1000, max_records=10_000).values():
            out.extend(records)
    consumer.close()
    return out


@pytest.mark.parametrize("codec", CODECS, ids=[c or "none" for c in CODECS])
def test_produce_and_consume_every_record_with_each_codec(shared_broker, codec):
    topic = f"roundtrip-{codec or 'none'}"
    create_topic(shared_broker.bootstrap_servers, topic)
    producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap_servers, acks="all",
                             compression_type=codec, linger_ms=5, batch_size=64 * 1024,
                             enable_idempotence=False)
    sent = {}
    futures = []
    for i in range(N):
        key, value, headers, ts = record(i)
        futures.append((i, producer.send(topic, key=key, value=value, headers=headers,
                                         partition=i % PARTITIONS, timestamp_ms=ts)))
    producer.flush()
    for i, fut in futures:
        md = fut.get(timeout=30)
        sent[(md.partition, md.offset)] = i
    producer.close()
    assert len(sent) == N

    got = consume_all(shared_broker.bootstrap_servers, topic, PARTITIONS, N)
    assert len(got) == N
    seen = set()
    for r in got:
        i = sent[(r.partition, r.offset)]
        key, value, headers, ts = record(i)
        assert (r.key, r.value, r.timestamp) == (key, value, ts)
        assert [(h[0], h[1]) for h in r.headers] == headers
        seen.add(i)
    assert len(seen) == N
    # offsets within each partition are dense and start at 0
    for p in range(PARTITIONS):
        offsets = sorted(r.offset for r in got if r.partition == p)
        assert offsets == list(range(len(offsets)))
