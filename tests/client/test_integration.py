"""Producer, Fetcher and Admin against a real broker process (``python -m broker_sim``)."""

from __future__ import annotations

import threading
import time

import pytest

from broker_sim.protocol.errors import TopicAlreadyExists, UnknownTopicOrPartition
from broker_sim.protocol.records import BatchHeader, iter_batches
from connector.client import (
    Admin,
    Fetcher,
    KafkaTimeoutError,
    NewTopic,
    OffsetAndMetadata,
    OffsetOutOfRangeError,
    Producer,
    ProducerClosedError,
    RecordTooLargeError,
    TopicPartition,
)

pytestmark = pytest.mark.integration

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def record(i: int) -> tuple[bytes | None, bytes | None, list, int]:
    key = None if i % 7 == 0 else f"key-{i % 13}".encode()
    value = None if i % 50 == 3 else f"value-{i}-".encode() + bytes([i % 256]) * (i % 40)
    headers = [] if i % 3 else [("seq", str(i).encode()), ("empty", None)]
    return key, value, headers, 1_700_000_000_000 + i * 3


@pytest.fixture(scope="module")
def admin(shared_broker):
    with Admin(bootstrap_servers=shared_broker.bootstrap_servers) as a:
        yield a


@pytest.fixture(scope="module")
def fetcher(shared_broker):
    with Fetcher(bootstrap_servers=shared_broker.bootstrap_servers, fetch_max_wait_ms=100) as f:
        yield f


def produce(bootstrap: str, topic: str, n: int, **options) -> dict[tuple[int, int], tuple]:
    """Send records 0..n-1; return {(partition, offset): (key, value, headers, ts)}."""
    with Producer(bootstrap_servers=bootstrap, linger_ms=2, batch_size=4096, **options) as p:
        futures = [(record(i), p.send(topic, record(i)[1], key=record(i)[0],
                                      headers=record(i)[2], timestamp=record(i)[3]))
                   for i in range(n)]
        p.flush(timeout=60)
    acked = {}
    for rec, f in futures:
        md = f.result(timeout=0)
        acked[(md.partition, md.offset)] = rec
    return acked


@pytest.mark.parametrize("codec", CODECS)
def test_every_record_comes_back_exactly_with_each_codec(shared_broker, admin, fetcher, codec):
    topic = f"client-roundtrip-{codec}"
    admin.create_topics([NewTopic(topic, 3)])
    acked = produce(shared_broker.bootstrap_servers, topic, 3000, compression_type=codec)
    assert len(acked) == 3000
    for p in range(3):
        end = max(o for (q, o) in acked if q == p) + 1
        got = {(p, r.offset): (r.key, r.value, [tuple(h) for h in r.headers], r.timestamp)
               for r in fetcher.iter_records(topic, p, 0, end)}
        assert got == {k: v for k, v in acked.items() if k[0] == p}
        table = fetcher.read_arrow(topic, p, 0, end, include_headers=True)
        rows = table.to_pylist()
        assert [r["offset"] for r in rows] == list(range(end))
        for row in rows:
            key, value, headers, ts = acked[(p, row["offset"])]
            assert (row["key"], row["value"]) == (key, value)
            assert [(h["key"], h["value"]) for h in row["headers"]] == headers
            assert int(row["timestamp"].timestamp() * 1000) == ts


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks(shared_broker, admin, fetcher, acks):
    topic = f"client-acks-{acks}"
    admin.create_topics([NewTopic(topic, 1)])
    with Producer(bootstrap_servers=shared_broker.bootstrap_servers, acks=acks,
                  enable_idempotence=acks == "all") as p:
        futures = [p.send(topic, f"r{i}".encode()) for i in range(500)]
        p.flush(timeout=30)
    offsets = [f.result(0).offset for f in futures]
    assert offsets == ([-1] * 500 if acks == "0" else list(range(500)))
    values = [r.value for r in fetcher.iter_records(topic, 0, 0, 500)]
    assert values == [f"r{i}".encode() for i in range(500)]


def test_idempotent_producer_writes_each_batch_once_in_order(shared_broker, admin, fetcher):
    topic = "client-idempotent"
    admin.create_topics([NewTopic(topic, 1)])
    with Producer(bootstrap_servers=shared_broker.bootstrap_servers, enable_idempotence=True,
                  batch_size=1024, linger_ms=0, max_in_flight_requests_per_connection=5) as p:
        futures = [p.send(topic, f"{i:06d}".encode() * 10) for i in range(5000)]
        p.flush(timeout=60)
    assert [f.result(0).offset for f in futures] == list(range(5000))
    values = [r.value for r in fetcher.iter_records(topic, 0, 0, 5000)]
    assert values == [f"{i:06d}".encode() * 10 for i in range(5000)]
    # The batches carry one producer id and consecutive sequences: no gap, no repeat.
    headers: list[BatchHeader] = []
    for record_set in fetcher.fetch_record_sets(topic, 0, 0, 5000):
        headers.extend(h for _, h in iter_batches(record_set) if h.base_offset >= (
            headers[-1].next_offset if headers else 0))
    assert len({h.producer_id for h in headers}) == 1 and headers[0].producer_id >= 0
    expected_seq = 0
    for h in headers:
        assert h.base_sequence == expected_seq
        expected_seq += h.records_count
    assert expected_seq == 5000 and len(headers) > 20


def test_callbacks_and_send_to_a_missing_topic(shared_broker, admin):
    admin.create_topics([NewTopic("client-callbacks", 1)])
    seen = []
    done = threading.Event()
    with Producer(bootstrap_servers=shared_broker.bootstrap_servers, max_block_ms=300) as p:
        def callback(metadata, error):
            seen.append((metadata, error, threading.current_thread().name))
            done.set()
        p.send("client-callbacks", b"x", callback=callback)
        assert done.wait(10)
        with pytest.raises(KafkaTimeoutError, match="not present in metadata after 300 ms"):
            p.send("client-no-such-topic", b"x")  # auto-creation is off on this broker
    [(metadata, error, thread)] = seen
    assert error is None and metadata.offset == 0 and thread.startswith("pyq-producer-sender")


def test_fetch_range_cuts_inside_batches(shared_broker, admin, fetcher):
    topic = "client-range"
    admin.create_topics([NewTopic(topic, 1)])
    with Producer(bootstrap_servers=shared_broker.bootstrap_servers, batch_size=300,
                  linger_ms=0) as p:
        for i in range(200):
            p.send(topic, f"{i:04d}".encode() * 5)
    first_batch = next(iter(fetcher.fetch_record_sets(topic, 0, 0, 200)))
    assert sum(1 for _ in iter_batches(first_batch)) > 5  # the range really cuts batches
    got = [r.offset for r in fetcher.iter_records(topic, 0, 17, 133)]
    assert got == list(range(17, 133))
    cols = list(fetcher.iter_columns(topic, 0, 17, 133))
    assert [o for c in cols for o in c.offsets.tolist()] == list(range(17, 133))


def test_long_poll_waits_for_records_written_later(shared_broker, admin, fetcher):
    topic = "client-long-poll"
    admin.create_topics([NewTopic(topic, 1)])

    def write_later():
        time.sleep(0.4)
        with Producer(bootstrap_servers=shared_broker.bootstrap_servers) as p:
            for i in range(10):
                p.send(topic, str(i).encode())

    writer = threading.Thread(target=write_later)
    writer.start()
    start = time.monotonic()
    values = [r.value for r in fetcher.iter_records(topic, 0, 0, 10, timeout_ms=20_000)]
    writer.join()
    assert values == [str(i).encode() for i in range(10)] and time.monotonic() - start >= 0.4
    with pytest.raises(KafkaTimeoutError, match="high watermark 10, range end 20"):
        list(fetcher.iter_records(topic, 0, 5, 20, timeout_ms=600))


def test_fetch_errors_name_the_partition(fetcher):
    with pytest.raises(UnknownTopicOrPartition):
        list(fetcher.iter_records("client-never-created", 0, 0, 1))


def test_offset_out_of_range_reports_log_start_and_end(broker_factory):
    broker = broker_factory(overrides={"log.retention.check.interval.ms": "200",
                                       "log.segment.bytes": "16384"})
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("client-retained", 1, configs={"retention.bytes": "40000"})])
        with Producer(bootstrap_servers=broker.bootstrap_servers, batch_size=4096) as p:
            for i in range(6000):
                p.send("client-retained", f"record-{i:06d}".encode() * 3)
        tp = TopicPartition("client-retained", 0)
        deadline = time.monotonic() + 20
        earliest = 0
        while earliest == 0 and time.monotonic() < deadline:
            earliest = admin.list_offsets({tp: "earliest"})[tp].offset
            time.sleep(0.1)
        assert earliest > 0, "retention should have deleted old segments"
        latest = admin.list_offsets({tp: "latest"})[tp].offset
    with Fetcher(bootstrap_servers=broker.bootstrap_servers) as fetcher:
        with pytest.raises(OffsetOutOfRangeError) as e:
            list(fetcher.iter_records("client-retained", 0, 0, 10))
        assert (e.value.topic, e.value.partition, e.value.offset) == ("client-retained", 0, 0)
        assert e.value.log_end_offset == latest and e.value.log_start_offset >= earliest
        assert "below the log start" in str(e.value)
        with pytest.raises(OffsetOutOfRangeError, match="above the log end") as e:
            list(fetcher.iter_records("client-retained", 0, latest + 100, latest + 110))
        assert e.value.log_end_offset == latest
        start, end = fetcher.offset_bounds("client-retained", 0)
        tail = [r.offset for r in fetcher.iter_records("client-retained", 0, start, end)]
        assert tail == list(range(start, end))


def test_admin_topics_offsets_and_group_offsets(shared_broker, admin):
    admin.create_topics([NewTopic("client-admin", 2, configs={"retention.ms": "3600000"})])
    with pytest.raises(TopicAlreadyExists, match="client-admin"):
        admin.create_topics([NewTopic("client-admin", 2)])
    admin.create_topics(["client-admin"], if_not_exists=True)
    assert "client-admin" in admin.list_topics()
    [description] = admin.describe_topics(["client-admin"]).values()
    assert [p.partition for p in description.partitions] == [0, 1]
    assert all(p.leader == 0 and p.isr == (0,) for p in description.partitions)
    cluster = admin.describe_cluster()
    assert cluster.controller_id == 0 and [b.port for b in cluster.brokers] == [shared_broker.port]

    with Producer(bootstrap_servers=shared_broker.bootstrap_servers) as p:
        for i in range(10):
            p.send("client-admin", b"x", partition=0, timestamp=1_000_000 + i * 100)
    tp0, tp1 = TopicPartition("client-admin", 0), TopicPartition("client-admin", 1)
    offsets = admin.list_offsets({tp0: "earliest", tp1: "latest"})
    assert (offsets[tp0].offset, offsets[tp1].offset) == (0, 0)
    assert admin.list_offsets({tp0: "latest"})[tp0].offset == 10
    by_time = admin.list_offsets({tp0: 1_000_450})[tp0]
    assert (by_time.offset, by_time.timestamp) == (5, 1_000_500)
    assert admin.list_offsets({tp0: 9_999_999})[tp0].offset == -1

    admin.commit_offsets("client-group", {tp0: OffsetAndMetadata(7, "query-1"), tp1: 3})
    assert admin.fetch_offsets("client-group") == {
        tp0: OffsetAndMetadata(7, "query-1"), tp1: OffsetAndMetadata(3, "")}
    assert admin.fetch_offsets("client-group", [tp1]) == {tp1: OffsetAndMetadata(3, "")}
    assert admin.fetch_offsets("client-group-never-used") == {}

    admin.delete_topics(["client-admin"])
    assert "client-admin" not in admin.list_topics()
    with pytest.raises(UnknownTopicOrPartition):
        admin.delete_topics(["client-admin"])
    admin.delete_topics(["client-admin"], if_exists=True)


def test_send_rejects_what_it_cannot_deliver(shared_broker, admin):
    admin.create_topics([NewTopic("client-checks", 2)])
    with Producer(bootstrap_servers=shared_broker.bootstrap_servers, max_request_size=1000,
                  max_block_ms=500) as p:
        with pytest.raises(TypeError, match="bytes-like"):
            p.send("client-checks", "a str")  # type: ignore[arg-type]
        with pytest.raises(RecordTooLargeError, match="max.request.size"):
            p.send("client-checks", b"x" * 2000)
        with pytest.raises(ValueError, match=r"partition 5 .* not in \[0, 2\)"):
            p.send("client-checks", b"x", partition=5)
        assert p.partitions_for("client-checks") == [0, 1]
        assert p.send("client-checks", b"ok", partition=1).result(10).partition == 1
    with pytest.raises(ProducerClosedError):
        p.send("client-checks", b"late")


def test_producer_and_fetcher_ride_out_a_broker_restart(broker_factory):
    broker = broker_factory()
    bootstrap = broker.bootstrap_servers
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic("client-restart", 1)])
    options = {"request_timeout_ms": 3000, "retry_backoff_ms": 50,
               "reconnect_backoff_max_ms": 200}
    producer = Producer(bootstrap_servers=bootstrap, delivery_timeout_ms=60_000, **options)
    fetcher = Fetcher(bootstrap_servers=bootstrap, fetch_max_wait_ms=100, **options)
    try:
        before = [producer.send("client-restart", b"before-%d" % i) for i in range(100)]
        producer.flush(timeout=30)
        assert [r.offset for r in fetcher.iter_records("client-restart", 0, 0, 100)] == list(range(100))
        assert broker.stop() == 0
        during = [producer.send("client-restart", b"during-%d" % i) for i in range(100)]
        broker.start()  # same port, same data
        producer.flush(timeout=60)
        offsets = [f.result(0).offset for f in before + during]
        assert offsets == list(range(200))
        values = [r.value for r in fetcher.iter_records("client-restart", 0, 0, 200,
                                                        timeout_ms=30_000)]
        assert values == [b"before-%d" % i for i in range(100)] + [b"during-%d" % i for i in range(100)]
    finally:
        producer.close(timeout=10)
        fetcher.close()


def test_a_retried_idempotent_batch_is_written_once(shared_broker, admin):
    from broker_sim.protocol.api import ApiKey
    from broker_sim.protocol.records import RecordBatchBuilder
    from tests.wire import WireClient

    admin.create_topics([NewTopic("client-dedup", 1)])
    with WireClient(shared_broker.port) as wire:
        pid = wire.request(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None,
                                                        "transaction_timeout_ms": 60_000})
        builder = RecordBatchBuilder(producer_id=pid.producer_id,
                                     producer_epoch=pid.producer_epoch, base_sequence=0)
        for i in range(3):
            builder.append(1_000 + i, None, b"once-%d" % i)
        records = builder.build()
        body = {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": "client-dedup", "partition_data": [{"index": 0, "records": records}]}]}
        first = wire.request(ApiKey.PRODUCE, 8, body).responses[0].partition_responses[0]
        retry = wire.request(ApiKey.PRODUCE, 8, body).responses[0].partition_responses[0]
    assert first.error_code == 0 and first.base_offset == 0
    assert retry.error_code in (0, 46) and (retry.error_code or retry.base_offset == 0)
    with Fetcher(bootstrap_servers=shared_broker.bootstrap_servers) as fetcher:
        assert fetcher.offset_bounds("client-dedup", 0) == (0, 3)
