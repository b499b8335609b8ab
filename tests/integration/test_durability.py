"""What survives a restart, a crash, a torn write and retention."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import OffsetOutOfRange
from tests.wire import WireClient, fetch_body, list_offsets_body

pytestmark = pytest.mark.integration


def create(bootstrap: str, topic: str, partitions: int, configs: dict | None = None) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs or {})])
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, n: int, start: int = 0, partitions: int = 2, **kw) -> dict:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, enable_idempotence=False,
                             linger_ms=2, **kw)
    futs = [(i, producer.send(topic, value=f"record-{i}".encode(), partition=i % partitions))
            for i in range(start, start + n)]
    producer.flush()
    acked = {}
    for i, f in futs:
        md = f.get(timeout=30)
        acked[(md.partition, md.offset)] = f"record-{i}".encode()
    producer.close()
    return acked


def read_all(bootstrap: str, topic: str, partitions: int, group: str | None = None) -> dict:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=group,
                             consumer_timeout_ms=3000)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning()
    got = {(r.partition, r.offset): r.value for r in consumer}
    consumer.close()
    return got


def test_restart_keeps_records_and_committed_offsets(broker_factory):
    broker = broker_factory()
    create(broker.bootstrap_servers, "durable", 2)
    acked = produce(broker.bootstrap_servers, "durable", 5000)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id="g1",
                             enable_auto_commit=False)
    tps = [TopicPartition("durable", p) for p in range(2)]
    consumer.assign(tps)
    consumer.commit({tps[0]: OffsetAndMetadata(1234, "query-a", -1),
                     tps[1]: OffsetAndMetadata(2345, "query-a", -1)})
    consumer.close()

    assert broker.stop() == 0  # clean shutdown on SIGTERM
    broker.start()
    assert read_all(broker.bootstrap_servers, "durable", 2) == acked
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id="g1",
                             enable_auto_commit=False)
    assert consumer.committed(tps[0]) == 1234
    assert consumer.committed(tps[1]) == 2345
    consumer.close()


def test_kill_9_loses_no_acknowledged_record(broker_factory):
    broker = broker_factory()
    create(broker.bootstrap_servers, "crashy", 2)
    acked = produce(broker.bootstrap_servers, "crashy", 3000)
    broker.kill()
    broker.start()
    got = read_all(broker.bootstrap_servers, "crashy", 2)
    assert {k: got.get(k) for k in acked} == acked


def test_torn_tail_is_truncated_and_the_rest_served(broker_factory, tmp_path: Path):
    broker = broker_factory(data_dir=tmp_path / "torn")
    create(broker.bootstrap_servers, "torn", 1)
    acked = {}
    for round_ in range(5):  # five produce requests -> at least five batches
        acked.update(produce(broker.bootstrap_servers, "torn", 200, start=round_ * 200, partitions=1))
    assert broker.stop() == 0
    segment = sorted((tmp_path / "torn" / "logs" / "torn-0").glob("*.log"))[-1]
    size = segment.stat().st_size
    with open(segment, "r+b") as f:
        f.truncate(size - 10)  # tear the last batch
    broker.start()
    got = read_all(broker.bootstrap_servers, "torn", 1)
    assert got, "the whole batches before the torn one must survive"
    n = len(got)
    assert n < 1000
    assert got == {(0, o): acked[(0, o)] for o in range(n)}  # exactly a prefix
    assert "truncat" in broker.output().lower()
    # appends continue right after the last whole batch
    more = produce(broker.bootstrap_servers, "torn", 10, start=5000, partitions=1)
    assert min(o for (_, o) in more) == n


def test_retention_moves_log_start_and_old_offsets_go_out_of_range(broker_factory):
    broker = broker_factory(overrides={"log.retention.check.interval.ms": "200",
                                       "log.segment.bytes": "16384"})
    create(broker.bootstrap_servers, "retained", 1, {"retention.bytes": "40000"})
    produce(broker.bootstrap_servers, "retained", 20_000, partitions=1, batch_size=4096)
    with WireClient(broker.port) as client:
        deadline = time.monotonic() + 20
        earliest = 0
        while time.monotonic() < deadline and earliest == 0:
            r = client.request(ApiKey.LIST_OFFSETS, 5, list_offsets_body("retained", 0, -2))
            earliest = r.topics[0].partitions[0].offset
            time.sleep(0.2)
        assert earliest > 0, "retention should have deleted old segments"
        latest = client.request(ApiKey.LIST_OFFSETS, 5, list_offsets_body("retained", 0, -1))
        assert latest.topics[0].partitions[0].offset == 20_000
        r = client.request(ApiKey.FETCH, 11, fetch_body("retained", 0, 0))
        part = r.responses[0].partitions[0]
        assert part.error_code == OffsetOutOfRange.code
        # as Kafka: no offsets beside the error; a client asks ListOffsets where the log starts
        assert (part.high_watermark, part.log_start_offset) == (-1, -1)
        r = client.request(ApiKey.LIST_OFFSETS, 5, list_offsets_body("retained", 0, -2))
        start = r.topics[0].partitions[0].offset
        assert start >= earliest > 0  # retention may have moved on meanwhile
        r = client.request(ApiKey.FETCH, 11, fetch_body("retained", 0, start))
        assert r.responses[0].partitions[0].error_code == 0
        assert len(r.responses[0].partitions[0].records) > 0
