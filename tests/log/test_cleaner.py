"""Log compaction on real segment files: what a clean keeps, a crash at every step of its
swap, and a clean stopped mid-pass."""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path

import pytest

from broker_sim.common import ManualClock
from broker_sim.log import Log, LogConfig
from broker_sim.log.batch_scanner import batch_headers
from broker_sim.log.cleaner import (
    CleanAborted,
    LogCleaner,
    clean,
    cleanable,
    read_checkpoint,
)
from broker_sim.log.segment_swap import CLEANING, RANGE, SWAP
from broker_sim.protocol.errors import InvalidRecord
from broker_sim.protocol.records.builder import RecordBatchBuilder
from broker_sim.protocol.records.compression import LZ4
from broker_sim.protocol.records.control import marker_batch
from broker_sim.protocol.records.reader import iter_records
from tests.wire import wait_for

COMPACT = LogConfig(segment_bytes=16 * 1024, index_interval_bytes=512, cleanup_policy="compact",
                    min_cleanable_dirty_ratio=0.01, segment_ms=60_000)
MAP = 1_000_000


def batch(pairs, *, compression: int = 0, pid: int = -1, seq: int = -1,
          txn: bool = False, ts: int = 1_000_000) -> bytes:
    b = RecordBatchBuilder(compression=compression, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                           base_sequence=seq, is_transactional=txn)
    for key, value in pairs:
        b.append(ts, key, value)
    return b.build()


def everything(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every data record, reading from the log start to the end."""
    out: list[tuple[int, bytes | None, bytes | None]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        info = log.read(offset, 1 << 20)
        records = [r for r in iter_records(info.records) if r.offset >= offset]
        if not records:  # a gap up to the next segment: the read returned nothing here
            later = [s.base_offset for s in log.segments if s.base_offset > offset]
            offset = later[0] if later else log.log_end_offset
            continue
        out.extend((r.offset, r.key, r.value) for r in records)
        offset = records[-1].offset + 1
    return out


def commit_all(log: Log) -> None:
    log.high_watermark = log.log_end_offset


def seal(log: Log, tail: bytes = b"tail") -> int:
    """Roll (segment.ms passes: a record stamped 61 s after the newest) and append it to the
    new active segment, so that everything before it is in closed, cleanable segments;
    returns the tail's offset."""
    assert isinstance(log.clock, ManualClock)
    log.clock.advance(61_000)
    newest = max(s.max_timestamp for s in log.segments)
    info = log.append_as_leader(batch([(tail, b"t")], ts=newest + 61_000), 0)
    commit_all(log)
    return info.first_offset


def fill(log: Log, updates: int, keys: int, seed: int = 7) -> dict[bytes, tuple[int, bytes]]:
    """``updates`` random updates over ``keys`` keys, 50 per batch; the latest per key."""
    rng = random.Random(seed)
    latest: dict[bytes, tuple[int, bytes]] = {}
    for start in range(0, updates, 50):
        pairs = []
        for i in range(start, min(updates, start + 50)):
            key = b"k%04d" % rng.randrange(keys)
            pairs.append((key, b"v%d" % i))
        info = log.append_as_leader(batch(pairs, compression=LZ4 if start % 200 == 0 else 0), 0)
        for j, (key, value) in enumerate(pairs):
            latest[key] = (info.first_offset + j, value)
    commit_all(log)
    return latest


def test_a_clean_keeps_exactly_the_latest_record_per_key_at_its_offset(open_log) -> None:
    log = open_log(COMPACT)
    latest = fill(log, 100_000, 1_000)
    last = seal(log, b"last")  # the active segment is never cleaned
    before_end = log.log_end_offset
    stats = clean(log, 2_000_000, MAP)
    assert stats is not None and stats.records_kept < stats.records_read
    got = everything(log)
    expected = sorted((offset, key, value) for key, (offset, value) in latest.items())
    assert got == [*expected, (last, b"last", b"t")]  # offsets intact, gaps between
    assert log.log_end_offset == before_end
    assert sum(s.size for s in log.segments) < 200_000  # ~1,000 records left of 100,000
    assert read_checkpoint(log.dir) == log.active_segment.base_offset
    assert clean(log, 2_000_000, MAP) is None  # nothing dirty any more
    log.close()  # and it all reopens the same
    again = open_log(COMPACT)
    assert everything(again) == got


def test_later_updates_supersede_records_already_cleaned(open_log) -> None:
    log = open_log(COMPACT)
    fill(log, 5_000, 100, seed=1)
    seal(log)
    clean(log, 2_000_000, MAP)
    latest = fill(log, 5_000, 100, seed=2)  # every key updated again
    seal(log, b"tail2")
    clean(log, 2_000_000, MAP)
    got = {key: (offset, value) for offset, key, value in everything(log)}
    assert {k: v for k, v in got.items() if k is not None and k.startswith(b"k")} == latest


def test_tombstones_stay_for_delete_retention_then_go(open_log) -> None:
    log = open_log(COMPACT.replace(delete_retention_ms=60_000))
    fill(log, 2_000, 50)
    log.append_as_leader(batch([(b"k%04d" % i, None) for i in range(10)]), 0)  # delete 10 keys
    fill(log, 1_000, 0 + 1, seed=3)  # more data after them (key k0000 again)
    seal(log)
    clean(log, 1_000_000 + 1_000, MAP)  # soon after: tombstones kept, the old values gone
    records = everything(log)
    tombstones = {k for _o, k, v in records if v is None}
    assert tombstones == {b"k%04d" % i for i in range(1, 10)}  # k0000 was written again
    seal(log, b"tail3")
    assert clean(log, 1_000_000 + 200_000, MAP) is not None  # past delete.retention.ms
    keys = {k: v for _o, k, v in everything(log)}
    assert None not in keys.values()  # the tombstones are gone ...
    assert not {b"k%04d" % i for i in range(1, 10)} & set(keys)  # ... with their keys
    assert keys[b"k0000"] is not None


def _batches(log: Log) -> list[tuple]:
    """(header, [(offset, key, value, timestamp)]) of every batch, segment by segment."""
    from broker_sim.protocol.records import decode_batch

    out = []
    for seg in log.segments:
        blob = seg.read_at(0, seg.size)
        for pos, header in batch_headers(seg.read_at, 0, seg.size):
            _, records = decode_batch(blob, pos)
            out.append((header, [(r.offset, r.key, r.value, r.timestamp) for r in records]))
    return out


def test_a_tombstone_outlives_the_first_clean_however_old_its_timestamp(open_log) -> None:
    """As Kafka's cleaner: the first clean to keep a tombstone stamps its batch with a delete
    horizon (attribute bit 6, base timestamp = the clean's time + delete.retention.ms); only
    a clean past that horizon drops it. A record's own (old) timestamp does not count: a
    reader has delete.retention.ms from the first clean to see the deletion."""
    log = open_log(COMPACT.replace(delete_retention_ms=60_000))
    log.append_as_leader(batch([(b"a", b"1"), (b"b", b"1")], ts=1_000), 0)
    b = RecordBatchBuilder()
    b.append(2_000, b"a", None)
    b.append(2_001, b"c", b"1")
    log.append_as_leader(b.build(), 0)
    seal(log)
    clean(log, 5_000_000, MAP)
    (first, kept), *_ = [(h, r) for h, r in _batches(log) if h.base_offset == 2]
    assert kept == [(2, b"a", None, 2_000), (3, b"c", b"1", 2_001)]  # timestamps unchanged
    assert first.attributes & 0x40 and first.base_timestamp == 5_000_000 + 60_000
    assert first.max_timestamp == 2_001
    seal(log, b"tail2")
    clean(log, 5_000_000 + 59_999, MAP)  # before the horizon: still there
    assert (2, b"a", None) in everything(log)
    seal(log, b"tail3")
    clean(log, 5_000_000 + 60_000, MAP)  # at the horizon: gone, the batch keeps its horizon
    assert [(o, k, v) for o, k, v in everything(log) if k in (b"a", b"b", b"c")] == [(1, b"b", b"1"),
                                                                                   (3, b"c", b"1")]
    (h, kept), *_ = [(h, r) for h, r in _batches(log) if h.base_offset == 2]
    assert h.attributes & 0x40 and h.base_timestamp == 5_060_000 and kept == [(3, b"c", b"1", 2_001)]


def test_a_rebuilt_batch_takes_its_kept_records_timestamps(open_log) -> None:
    """Kafka's rebuilt batch: base timestamp the first kept record's, max the newest kept
    one's (not the original batch's), last offset delta kept."""
    log = open_log(COMPACT)
    b = RecordBatchBuilder()
    for i, key in enumerate((b"x", b"y", b"z")):
        b.append(1_000 + 10 * i, key, b"old")
    log.append_as_leader(b.build(), 0)  # x@0 ts 1000, y@1 ts 1010, z@2 ts 1020
    log.append_as_leader(batch([(b"x", b"new"), (b"z", b"new")], ts=5_000), 0)
    seal(log)
    clean(log, 2_000_000, MAP)
    header, kept = _batches(log)[0]
    assert kept == [(1, b"y", b"old", 1_010)]
    assert (header.base_offset, header.last_offset_delta, header.records_count) == (0, 2, 1)
    assert (header.base_timestamp, header.max_timestamp) == (1_010, 1_010)


def test_an_idempotent_producers_last_batch_stays_as_an_empty_header(open_log) -> None:
    """Every record of producer 5's last batch is superseded, but its header stays (no
    records): the producer's id, epoch and sequence remain in the log; and the last batch
    of the cleaned range stays too, its offsets with it."""
    log = open_log(COMPACT)
    log.append_as_leader(batch([(b"a", b"1")], pid=5, seq=0, ts=1_000), 0)  # 0
    log.append_as_leader(batch([(b"a", b"2"), (b"a", b"3")], ts=2_000), 0)  # 1-2
    log.append_as_leader(batch([(b"b", b"1")], pid=5, seq=1, ts=3_000), 0)  # 3: pid 5's last
    log.append_as_leader(batch([(b"b", b"2")], ts=4_000), 0)  # 4
    seal(log)
    clean(log, 2_000_000, MAP)
    shape = [(h.base_offset, h.last_offset_delta, h.records_count, h.producer_id, h.base_sequence,
              h.base_timestamp, h.max_timestamp, [r[0] for r in recs]) for h, recs in _batches(log)]
    assert shape[:3] == [(1, 1, 1, -1, -1, 2_000, 2_000, [2]),  # pid 5's first batch: gone
                         (3, 0, 0, 5, 1, -1, 3_000, []),  # its last: an empty header
                         (4, 0, 1, -1, -1, 4_000, 4_000, [4])]
    log.close()
    again = open_log(COMPACT)  # and its producer state is back from that header
    assert [(p.producer_id, p.last_sequence) for p in again.producers.active()] == [(5, 1)]


def test_aborted_transactions_go_and_committed_ones_stay_readable(open_log) -> None:
    log = open_log(COMPACT)
    log.append_as_leader(batch([(b"a", b"committed")], pid=7, seq=0, txn=True), 0)
    log.append_as_leader(batch([(b"a", b"aborted")], pid=8, seq=0, txn=True), 0)
    log.append_as_leader(marker_batch(8, 0, False, 1, 1_000_000), 0, markers=True)
    log.append_as_leader(marker_batch(7, 0, True, 1, 1_000_000), 0, markers=True)
    fill(log, 3_000, 30)
    seal(log)
    clean(log, 1_000_000, MAP)
    values = {k: v for _o, k, v in everything(log)}
    assert values[b"a"] == b"committed"  # the aborted later value neither kept nor winning
    assert log.last_stable_offset == log.high_watermark  # no transaction left open
    log.close()
    again = open_log(COMPACT)
    commit_all(again)
    assert again.last_stable_offset == again.log_end_offset


def test_recent_records_wait_for_min_compaction_lag(open_log) -> None:
    log = open_log(COMPACT.replace(min_compaction_lag_ms=10_000))
    fill(log, 3_000, 10)
    seal(log)
    assert cleanable(log, 1_000_000 + 5_000) is None  # every record is younger than the lag
    assert cleanable(log, 1_000_000 + 20_000) is not None


def test_a_compacted_log_refuses_records_without_a_key(open_log) -> None:
    log = open_log(COMPACT)
    with pytest.raises(InvalidRecord, match="without a key"):
        log.append_as_leader(batch([(b"k", b"v"), (None, b"v")]), 0)
    assert log.log_end_offset == 0


def _crash_mid_swap(tmp_path: Path, open_log, stop_after: str) -> tuple[list, Path]:
    """Clean a log, but copy its directory as it was at a step of the swap."""
    log = open_log(COMPACT, name="t-0")
    fill(log, 20_000, 200)
    seal(log)
    original = everything(log)
    log.flush()
    crashed = tmp_path / "crashed" / "t-0"
    import broker_sim.log.segment_swap as swap

    real = swap.finish_swap

    def interrupted(dir: Path, base: int, replaced_end: int) -> None:
        if crashed.exists():  # the first group's swap is the one interrupted
            pass
        elif stop_after == "commit":  # crash right after the rename to swap/
            shutil.copytree(dir, crashed)
        elif stop_after == "delete":  # crash after deleting old segments, before the move
            shutil.copytree(dir, crashed)
            for p in crashed.glob("*.log"):
                if base <= int(p.stem) < replaced_end:
                    p.unlink()
                    (crashed / (p.stem + ".index")).unlink(missing_ok=True)
        real(dir, base, replaced_end)

    swap.finish_swap = interrupted
    try:
        if stop_after == "cleaning":
            shutil.copytree(log.dir, crashed)
            (crashed / CLEANING).mkdir()
            (crashed / CLEANING / "00000000000000000000.log").write_bytes(b"half a segment")
        else:
            clean(log, 2_000_000, MAP)
    finally:
        swap.finish_swap = real
    return original, crashed


@pytest.mark.parametrize("stop_after", ["cleaning", "commit", "delete"])
def test_a_crash_at_any_step_of_the_swap_loses_nothing(tmp_path, open_log, clock, stop_after) -> None:
    original, crashed = _crash_mid_swap(tmp_path, open_log, stop_after)
    reopened = Log(crashed, COMPACT, clock)
    try:
        assert not (crashed / CLEANING).exists() and not (crashed / SWAP).exists()
        got = everything(reopened)
        latest = {}
        for offset, key, value in original:
            latest[key] = (offset, key, value)
        if stop_after == "cleaning":
            assert got == original  # nothing was swapped: the old segments, whole
        else:  # the swap finished on reopen: compacted, nothing lost, nothing twice
            assert {k: (o, v) for o, k, v in got} == {k: (o, v) for k, (o, _k, v) in latest.items()}
            assert len(got) == len({o for o, _k, _v in got})
    finally:
        reopened.close()


def test_the_cleaner_threads_clean_due_logs(open_log) -> None:
    log = open_log(COMPACT)
    fill(log, 5_000, 20)
    seal(log)
    cleaner = LogCleaner(lambda: [log], threads=1, backoff_ms=10, clock=ManualClock(wall_start_ms=2_000_000))
    done = cleaner.clean_now()
    assert len(done) == 1 and len(everything(log)) == 21


# ---- stopping mid-pass -------------------------------------------------------------------------
def _files(dir: Path) -> dict[str, bytes]:
    """Every file of a log directory, by path under it (subdirectories included)."""
    return {str(p.relative_to(dir)): p.read_bytes() for p in sorted(dir.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("phase", ["offset map", "rewrite", "before the swap"])
def test_a_clean_told_to_stop_leaves_the_log_as_it_was(open_log, phase: str) -> None:
    log = open_log(COMPACT)
    latest = fill(log, 20_000, 200)
    last = seal(log, b"last")
    assert len(log.segments) > 5
    log.flush()
    before, records = _files(log.dir), everything(log)
    first = log.segments[0]
    polls = 0

    def should_stop() -> bool:  # a stop requested at a given point of the pass
        nonlocal polls
        polls += 1
        if phase == "offset map":  # after two segments were read for the map
            return polls > 2 * len(list(batch_headers(first.read_at, 0, first.size))) + 3
        if phase == "rewrite":  # a few batches into writing the first cleaned segment
            return (log.dir / CLEANING).is_dir() and polls % 5 == 0
        return (log.dir / CLEANING / RANGE).exists()  # written, flushed, not yet swapped

    with pytest.raises(CleanAborted):
        clean(log, 2_000_000, MAP, should_stop=should_stop)
    assert _files(log.dir) == before  # no cleaning/ or swap/ left, no segment touched
    assert everything(log) == records and read_checkpoint(log.dir) == 0
    stats = clean(log, 2_000_000, MAP)  # the next pass does the whole job
    assert stats is not None and stats.first_dirty == 0
    expected = sorted((offset, key, value) for key, (offset, value) in latest.items())
    assert everything(log) == [*expected, (last, b"last", b"t")]


def test_stopping_the_cleaner_abandons_a_long_clean_at_once(open_log) -> None:
    """A real cleaner thread in the middle of a pass over one large segment (about a
    second of work here): ``stop`` returns at once, with the log as it was. The stop comes
    once the thread has built its offset map and is rewriting the segment into cleaning/
    (the directory exists), not after a fixed sleep."""
    log = open_log(COMPACT.replace(segment_bytes=1 << 30, index_interval_bytes=4096))
    latest = fill(log, 1_000_000, 5_000)
    last = seal(log, b"last")
    log.flush()
    before = _files(log.dir)
    cleaner = LogCleaner(lambda: [log], threads=1, backoff_ms=10, clock=ManualClock(wall_start_ms=2_000_000)).start()
    try:
        wait_for(lambda: (log.dir / CLEANING).is_dir(), timeout=10, interval=0.002,
                 what="the cleaner rewriting the segment into cleaning/")
    finally:
        started = time.monotonic()
        cleaner.stop()
        stopped_in = time.monotonic() - started
    assert stopped_in < 0.3, stopped_in  # the whole pass takes ~1 s
    assert not any(t.is_alive() for t in cleaner._threads)
    assert cleaner.cleans == 0  # abandoned, not finished
    assert _files(log.dir) == before
    assert cleaner.clean_now() == []  # a stopped cleaner stays stopped
    done = LogCleaner(lambda: [log], clock=ManualClock(wall_start_ms=2_000_000)).clean_now()  # the next start
    assert len(done) == 1
    expected = sorted((offset, key, value) for key, (offset, value) in latest.items())
    assert everything(log) == [*expected, (last, b"last", b"t")]
