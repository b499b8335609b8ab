"""Readers racing appends, retention and truncation: no crash, no partial batch."""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from broker_sim.log import Log, LogConfig
from broker_sim.protocol.errors import OffsetOutOfRange
from broker_sim.protocol.records.batch_header import BatchHeader
from tests.log.support import copied

Batch = Callable[..., bytes]
Parse = Callable[[bytes], list[BatchHeader]]
OpenLog = Callable[..., Log]


@pytest.fixture(autouse=True)
def _fast_thread_switching() -> Iterator[None]:
    """Switch threads every 20 us instead of 5 ms, so the races actually interleave."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(2e-5)
    yield
    sys.setswitchinterval(old)


def _reader(log: Log, parse: Parse, stop: threading.Event, errors: list[BaseException], stats: dict[str, int], seed: int) -> None:
    rng = random.Random(seed)
    try:
        while not stop.is_set():
            start, end = log.log_start_offset, log.log_end_offset
            # often exactly the log start: the segment retention deletes next
            offset = start if rng.random() < 0.5 else rng.randint(max(0, start - 5), end)
            try:
                info = log.read(offset, rng.choice([1, 200, 5000]))
            except OffsetOutOfRange:
                stats["out_of_range"] += 1
                continue
            headers = parse(copied(info.records))  # CRC-checks every batch; no partial batch allowed
            if headers:
                first = headers[0]
                assert first.base_offset <= offset <= first.last_offset, (offset, first)
                for a, b in zip(headers, headers[1:], strict=False):
                    assert b.base_offset == a.next_offset
                stats["batches"] += len(headers)
            else:
                stats["empty"] += 1
    except BaseException as e:  # reported by the main thread
        errors.append(e)


def test_readers_while_appending_and_retention_deletes(open_log: OpenLog, batch: Batch, parse: Parse) -> None:
    log = open_log(LogConfig(segment_bytes=2048, index_interval_bytes=256, retention_bytes=6000))
    stop = threading.Event()
    errors: list[BaseException] = []
    stats = {"out_of_range": 0, "batches": 0, "empty": 0}
    readers = [
        threading.Thread(target=_reader, args=(log, parse, stop, errors, stats, seed)) for seed in range(2)
    ]
    for t in readers:
        t.start()
    try:
        for i in range(600):
            log.append_as_leader(batch(1 + i % 3, value_size=30), leader_epoch=1)
            log.high_watermark = log.log_end_offset
            if i % 10 == 0:
                log.delete_old_segments()
            if i % 100 == 0 and errors:
                break
    finally:
        stop.set()
        for t in readers:
            t.join(timeout=30)
    assert not errors, errors[0]
    assert log.log_start_offset > 0  # retention ran
    assert stats["batches"] > 0


def test_readers_while_truncating_and_appending(open_log: OpenLog, batch: Batch, parse: Parse) -> None:
    log = open_log(LogConfig(segment_bytes=2048, index_interval_bytes=256))
    for _ in range(50):
        log.append_as_leader(batch(2, value_size=30), leader_epoch=1)
    stop = threading.Event()
    errors: list[BaseException] = []
    stats = {"out_of_range": 0, "batches": 0, "empty": 0}
    readers = [
        threading.Thread(target=_reader, args=(log, parse, stop, errors, stats, seed)) for seed in range(2)
    ]
    for t in readers:
        t.start()
    rng = random.Random(7)
    try:
        for _ in range(300):
            for _ in range(rng.randint(1, 6)):
                log.append_as_leader(batch(2, value_size=30), leader_epoch=2)
            log.truncate_to(max(1, log.log_end_offset - rng.randint(0, 12)))
            if errors:
                break
    finally:
        stop.set()
        for t in readers:
            t.join(timeout=30)
    assert not errors, errors[0]
    assert stats["batches"] > 0


def test_read_that_hits_a_segment_deleted_by_retention_raises_out_of_range(
    open_log: OpenLog, batch: Batch, parse: Parse, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deterministic version of the race: retention runs between snapshot and read."""
    log = open_log(LogConfig(segment_bytes=1024, retention_bytes=2000))
    for _ in range(60):
        log.append_as_leader(batch(2, value_size=30), 0)
    log.high_watermark = log.log_end_offset
    first = log.segments[0]
    real_read = first.read_batches

    def racing_read(*args: Any, **kwargs: Any) -> tuple[bytes, int]:
        monkeypatch.undo()
        assert log.delete_old_segments() > 0  # deletes this very segment
        return real_read(*args, **kwargs)

    monkeypatch.setattr(first, "read_batches", racing_read)
    with pytest.raises(OffsetOutOfRange, match="offset 0 is out of range") as e:
        log.read(0, 1000)
    assert f"log start offset {log.log_start_offset}," in str(e.value) and log.log_start_offset > 0
    assert first._fd == -1  # the descriptor was closed once the reader left
    assert parse(copied(log.read(log.log_start_offset, 1000).records))
