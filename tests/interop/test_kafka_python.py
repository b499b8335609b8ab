"""kafka-python, a client we did not write, against our broker running as a process; and
both ways between kafka-python and pyq's own client."""

from __future__ import annotations

import pytest
from kafka import KafkaProducer

from connector.client import Admin, Fetcher, NewTopic, Producer
from tests.interop.clients import CODECS, kafka_python_consume_all, record

pytestmark = pytest.mark.integration

N = 2000


@pytest.fixture(scope="module")
def admin(shared_broker):
    with Admin(bootstrap_servers=shared_broker.bootstrap_servers) as a:
        yield a


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_round_trips_many_records_with_each_codec(shared_broker, admin, codec):
    """100,000 records over 4 partitions, acks=all: every one comes back, offsets dense from 0."""
    n, partitions = 100_000, 4
    topic = f"roundtrip-{codec}"
    admin.create_topics([NewTopic(topic, partitions)])
    producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap_servers, acks="all",
                             compression_type=None if codec == "none" else codec, linger_ms=5,
                             batch_size=64 * 1024, enable_idempotence=False)
    futures = [(i, producer.send(topic, key=r[0], value=r[1], headers=r[2], partition=i % partitions,
                                 timestamp_ms=r[3]))
               for i, r in ((i, record(i, null_header=b"")) for i in range(n))]
    producer.flush()
    sent = {}
    for i, fut in futures:
        md = fut.get(timeout=30)
        sent[(md.partition, md.offset)] = i
    producer.close()
    assert len(sent) == n
    got = kafka_python_consume_all(shared_broker.bootstrap_servers, topic, partitions, n)
    assert len(got) == n
    for r in got:
        key, value, headers, ts = record(sent[(r.partition, r.offset)], null_header=b"")
        assert (r.key, r.value, r.timestamp) == (key, value, ts)
        assert [tuple(h) for h in r.headers] == headers
    assert {sent[(r.partition, r.offset)] for r in got} == set(range(n))
    for p in range(partitions):
        offsets = sorted(r.offset for r in got if r.partition == p)
        assert offsets == list(range(len(offsets)))


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_what_our_producer_wrote(shared_broker, admin, codec):
    topic = f"interop-ours-{codec}"
    admin.create_topics([NewTopic(topic, 2)])
    with Producer(bootstrap_servers=shared_broker.bootstrap_servers, compression_type=codec,
                  batch_size=8192) as p:
        futures = [(record(i), p.send(topic, record(i)[1], key=record(i)[0],
                                      headers=record(i)[2], timestamp=record(i)[3]))
                   for i in range(N)]
        p.flush(timeout=60)
    sent = {}
    for rec, f in futures:
        md = f.result(0)
        sent[(md.partition, md.offset)] = rec
    got = kafka_python_consume_all(shared_broker.bootstrap_servers, topic, 2, N)
    assert len(got) == N
    for r in got:
        key, value, headers, ts = sent[(r.partition, r.offset)]
        assert (r.key, r.value, r.timestamp) == (key, value, ts)
        assert [tuple(h) for h in r.headers] == headers


@pytest.mark.parametrize("codec", CODECS)
def test_our_fetcher_reads_what_kafka_python_wrote(shared_broker, admin, codec):
    topic = f"interop-theirs-{codec}"
    admin.create_topics([NewTopic(topic, 2)])
    producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap_servers, acks="all",
                             compression_type=None if codec == "none" else codec,
                             linger_ms=5, batch_size=16384, enable_idempotence=False)
    records = [record(i, null_header=b"") for i in range(N)]
    futures = [(r, producer.send(topic, key=r[0], value=r[1], headers=r[2], timestamp_ms=r[3]))
               for r in records]
    producer.flush()
    sent = {}
    for rec, f in futures:
        md = f.get(timeout=30)
        sent[(md.partition, md.offset)] = rec
    producer.close()
    with Fetcher(bootstrap_servers=shared_broker.bootstrap_servers) as fetcher:
        for p in range(2):
            end = 1 + max(o for (q, o) in sent if q == p)
            records = list(fetcher.iter_records(topic, p, 0, end))
            assert [r.offset for r in records] == list(range(end))
            for r in records:
                assert (r.key, r.value, [tuple(h) for h in r.headers], r.timestamp) == sent[
                    (p, r.offset)]
            columns = list(fetcher.iter_columns(topic, p, 0, end, with_headers=True))
            rows = [(o, k, v, ts, h) for c in columns for o, k, v, ts, h in zip(
                c.offsets.tolist(), c.keys.to_pylist(), c.values.to_pylist(),
                c.timestamps.tolist(), c.headers, strict=True)]
            assert rows == [(o, *sent[(p, o)][:2], sent[(p, o)][3], sent[(p, o)][2])
                            for o in range(end)]


def test_both_clients_put_a_key_in_the_same_partition(shared_broker, admin):
    topic = "interop-partitioning"
    admin.create_topics([NewTopic(topic, 7)])
    keys = [f"user-{i}".encode() for i in range(60)]
    with Producer(bootstrap_servers=shared_broker.bootstrap_servers) as p:
        ours = {k: p.send(topic, b"ours", key=k) for k in keys}
        p.flush(timeout=30)
    theirs_producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap_servers,
                                    enable_idempotence=False)
    theirs = {k: theirs_producer.send(topic, key=k, value=b"theirs") for k in keys}
    theirs_producer.flush()
    assert {k: f.result(0).partition for k, f in ours.items()} == {
        k: f.get(timeout=10).partition for k, f in theirs.items()}
    theirs_producer.close()
