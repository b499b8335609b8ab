"""Helpers for the partition-log tests: batches built with the real RecordBatchBuilder."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker_sim.common import ManualClock
from broker_sim.log import Log, LogConfig
from broker_sim.protocol.records.batch_header import BatchHeader, iter_batches
from broker_sim.protocol.records.builder import RecordBatchBuilder


def make_batch(
    records: int = 1,
    timestamp: int = 1_000,
    value_size: int = 10,
    *,
    ts_step: int = 0,
    compression: int = 0,
    base_offset: int = 0,
    value: bytes | None = None,
) -> bytes:
    """One v2 batch of ``records`` records with timestamps ``timestamp + i * ts_step``."""
    b = RecordBatchBuilder(compression=compression, base_offset=base_offset)
    for i in range(records):
        b.append(timestamp + i * ts_step, None, value if value is not None else bytes([i % 256]) * value_size)
    return b.build()


def headers(records: bytes) -> list[BatchHeader]:
    """Headers of every batch in ``records`` (validated; the bytes must be whole batches)."""
    out = [h for _pos, h in iter_batches(records)]
    assert sum(h.size for h in out) == len(records), "records end with a partial batch"
    return out


@pytest.fixture
def clock() -> ManualClock:
    """The log's clock; its wall reading starts at 1,000,000 ms and moves with ``advance``."""
    return ManualClock(0, wall_start_ms=1_000_000)


@pytest.fixture
def small_config() -> LogConfig:
    return LogConfig(segment_bytes=1024, index_interval_bytes=128)


@pytest.fixture
def open_log(tmp_path: Path, clock: ManualClock) -> Iterator[Callable[..., Log]]:
    """Open logs under tmp_path/<name>; every log opened is closed at teardown."""
    opened: list[Log] = []

    def _open(config: LogConfig | None = None, name: str = "topic-0") -> Log:
        log = Log(tmp_path / name, config if config is not None else LogConfig(), clock)
        opened.append(log)
        return log

    yield _open
    for log in opened:
        if not log.closed:
            log.close()


@pytest.fixture
def batch() -> Callable[..., bytes]:
    """Factory: ``batch(records=1, timestamp=1000, value_size=10, ts_step=0, ...)``."""
    return make_batch


@pytest.fixture
def parse() -> Callable[[bytes], list[BatchHeader]]:
    """``parse(records)``: headers of whole batches; asserts there is no partial batch."""
    return headers
