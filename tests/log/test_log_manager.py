from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from broker_sim.log import LogConfig, LogManager, TopicPartition
from broker_sim.log.log_manager import TOPIC_CONFIG_FILE, parse_partition_dir
from broker_sim.protocol.errors import (
    InvalidConfig,
    InvalidTopic,
    KafkaStorageError,
    OffsetOutOfRange,
)

Batch = Callable[..., bytes]
DEFAULT = LogConfig(segment_bytes=1024, index_interval_bytes=128)


def test_partition_dir_names() -> None:
    assert parse_partition_dir("orders-3") == TopicPartition("orders", 3)
    assert parse_partition_dir("my-topic.v2-12") == TopicPartition("my-topic.v2", 12)
    for bad in ("orders", "orders-", "orders-x", "-1", "a b-0", "old-0.abc-delete"):
        assert parse_partition_dir(bad) is None


def test_create_restart_serves_data(tmp_path: Path, batch: Batch) -> None:
    with LogManager(tmp_path, DEFAULT) as lm:
        a = lm.get_or_create("orders", 0)
        assert lm.get_or_create("orders", 0) is a
        b = lm.get_or_create("my-topic", 1)
        for _ in range(20):
            a.append_as_leader(batch(2), 0)
        b.append_as_leader(batch(5), 0)
        a.high_watermark = 30
        assert (tmp_path / "orders-0").is_dir() and (tmp_path / "my-topic-1").is_dir()
        records = a.read(0, 10**6).records
    with LogManager(tmp_path, DEFAULT) as lm:
        assert set(lm.all_logs()) == {TopicPartition("orders", 0), TopicPartition("my-topic", 1)}
        a2 = lm.get("orders", 0)
        assert a2 is not None
        assert (a2.log_end_offset, a2.high_watermark) == (40, 30)
        assert a2.read(0, 10**6).records == records
        b2 = lm.get("my-topic", 1)
        assert b2 is not None and b2.log_end_offset == 5
        assert lm.get("nope", 0) is None
        assert lm.partitions("orders") == [0]


def test_config_overrides_persist(tmp_path: Path, batch: Batch) -> None:
    with LogManager(tmp_path, DEFAULT) as lm:
        log = lm.get_or_create("t", 0, {"retention.ms": "1000"})
        assert log.config.retention_ms == 1000 and log.config.segment_bytes == 1024
        plain = lm.get_or_create("u", 0)
        assert plain.config == DEFAULT
        assert not (plain.dir / TOPIC_CONFIG_FILE).exists()
        assert json.loads((log.dir / TOPIC_CONFIG_FILE).read_text()) == {"retention.ms": "1000"}
        with pytest.raises(InvalidConfig, match="segment.bytes"):
            lm.get_or_create("v", 0, {"segment.bytes": "1"})
    # a changed broker default still applies to what the topic did not override
    with LogManager(tmp_path, DEFAULT.replace(segment_bytes=4096)) as lm:
        reopened = lm.get("t", 0)
        assert reopened is not None
        assert reopened.config.retention_ms == 1000 and reopened.config.segment_bytes == 4096
        assert lm.update_topic_config("t", {"retention.bytes": "5000"}) == 1
        assert reopened.config.retention_bytes == 5000
        assert reopened.config.retention_ms == DEFAULT.retention_ms
    with LogManager(tmp_path, DEFAULT) as lm:
        again = lm.get("t", 0)
        assert again is not None and again.config.retention_bytes == 5000


def test_invalid_names(tmp_path: Path) -> None:
    with LogManager(tmp_path, DEFAULT) as lm:
        for bad in ("", "a/b", "a b", "..", "x" * 250):
            with pytest.raises(InvalidTopic):
                lm.get_or_create(bad, 0)
        with pytest.raises(InvalidConfig, match="partition"):
            lm.get_or_create("ok", -1)


def test_delete_topic(tmp_path: Path, batch: Batch) -> None:
    with LogManager(tmp_path, DEFAULT) as lm:
        logs = [lm.get_or_create("gone", p) for p in range(3)]
        keep = lm.get_or_create("gone-not", 0)
        for log in logs:
            log.append_as_leader(batch(1), 0)
        assert lm.delete_topic("gone") == 3
        assert lm.get("gone", 0) is None and lm.get("gone-not", 0) is keep
        assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["gone-not-0"]
        with pytest.raises(KafkaStorageError):
            logs[0].read(0, 100)
        fresh = lm.get_or_create("gone", 0)  # recreated empty
        assert fresh.log_end_offset == 0
    # a deletion interrupted by a crash is finished on start
    (tmp_path / "zombie-0.1234-delete").mkdir()
    with LogManager(tmp_path, DEFAULT) as lm:
        assert not (tmp_path / "zombie-0.1234-delete").exists()
        assert set(lm.all_logs()) == {TopicPartition("gone-not", 0), TopicPartition("gone", 0)}


def test_cleanup_runs_retention_everywhere(tmp_path: Path, batch: Batch) -> None:
    with LogManager(tmp_path, DEFAULT.replace(retention_ms=60_000)) as lm:
        logs = [lm.get_or_create("t", p) for p in range(2)]
        for log in logs:
            for i in range(40):
                log.append_as_leader(batch(2, timestamp=1_000 + i, value_size=50), 0)
            log.high_watermark = log.log_end_offset
        assert lm.cleanup(now_ms=30_000) == 0
        deleted = lm.cleanup(now_ms=10**9)
        assert deleted > 0
        for log in logs:
            assert len(log.segments) == 1 and log.log_start_offset > 0
            with pytest.raises(OffsetOutOfRange):
                log.read(0, 100)
        lm.flush_all()


def test_data_dir_is_locked(tmp_path: Path) -> None:
    lm = LogManager(tmp_path, DEFAULT)
    with pytest.raises(KafkaStorageError, match="in use"):
        LogManager(tmp_path, DEFAULT)
    lm.close()
    lm.close()  # idempotent
    LogManager(tmp_path, DEFAULT).close()
    with pytest.raises(KafkaStorageError):
        lm.get_or_create("t", 0)
