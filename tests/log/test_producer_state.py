"""Idempotent producers: a retried batch is written once; gaps and fenced epochs refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker_sim.log import Log, LogConfig
from broker_sim.protocol.errors import OutOfOrderSequenceNumber, ProducerFenced
from broker_sim.protocol.records import RecordBatchBuilder, iter_records
from tests.log.support import copied


def batch(pid: int, epoch: int, seq: int, n: int, tag: str = "v") -> bytes:
    b = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    for i in range(n):
        b.append(1000 + i, None, f"{tag}{seq + i}".encode())
    return b.build()


def values(log: Log) -> list[bytes | None]:
    return [r.value for r in iter_records(log.read(0, 1 << 20).records)]


def test_retried_batch_is_written_once_and_answered_with_its_offsets(tmp_path: Path) -> None:
    log = Log(tmp_path / "p", LogConfig())
    first = log.append_as_leader(batch(7, 0, 0, 10), 0)
    second = log.append_as_leader(batch(7, 0, 10, 10), 0)
    retry = log.append_as_leader(batch(7, 0, 10, 10), 0)  # e.g. the response was lost
    assert (first.first_offset, second.first_offset) == (0, 10)
    assert (retry.first_offset, retry.last_offset) == (10, 19)
    assert log.log_end_offset == 20
    assert values(log) == [f"v{i}".encode() for i in range(20)]


def test_gap_and_old_epoch_are_refused(tmp_path: Path) -> None:
    log = Log(tmp_path / "p", LogConfig())
    log.append_as_leader(batch(7, 1, 0, 5), 0)
    with pytest.raises(OutOfOrderSequenceNumber):
        log.append_as_leader(batch(7, 1, 9, 5), 0)
    with pytest.raises(ProducerFenced):
        log.append_as_leader(batch(7, 0, 5, 5), 0)
    log.append_as_leader(batch(7, 2, 0, 5, "new"), 0)  # a new epoch starts afresh
    assert log.log_end_offset == 10


def test_state_survives_a_restart_and_follows_replication(tmp_path: Path) -> None:
    log = Log(tmp_path / "p", LogConfig())
    log.append_as_leader(batch(3, 0, 0, 4), 0)
    follower = Log(tmp_path / "f", LogConfig())
    follower.append_as_follower(copied(log.read(0, 1 << 20).records))
    log.close()
    reopened = Log(tmp_path / "p", LogConfig())
    for target in (reopened, follower):  # the new leader after a failover, or after a restart
        retry = target.append_as_leader(batch(3, 0, 0, 4), 0)
        assert (retry.first_offset, target.log_end_offset) == (0, 4)


def test_a_replay_older_than_the_cache_is_refused_as_duplicate(tmp_path: Path) -> None:
    from broker_sim.protocol.errors import DuplicateSequenceNumber

    log = Log(tmp_path / "p", LogConfig())
    for seq in range(0, 80, 10):  # 8 batches: the first 3 fell out of the 5-batch cache
        log.append_as_leader(batch(9, 0, seq, 10), 0)
    with pytest.raises(DuplicateSequenceNumber):
        log.append_as_leader(batch(9, 0, 0, 10), 0)
    assert log.log_end_offset == 80
