"""The leader epoch cache answers where each epoch ends, and follows truncation."""

from __future__ import annotations

from pathlib import Path

from broker_sim.log import Log, LogConfig
from broker_sim.log.leader_epoch_cache import LeaderEpochCache
from broker_sim.protocol.records import RecordBatchBuilder
from tests.log.support import copied


def batch(n: int) -> bytes:
    b = RecordBatchBuilder()
    for i in range(n):
        b.append(1000 + i, None, b"v%d" % i)
    return b.build()


def test_end_offsets_follow_the_worked_example(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path)
    for epoch, start in [(0, 0), (2, 100), (5, 150)]:
        cache.assign(epoch, start)
    assert cache.end_offset_for(5, 170) == (5, 170)
    assert cache.end_offset_for(2, 170) == (2, 150)
    assert cache.end_offset_for(3, 170) == (2, 150)
    assert cache.end_offset_for(9, 170) == (-1, -1)
    assert LeaderEpochCache(tmp_path).entries == [(0, 0), (2, 100), (5, 150)]  # persisted
    cache.truncate_from_end(120)
    assert cache.entries == [(0, 0), (2, 100)]


def test_log_records_epochs_on_leader_and_follower_appends(tmp_path: Path) -> None:
    log = Log(tmp_path / "p", LogConfig())
    log.append_as_leader(batch(10), leader_epoch=0)
    log.append_as_leader(batch(5), leader_epoch=3)
    assert log.epochs.entries == [(0, 0), (3, 10)]
    log.truncate_to(12)  # the batch starting at 10 goes as a whole
    assert log.epochs.entries == [(0, 0)]
    follower = Log(tmp_path / "f", LogConfig())
    data = copied(log.read(0, 1 << 20).records)
    follower.append_as_follower(data)
    assert follower.epochs.entries == [(0, 0)]
    log.close()
    follower.close()
    assert Log(tmp_path / "p", LogConfig()).epochs.entries == [(0, 0)]
