"""The partition side of transactions against a broker process: transactional batches,
markers written through WriteTxnMarkers (as the transaction coordinator sends them), and
real consumers — kafka-python and librdkafka — reading committed and uncommitted data."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import TopicPartition as CKTopicPartition
from kafka import KafkaConsumer, TopicPartition

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    InvalidRecord,
    ProducerFenced,
    TransactionalIdAuthorizationFailed,
)
from broker_sim.protocol.records.builder import RecordBatchBuilder
from broker_sim.protocol.records.control import marker_batch
from connector.client import Fetcher
from tests.wire import WireClient, create_topic, produce_body

TOPIC = "txn"


def producer_id(c: WireClient) -> tuple[int, int]:
    r = c.request(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None,
                                               "transaction_timeout_ms": 60_000})
    assert r.error_code == 0, r
    return r.producer_id, r.producer_epoch


def batch(values: list[str], pid: int = -1, epoch: int = -1, seq: int = -1,
          transactional: bool = False) -> bytes:
    b = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                           is_transactional=transactional)
    for v in values:
        b.append(int(time.time() * 1000), None, v.encode())
    return b.build()


def produce(c: WireClient, records: bytes) -> int:
    """Produce under a transactional id: the broker refuses transactional records without one
    (the markers these tests write go straight to the partition, past any coordinator)."""
    r = c.request(ApiKey.PRODUCE, 8, produce_body(TOPIC, 0, records, transactional_id="log-side"))
    return r.responses[0].partition_responses[0].error_code


def end(c: WireClient, pid: int, epoch: int, commit: bool) -> int:
    r = c.request(ApiKey.WRITE_TXN_MARKERS, 1, {"markers": [{
        "producer_id": pid, "producer_epoch": epoch, "transaction_result": commit,
        "topics": [{"name": TOPIC, "partition_indexes": [0]}], "coordinator_epoch": 0}]})
    return r.markers[0].topics[0].partitions[0].error_code


def read_all(bootstrap: str, isolation: str, expected: int) -> list[str]:
    """Every record a kafka-python consumer at ``isolation`` reads: it has read them all
    once its position reaches the end offset the broker gives that isolation level (the
    last stable offset for read_committed, the high watermark otherwise)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    tp = TopicPartition(TOPIC, 0)
    consumer.assign([tp])
    end = consumer.end_offsets([tp])[tp]
    out: list[str] = []
    deadline = time.monotonic() + 20
    while consumer.position(tp) < end:
        assert time.monotonic() < deadline, f"position {consumer.position(tp)} never reached {end}"
        for records in consumer.poll(timeout_ms=500).values():
            out.extend(r.value.decode() for r in records)
    consumer.close()
    assert len(out) == expected, out
    return out


def read_all_librdkafka(bootstrap: str, isolation: str, expected: int) -> list[str]:
    """The same with librdkafka, to the same end offset."""
    probe = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation)
    end = probe.end_offsets([TopicPartition(TOPIC, 0)])[TopicPartition(TOPIC, 0)]
    probe.close()
    consumer = CKConsumer({"bootstrap.servers": bootstrap, "group.id": f"g-{isolation}",
                           "isolation.level": isolation, "enable.auto.commit": False})
    consumer.assign([CKTopicPartition(TOPIC, 0, 0)])
    out: list[str] = []
    deadline = time.monotonic() + 20
    while consumer.position([CKTopicPartition(TOPIC, 0)])[0].offset < end:
        assert time.monotonic() < deadline, "librdkafka's position never reached the end offset"
        for m in consumer.consume(num_messages=100, timeout=0.5):
            if m.error() is None:
                out.append((m.value() or b"").decode())
    consumer.close()
    assert len(out) == expected, out
    return out


@pytest.fixture
def broker(broker_factory):
    b = broker_factory()
    create_topic(b.port, TOPIC, partitions=1)
    return b


def test_read_committed_consumers_see_only_committed_and_plain_records(broker):
    with WireClient(broker.port) as c:
        (a, ea), (b, eb) = producer_id(c), producer_id(c)
        assert produce(c, batch(["plain-0"])) == 0
        assert produce(c, batch(["aborted-0", "aborted-1"], a, ea, 0, transactional=True)) == 0
        assert produce(c, batch(["committed-0"], b, eb, 0, transactional=True)) == 0
        assert produce(c, batch(["plain-1"])) == 0
        assert produce(c, batch(["committed-1"], b, eb, 1, transactional=True)) == 0

        # open transactions hold read_committed readers back at the first of them
        lso = c.request(ApiKey.LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": 1,
                                                 "topics": [{"name": TOPIC, "partitions": [{
                                                     "partition_index": 0,
                                                     "current_leader_epoch": -1,
                                                     "timestamp": -1}]}]})
        assert lso.topics[0].partitions[0].offset == 1
        assert read_all(broker.bootstrap_servers, "read_committed", 1) == ["plain-0"]

        assert end(c, a, ea, commit=False) == 0
        assert end(c, b, eb, commit=True) == 0

    committed = ["plain-0", "committed-0", "plain-1", "committed-1"]
    everything = ["plain-0", "aborted-0", "aborted-1", "committed-0", "plain-1", "committed-1"]
    assert read_all(broker.bootstrap_servers, "read_committed", 4) == committed
    assert read_all(broker.bootstrap_servers, "read_uncommitted", 6) == everything
    assert read_all_librdkafka(broker.bootstrap_servers, "read_committed", 4) == committed
    assert read_all_librdkafka(broker.bootstrap_servers, "read_uncommitted", 6) == everything
    for isolation, expected in (("read_committed", committed), ("read_uncommitted", everything)):
        with Fetcher(bootstrap_servers=broker.bootstrap_servers, isolation_level=isolation) as f:
            first, last = f.offset_bounds(TOPIC, 0)
            table = f.read_arrow(TOPIC, 0, first, last)  # the columnar path
            records = list(f.iter_records(TOPIC, 0, first, last))
        assert [v.decode() for v in table.column("value").to_pylist()] == expected
        assert [r.value.decode() for r in records] == expected


def test_our_fetcher_stops_at_the_last_stable_offset(broker):
    with WireClient(broker.port) as c:
        pid, epoch = producer_id(c)
        assert produce(c, batch(["before"])) == 0
        assert produce(c, batch(["open"], pid, epoch, 0, transactional=True)) == 0
        assert produce(c, batch(["after"])) == 0
        with Fetcher(bootstrap_servers=broker.bootstrap_servers,
                     isolation_level="read_committed") as f:
            assert f.offset_bounds(TOPIC, 0) == (0, 1)  # the open transaction holds it at 1
            assert [r.value for r in f.iter_records(TOPIC, 0, 0, 1)] == [b"before"]
        assert end(c, pid, epoch, commit=True) == 0
        with Fetcher(bootstrap_servers=broker.bootstrap_servers,
                     isolation_level="read_committed") as f:
            assert f.offset_bounds(TOPIC, 0) == (0, 4)
            assert [r.value for r in f.iter_records(TOPIC, 0, 0, 4)] == [b"before", b"open", b"after"]


def test_markers_from_an_older_epoch_and_markers_from_producers_are_refused(broker):
    with WireClient(broker.port) as c:
        pid, epoch = producer_id(c)
        assert produce(c, batch(["x"], pid, epoch + 1, 0, transactional=True)) == 0
        assert end(c, pid, epoch, commit=True) == ProducerFenced.code  # a zombie's marker
        forged = marker_batch(pid, epoch + 1, True, 0, int(time.time() * 1000))
        assert produce(c, forged) == InvalidRecord.code  # producers cannot end transactions
        assert end(c, pid, epoch + 1, commit=True) == 0
    assert read_all(broker.bootstrap_servers, "read_committed", 1) == ["x"]


def test_transactional_records_without_a_transactional_id_are_refused(broker):
    # As Apache Kafka: the request names no transactional id, so nothing can authorize it.
    with WireClient(broker.port) as c:
        pid, epoch = producer_id(c)
        records = batch(["x"], pid, epoch, 0, transactional=True)
        r = c.request(ApiKey.PRODUCE, 8, produce_body(TOPIC, 0, records))
        assert r.responses[0].partition_responses[0].error_code == TransactionalIdAuthorizationFailed.code
        r = c.request(ApiKey.PRODUCE, 8, produce_body(TOPIC, 0, batch(["y"], pid, epoch, 0)))
        assert r.responses[0].partition_responses[0].error_code == 0  # not transactional: written
    assert read_all(broker.bootstrap_servers, "read_uncommitted", 1) == ["y"]
