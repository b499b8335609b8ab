"""Producer, Fetcher and Admin against a real broker: pyq's broker process (``python -m
broker_sim``), then Apache Kafka (``broker_under_test``), the same tests on both."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

import pytest

from broker_sim.process import BrokerProcess
from broker_sim.protocol.errors import (
    GroupIdNotFound,
    NonEmptyGroup,
    TopicAlreadyExists,
    TransactionalIdNotFound,
    UnknownTopicOrPartition,
)
from broker_sim.protocol.records import BatchHeader, iter_batches
from connector.client import (
    Admin,
    Consumer,
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
from reference.kafka_cluster import KafkaCluster
from tests.wire import wait_for

pytestmark = pytest.mark.integration

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def record(i: int) -> tuple[bytes | None, bytes | None, list, int]:
    key = None if i % 7 == 0 else f"key-{i % 13}".encode()
    value = None if i % 50 == 3 else f"value-{i}-".encode() + bytes([i % 256]) * (i % 40)
    headers = [] if i % 3 else [("seq", str(i).encode()), ("empty", None)]
    return key, value, headers, 1_700_000_000_000 + i * 3


@pytest.fixture(scope="module")
def bootstrap(broker_under_test) -> str:
    """pyq's broker, then Apache Kafka: every test here holds on both."""
    return broker_under_test.bootstrap_servers


@pytest.fixture(scope="module")
def admin(bootstrap):
    with Admin(bootstrap_servers=bootstrap) as a:
        yield a


@pytest.fixture(scope="module")
def fetcher(bootstrap):
    with Fetcher(bootstrap_servers=bootstrap, fetch_max_wait_ms=100) as f:
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
def test_every_record_comes_back_exactly_with_each_codec(bootstrap, admin, fetcher, codec):
    topic = f"client-roundtrip-{codec}"
    admin.create_topics([NewTopic(topic, 3)])
    acked = produce(bootstrap, topic, 3000, compression_type=codec)
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
def test_acks(bootstrap, admin, fetcher, acks):
    topic = f"client-acks-{acks}"
    admin.create_topics([NewTopic(topic, 1)])
    with Producer(bootstrap_servers=bootstrap, acks=acks,
                  enable_idempotence=acks == "all") as p:
        futures = [p.send(topic, f"r{i}".encode()) for i in range(500)]
        p.flush(timeout=30)
    offsets = [f.result(0).offset for f in futures]
    assert offsets == ([-1] * 500 if acks == "0" else list(range(500)))
    values = [r.value for r in fetcher.iter_records(topic, 0, 0, 500)]
    assert values == [f"r{i}".encode() for i in range(500)]


def test_idempotent_producer_writes_each_batch_once_in_order(bootstrap, admin, fetcher):
    topic = "client-idempotent"
    admin.create_topics([NewTopic(topic, 1)])
    with Producer(bootstrap_servers=bootstrap, enable_idempotence=True,
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


def test_callbacks_and_send_to_a_missing_topic(bootstrap, admin):
    admin.create_topics([NewTopic("client-callbacks", 1)])
    seen = []
    done = threading.Event()
    with Producer(bootstrap_servers=bootstrap, max_block_ms=300) as p:
        def callback(metadata, error):
            seen.append((metadata, error, threading.current_thread().name))
            done.set()
        p.send("client-callbacks", b"x", callback=callback)
        assert done.wait(10)
        with pytest.raises(KafkaTimeoutError, match="not present in metadata after 300 ms"):
            p.send("client-no-such-topic", b"x")  # auto-creation is off on this broker
    [(metadata, error, thread)] = seen
    assert error is None and metadata.offset == 0 and thread.startswith("pyq-producer-sender")


def test_fetch_range_cuts_inside_batches(bootstrap, admin, fetcher):
    topic = "client-range"
    admin.create_topics([NewTopic(topic, 1)])
    with Producer(bootstrap_servers=bootstrap, batch_size=300,
                  linger_ms=0) as p:
        for i in range(200):
            p.send(topic, f"{i:04d}".encode() * 5)
    first_batch = next(iter(fetcher.fetch_record_sets(topic, 0, 0, 200)))
    assert sum(1 for _ in iter_batches(first_batch)) > 5  # the range really cuts batches
    got = [r.offset for r in fetcher.iter_records(topic, 0, 17, 133)]
    assert got == list(range(17, 133))
    cols = list(fetcher.iter_columns(topic, 0, 17, 133))
    assert [o for c in cols for o in c.offsets.tolist()] == list(range(17, 133))


def test_long_poll_waits_for_records_written_later(bootstrap, admin, fetcher):
    topic = "client-long-poll"
    admin.create_topics([NewTopic(topic, 1)])

    def write_later():
        time.sleep(0.4)
        with Producer(bootstrap_servers=bootstrap) as p:
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


def test_offset_out_of_range_reports_log_start_and_end(bootstrap, admin):
    topic = "client-truncated"
    admin.create_topics([NewTopic(topic, 1)])
    with Producer(bootstrap_servers=bootstrap, batch_size=4096) as p:
        for i in range(600):
            p.send(topic, f"record-{i:06d}".encode() * 3)
    tp = TopicPartition(topic, 0)
    assert admin.delete_records({tp: 400}) == {tp: 400}  # the log now starts at 400
    with Fetcher(bootstrap_servers=bootstrap) as fetcher:
        with pytest.raises(OffsetOutOfRangeError) as e:
            list(fetcher.iter_records(topic, 0, 0, 10))
        assert (e.value.topic, e.value.partition, e.value.offset) == (topic, 0, 0)
        assert (e.value.log_start_offset, e.value.log_end_offset) == (400, 600)
        assert "below the log start" in str(e.value)
        with pytest.raises(OffsetOutOfRangeError, match="above the log end") as e:
            list(fetcher.iter_records(topic, 0, 700, 710))
        assert e.value.log_end_offset == 600
        assert fetcher.offset_bounds(topic, 0) == (400, 600)
        tail = [r.offset for r in fetcher.iter_records(topic, 0, 400, 600)]
        assert tail == list(range(400, 600))


def test_admin_topics_offsets_and_group_offsets(bootstrap, admin):
    admin.create_topics([NewTopic("client-admin", 2, configs={"retention.ms": "3600000"})])
    with pytest.raises(TopicAlreadyExists, match="client-admin"):
        admin.create_topics([NewTopic("client-admin", 2)])
    admin.create_topics(["client-admin"], if_not_exists=True)
    assert "client-admin" in admin.list_topics()
    [description] = admin.describe_topics(["client-admin"]).values()
    assert [p.partition for p in description.partitions] == [0, 1]
    cluster = admin.describe_cluster()
    [node] = cluster.brokers  # pyq's broker is node 0, Kafka's node 1
    assert f"{node.host}:{node.port}" == bootstrap and cluster.controller_id == node.node_id
    assert all(p.leader == node.node_id and p.isr == (node.node_id,) for p in description.partitions)

    with Producer(bootstrap_servers=bootstrap) as p:
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


def test_send_rejects_what_it_cannot_deliver(bootstrap: str, admin: Admin) -> None:
    admin.create_topics([NewTopic("client-checks", 2)])
    with Producer(bootstrap_servers=bootstrap, max_request_size=1000,
                  max_block_ms=500) as p:
        with pytest.raises(TypeError, match="bytes-like"):
            p.send("client-checks", "a str")  # type: ignore[arg-type]  # the wrong type is the point
        with pytest.raises(RecordTooLargeError, match="max.request.size"):
            p.send("client-checks", b"x" * 2000)
        with pytest.raises(ValueError, match=r"partition 5 .* not in \[0, 2\)"):
            p.send("client-checks", b"x", partition=5)
        assert p.partitions_for("client-checks") == [0, 1]
        assert p.send("client-checks", b"ok", partition=1).result(10).partition == 1
    with pytest.raises(ProducerClosedError):
        p.send("client-checks", b"late")


class Restartable(NamedTuple):
    bootstrap_servers: str
    stop: Callable[[], None]  # a clean shutdown
    start: Callable[[], None]  # again, on the same port and data


@pytest.fixture
def restartable(broker_under_test, broker_factory, tmp_path) -> Iterator[Restartable]:
    """A broker of the kind under test of this test's own, to stop and start again."""
    if broker_under_test.name == "kafka":
        cluster = KafkaCluster(tmp_path / "kafka", 1,
                               overrides={"auto.create.topics.enable": "false"}).start()
        try:
            yield Restartable(cluster.bootstrap_servers, cluster.stop, lambda: cluster.restart(1))
        finally:
            cluster.stop()
        return
    broker: BrokerProcess = broker_factory()

    def stop() -> None:
        assert broker.stop() == 0

    def start() -> None:
        broker.start()

    yield Restartable(broker.bootstrap_servers, stop, start)


def test_producer_and_fetcher_ride_out_a_broker_restart(restartable):
    broker = restartable
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
        broker.stop()
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


def test_a_retried_idempotent_batch_is_written_once(bootstrap, admin):
    from broker_sim.protocol.api import ApiKey
    from broker_sim.protocol.records import RecordBatchBuilder
    from tests.wire import WireClient

    admin.create_topics([NewTopic("client-dedup", 1)])
    with WireClient(int(bootstrap.rsplit(":", 1)[1])) as wire:
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
    with Fetcher(bootstrap_servers=bootstrap) as fetcher:
        assert fetcher.offset_bounds("client-dedup", 0) == (0, 3)


def test_admin_lists_describes_and_deletes_groups(bootstrap, admin):
    topic = "client-groups"
    admin.create_topics([NewTopic(topic, 2)])
    admin.commit_offsets("client-simple", {(topic, 0): OffsetAndMetadata(1, "q")})
    with Consumer(bootstrap_servers=bootstrap, group_id="client-member",
                  auto_offset_reset="earliest") as consumer:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < 2:
            consumer.poll(100)
            assert time.monotonic() < deadline, "the member never got both partitions"
        listed = {g.group_id: g for g in admin.list_groups()}
        assert (listed["client-member"].protocol_type, listed["client-member"].state) == ("consumer", "Stable")
        assert (listed["client-simple"].protocol_type, listed["client-simple"].state) == ("", "Empty")
        assert all(g.group_type == "classic" for g in (listed["client-member"], listed["client-simple"]))
        stable = {g.group_id for g in admin.list_groups(states=["Stable"])}
        assert "client-member" in stable and "client-simple" not in stable
        described = admin.describe_groups(["client-member", "client-simple"])
        member = described["client-member"]
        assert (member.state, member.protocol_type, member.protocol) == ("Stable", "consumer", "range")
        [m] = member.members
        assert sorted(m.assignment) == [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        assert (described["client-simple"].state, described["client-simple"].members) == ("Empty", [])
        with pytest.raises(NonEmptyGroup):
            admin.delete_groups(["client-member"])
    # closed: it left the group, which is empty now and may go
    admin.delete_groups(["client-member", "client-simple"])
    remaining = {g.group_id for g in admin.list_groups()}
    assert not remaining & {"client-member", "client-simple"}
    assert admin.fetch_offsets("client-simple") == {}
    with pytest.raises(GroupIdNotFound):
        admin.delete_groups(["client-simple"])


def test_admin_lists_and_describes_transactions(bootstrap, admin):
    topic, txn = "client-txn", "client-txn-open"
    admin.create_topics([NewTopic(topic, 2)])
    with Producer(bootstrap_servers=bootstrap, transactional_id=txn,
                  transaction_timeout_ms=45_000) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"a", partition=0)
        producer.send(topic, b"b", partition=1)
        producer.flush()
        [listing] = [t for t in admin.list_transactions() if t.transactional_id == txn]
        assert listing.state == "Ongoing" and listing.producer_id >= 0
        assert [t.transactional_id for t in admin.list_transactions(
            states=["Ongoing"], producer_ids=[listing.producer_id])] == [txn]
        assert txn not in {t.transactional_id for t in admin.list_transactions(states=["CompleteCommit"])}
        described = admin.describe_transactions([txn])[txn]
        assert (described.state, described.producer_id, described.timeout_ms) == (
            "Ongoing", listing.producer_id, 45_000)
        assert described.producer_epoch >= 0 and described.start_time_ms > 0
        assert sorted(described.partitions) == [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        assert described.coordinator == listing.coordinator == admin.find_transaction_coordinator(txn)
        producer.commit_transaction()
    done = wait_for(lambda: (d := admin.describe_transactions([txn])[txn]).state == "CompleteCommit" and d,
                    10, what="the transaction completed")
    assert done.partitions == []
    with pytest.raises(TransactionalIdNotFound):
        admin.describe_transactions(["client-txn-never"])
