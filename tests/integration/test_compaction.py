"""Compacted topics on a broker process: the cleaner keeps the latest value per key at its
offset, kafka-python and pyq's fetcher read across the gaps, tombstones go after
``delete.retention.ms``, and a ``kill -9`` of the broker while it cleans loses nothing."""

from __future__ import annotations

import random
import time

import pytest
from kafka import KafkaConsumer, TopicPartition

from broker_sim.process import BrokerProcess
from connector.client import Admin, Fetcher, NewTopic, Producer
from tests.wire import wait_for

pytestmark = pytest.mark.integration

UPDATES, KEYS = 100_000, 1_000
SEGMENT_MS = 1_500
COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "65536", "segment.ms": str(SEGMENT_MS),
             "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "2000"}


@pytest.fixture
def broker(tmp_path):
    proc = BrokerProcess(tmp_path / "broker", overrides={"log.cleaner.backoff.ms": "100"})
    proc.start()
    yield proc
    proc.stop()


def _produce(bootstrap: str, topic: str, updates: int, seed: int) -> dict[bytes, tuple[int, bytes | None]]:
    """``updates`` random updates over KEYS keys; the latest (offset, value) per key."""
    rng = random.Random(seed)
    sent = []
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as producer:
        for i in range(updates):
            key = b"key-%04d" % rng.randrange(KEYS)
            sent.append((key, producer.send(topic, b"value-%d" % i, key=key, partition=0)))
        producer.flush()
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    for i, (key, future) in enumerate(sent):
        latest[key] = (future.get(30).offset, b"value-%d" % i)
    return latest


def _seal(bootstrap: str, topic: str) -> int:
    """Let segment.ms pass and write one record: everything before it is in closed segments."""
    time.sleep(SEGMENT_MS / 1000 + 0.2)
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        return producer.send(topic, b"end", key=b"sentinel", partition=0).get(30).offset


def _read_pyq(bootstrap: str, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        start, end = fetcher.offset_bounds(topic, 0)
        return [(r.offset, r.key, r.value) for r in fetcher.iter_records(topic, 0, start, end)]


def _read_kafka_python(bootstrap: str, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=5_000)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    end = consumer.end_offsets([tp])[tp]
    out = []
    try:
        for message in consumer:
            out.append((message.offset, message.key, message.value))
            if message.offset >= end - 1:
                break
    finally:
        consumer.close()
    return out


def _compacted(latest: dict[bytes, tuple[int, bytes | None]], sentinel: int
               ) -> list[tuple[int, bytes | None, bytes | None]]:
    return sorted([(o, k, v) for k, (o, v) in latest.items() if v is not None]
                  + [(sentinel, b"sentinel", b"end")])


def _create(bootstrap: str, topic: str, **extra: str) -> None:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, 1, 1, {**COMPACTED, **extra})])


def test_the_latest_value_per_key_stays_at_its_offset_and_clients_read_across_gaps(broker):
    bootstrap = broker.bootstrap_servers
    _create(bootstrap, "changelog")
    latest = _produce(bootstrap, "changelog", UPDATES, seed=1)
    sentinel = _seal(bootstrap, "changelog")
    expected = _compacted(latest, sentinel)
    got = wait_for(lambda: (r := _read_pyq(bootstrap, "changelog")) == expected and r,
                   timeout=60, interval=0.5, what="the cleaner to compact the topic")
    assert len(got) == KEYS + 1
    assert _read_kafka_python(bootstrap, "changelog") == expected
    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:  # the columnar path too
        table = fetcher.read_arrow("changelog", 0, 0, sentinel + 1)
    assert table.column("offset").to_pylist() == [o for o, _k, _v in expected]


def test_tombstoned_keys_disappear_after_delete_retention(broker):
    bootstrap = broker.bootstrap_servers
    _create(bootstrap, "deletions")
    latest = _produce(bootstrap, "deletions", 5_000, seed=2)
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        deleted = sorted(latest)[:100]
        for key in deleted:
            latest[key] = (producer.send("deletions", None, key=key, partition=0).get(30).offset, None)
    sentinel = _seal(bootstrap, "deletions")
    expected = _compacted(latest, sentinel)  # no tombstone, no deleted key

    def settled():
        # the tombstones' segment must age past delete.retention.ms and roll: write more
        with Producer({"bootstrap.servers": bootstrap}) as producer:
            producer.send("deletions", b"end", key=b"sentinel", partition=0).get(30)
        records = _read_pyq(bootstrap, "deletions")
        return [r for r in records if r[1] != b"sentinel"] == [r for r in expected
                                                              if r[1] != b"sentinel"]
    wait_for(settled, timeout=60, interval=1.0, what="the tombstones to be cleaned away")
    keys = {k for _o, k, _v in _read_kafka_python(bootstrap, "deletions")}
    assert not keys & set(deleted)


def test_a_broker_killed_while_cleaning_loses_nothing(broker):
    bootstrap = broker.bootstrap_servers
    _create(bootstrap, "crashy")
    latest = _produce(bootstrap, "crashy", UPDATES, seed=3)
    sentinel = _seal(bootstrap, "crashy")
    time.sleep(random.Random(4).uniform(0.1, 0.6))  # the cleaner is at work by now
    broker.kill()
    broker.start()
    expected = _compacted(latest, sentinel)
    got = wait_for(lambda: (r := _read_pyq(bootstrap, "crashy")) == expected and r,
                   timeout=60, interval=0.5, what="the restarted broker to finish compacting")
    assert len({o for o, _k, _v in got}) == len(got)  # no offset twice: no half swap
