from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from broker_sim.common import ManualClock
from broker_sim.log import AppendInfo, Log, LogConfig, UnexpectedAppendOffset
from broker_sim.log.log_loader import STATE_FILE
from broker_sim.protocol.errors import (
    CorruptMessage,
    InvalidRecord,
    KafkaStorageError,
    MessageTooLarge,
    OffsetOutOfRange,
    RecordListTooLarge,
)
from broker_sim.protocol.records.batch_header import CRC_START, BatchHeader
from broker_sim.protocol.records.compression import GZIP
from tests.log.support import copied

Batch = Callable[..., bytes]
Parse = Callable[[bytes], list[BatchHeader]]
OpenLog = Callable[..., Log]

SMALL = LogConfig(segment_bytes=1024, index_interval_bytes=128)


def fill(log: Log, batch: Batch, count: int, *, ts0: int = 1_000) -> list[bytes]:
    """Append ``count`` batches of 1..4 records (batch i has timestamp ts0 + i); return them."""
    produced = []
    for i in range(count):
        b = batch(1 + i % 4, timestamp=ts0 + i, value_size=40)
        log.append_as_leader(b, leader_epoch=3)
        produced.append(b)
    return produced


def read_all(log: Log, parse: Parse, start: int = 0, max_bytes: int = 700, max_offset: int | None = None) -> list[BatchHeader]:
    """Fetch like a consumer from ``start`` to the end; return every batch header seen."""
    seen: list[BatchHeader] = []
    offset = start
    while offset < log.log_end_offset:
        info = log.read(offset, max_bytes, max_offset=max_offset)
        if not info.records:
            break
        hs = parse(copied(info.records))
        assert info.first_offset == hs[0].base_offset
        seen.extend(hs)
        offset = hs[-1].next_offset
    return seen


# ------------------------------------------------------------------ append / read


def test_append_assigns_consecutive_offsets_and_epoch(open_log: OpenLog, batch: Batch, parse: Parse) -> None:
    log = open_log(SMALL)
    info = log.append_as_leader(batch(3, timestamp=500, ts_step=7) + batch(2, timestamp=100), leader_epoch=9)
    assert info == AppendInfo(0, 4, 5, 514, -1, 0)
    info = log.append_as_leader(batch(1), leader_epoch=10)
    assert (info.first_offset, info.last_offset) == (5, 5)
    assert log.log_end_offset == 6
    hs = parse(copied(log.read(0, 10_000).records))
    assert [(h.base_offset, h.last_offset, h.partition_leader_epoch) for h in hs] == [(0, 2, 9), (3, 4, 9), (5, 5, 10)]


def test_append_and_read_across_many_segment_rolls(open_log: OpenLog, batch: Batch, parse: Parse) -> None:
    log = open_log(SMALL)
    produced = fill(log, batch, 300)
    assert len(log.segments) > 30
    assert all(s.size <= SMALL.segment_bytes for s in log.segments)
    assert log.log_end_offset == sum(1 + i % 4 for i in range(300))
    seen = read_all(log, parse)
    assert len(seen) == 300
    # bytes stored exactly as produced, apart from base offset and leader epoch
    data = copied(log.read(0, 10**6).records)  # reads one segment
    first = parse(data)
    pos = 0
    for h, original in zip(first, produced, strict=False):
        assert data[pos + CRC_START : pos + h.size] == original[CRC_START:]
        pos += h.size
    expected = 0
    for h in seen:
        assert h.base_offset == expected
        expected = h.next_offset


def test_read_at_every_offset_returns_batch_holding_it(open_log: OpenLog, batch: Batch, parse: Parse) -> None:
    log = open_log(SMALL)
    fill(log, batch, 120)
    for offset in range(log.log_end_offset):
        info = log.read(offset, 1)
        (h,) = parse(copied(info.records))
        assert h.base_offset <= offset <= h.last_offset
        assert info.first_offset == h.base_offset


def test_max_bytes_and_min_one_batch(open_log: OpenLog, batch: Batch, parse: Parse) -> None:
    log = open_log(LogConfig())
    for _ in range(10):
        log.append_as_leader(batch(2, value_size=100), 0)
    size = parse(copied(log.read(0, 1).records))[0].size
    assert len(log.read(0, size).records) == size
    assert len(log.read(0, 3 * size + size - 1).records) == 3 * size  # whole batches only
    assert len(log.read(0, 0).records) == size  # min_one_batch
    assert log.read(0, size - 1, min_one_batch=False).records == b""
    assert len(log.read(0, 10**6).records) == 10 * size


def test_max_offset_bounds_reads_to_the_high_watermark(open_log: OpenLog, batch: Batch, parse: Parse) -> None:
    log = open_log(SMALL)
    fill(log, batch, 40)
    log.high_watermark = 37
    hw = log.high_watermark
    seen = read_all(log, parse, max_offset=hw)
    assert seen and all(h.last_offset < hw for h in seen)
    assert seen[-1].next_offset <= hw
    info = log.read(hw, 1000, max_offset=hw)
    assert info.records == b"" and info.first_offset == hw and info.high_watermark == hw
    log.high_watermark = 10**9  # clamped to the LEO
    assert log.high_watermark == log.log_end_offset
    log.high_watermark = -5
    assert log.high_watermark == log.log_start_offset


def test_out_of_range_and_end_of_log(open_log: OpenLog, batch: Batch) -> None:
    log = open_log(SMALL)
    fill(log, batch, 5)
    leo = log.log_end_offset
    info = log.read(leo, 1000)
    assert info.records == b"" and info.log_end_offset == leo
    with pytest.raises(OffsetOutOfRange, match=f"log start offset 0, log end offset {leo}"):
        log.read(leo + 1, 1000)
    with pytest.raises(OffsetOutOfRange):
        log.read(-1, 1000)


# -------------------------------------------------------------------- validation


def test_leader_append_validation(open_log: OpenLog, batch: Batch) -> None:
    log = open_log(LogConfig(segment_bytes=4096, max_message_bytes=500))
    good = batch(1)
    with pytest.raises(InvalidRecord, match="no record batches"):
        log.append_as_leader(b"", 0)
    old_magic = bytearray(good)
    old_magic[16] = 1
    with pytest.raises(InvalidRecord, match="magic"):
        log.append_as_leader(bytes(old_magic), 0)
    with pytest.raises(MessageTooLarge, match="max.message.bytes"):
        log.append_as_leader(batch(1, value_size=600), 0)
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptMessage, match="CRC"):
        log.append_as_leader(bytes(corrupt), 0)
    with pytest.raises(CorruptMessage, match="partial batch"):
        log.append_as_leader(good + good[:30], 0)
    with pytest.raises(InvalidRecord, match="base offset"):
        log.append_as_leader(batch(1, base_offset=7), 0)
    with pytest.raises(RecordListTooLarge, match="segment.bytes"):
        log.append_as_leader(b"".join(batch(3, value_size=100) for _ in range(20)), 0)
    assert log.log_end_offset == 0 and log.active_segment.size == 0  # nothing was written
    log.append_as_leader(good, 0)
    assert log.log_end_offset == 1


# ---------------------------------------------------------------------- restart


def test_reopen_restores_offsets_hw_and_log_start(tmp_path: Path, clock: ManualClock, batch: Batch, parse: Parse) -> None:
    log = Log(tmp_path / "t-0", SMALL, clock)
    fill(log, batch, 100)
    log.high_watermark = 150
    log.delete_records_before(120)  # moves the start into the middle of a segment
    before = (log.log_start_offset, log.high_watermark, log.log_end_offset, len(log.segments))
    records = log.read(120, 10**6).records
    log.close()
    with pytest.raises(KafkaStorageError):
        log.read(120, 100)
    again = Log(tmp_path / "t-0", SMALL, clock)
    assert (again.log_start_offset, again.high_watermark, again.log_end_offset, len(again.segments)) == before
    assert before[0] == 120 and before[1] == 150
    assert again.read(120, 10**6).records == records
    with pytest.raises(OffsetOutOfRange):
        again.read(119, 100)
    info = again.append_as_leader(batch(1), 0)
    assert info.first_offset == before[2]
    again.close()


def _last_batch_position(log: Log, parse: Parse) -> tuple[Path, int, BatchHeader]:
    seg = log.active_segment
    data = seg.read(seg.base_offset, 10**9)
    hs = parse(data)
    return seg.log_path, sum(h.size for h in hs[:-1]), hs[-1]


def test_torn_tail_is_cut_on_reopen(open_log: OpenLog, tmp_path: Path, batch: Batch, parse: Parse) -> None:
    log = open_log(SMALL)
    fill(log, batch, 50)
    path, last_pos, last = _last_batch_position(log, parse)
    log.close()
    with open(path, "r+b") as f:
        f.truncate(last_pos + last.size // 2)  # the last write was torn
    again = open_log(SMALL)
    assert again.log_end_offset == last.base_offset
    assert os.path.getsize(path) == last_pos
    info = again.append_as_leader(batch(2), 0)
    assert info.first_offset == last.base_offset
    assert parse(copied(again.read(last.base_offset, 1000).records))[0].base_offset == last.base_offset


def test_corrupt_byte_in_last_batch_is_caught_by_crc(open_log: OpenLog, batch: Batch, parse: Parse) -> None:
    log = open_log(SMALL)
    fill(log, batch, 50)
    path, last_pos, last = _last_batch_position(log, parse)
    log.close()
    with open(path, "r+b") as f:
        f.seek(last_pos + last.size - 5)  # inside a record value
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x55]))
    again = open_log(SMALL)
    assert again.log_end_offset == last.base_offset
    assert os.path.getsize(path) == last_pos


def test_crash_recovers_from_recovery_point(tmp_path: Path, clock: ManualClock, batch: Batch, parse: Parse) -> None:
    log = Log(tmp_path / "t-0", SMALL, clock)
    fill(log, batch, 20)
    log.flush()  # recovery point: everything so far
    rp = log.recovery_point
    fill(log, batch, 60)
    # a crash image: the files as they are now, without close(); no state written since flush
    image = tmp_path / "crash" / "t-0"
    shutil.copytree(tmp_path / "t-0", image)
    segs = sorted(image.glob("*.log"))
    middle = next(p for p in segs if int(p.stem) > rp + 10)
    with open(middle, "r+b") as f:  # damage a segment after the recovery point
        f.seek(100)
        f.write(b"\xff" * 4)
    crashed = Log(image, SMALL, clock)
    assert crashed.recovery_point == rp
    assert crashed.log_end_offset <= int(middle.stem) + 5
    assert len(crashed.segments) == segs.index(middle) + 1  # later segments were dropped
    hs = read_all(crashed, parse)
    assert hs[-1].next_offset == crashed.log_end_offset
    crashed.close()
    log.close()


def test_lost_index_is_rebuilt(open_log: OpenLog, batch: Batch, parse: Parse) -> None:
    log = open_log(SMALL)
    fill(log, batch, 60)
    first = log.segments[0]
    entries = [first.index.entry(i) for i in range(len(first.index))]
    assert entries
    log.close()
    first.index_path.unlink()
    again = open_log(SMALL)
    seg = again.segments[0]
    assert [seg.index.entry(i) for i in range(len(seg.index))] == entries
    assert len(read_all(again, parse)) == 60


# --------------------------------------------------------------------- retention


def test_retention_by_bytes(open_log: OpenLog, batch: Batch, parse: Parse) -> None:
    log = open_log(SMALL.replace(retention_bytes=3000))
    fill(log, batch, 100)
    n_segments = len(log.segments)
    assert log.delete_old_segments() == 0  # nothing is below the high watermark yet
    log.high_watermark = log.log_end_offset
    deleted = log.delete_old_segments()
    assert deleted > 0 and len(log.segments) == n_segments - deleted
    sizes = [s.size for s in log.segments]
    assert sum(sizes) >= 3000 and sum(sizes) - sizes[0] < 3000
    assert log.log_start_offset == log.segments[0].base_offset > 0
    assert len(list(log.dir.glob("*.log"))) == len(log.segments)
    with pytest.raises(OffsetOutOfRange, match=f"log start offset {log.log_start_offset}"):
        log.read(log.log_start_offset - 1, 100)
    assert read_all(log, parse, start=log.log_start_offset)[0].base_offset == log.log_start_offset
    assert log.delete_old_segments() == 0


def test_retention_by_time(open_log: OpenLog, batch: Batch) -> None:
    log = open_log(SMALL.replace(retention_ms=10_000))
    fill(log, batch, 100, ts0=1_000_000)  # batch i has timestamp 1_000_000 + i
    log.high_watermark = log.log_end_offset
    assert log.delete_old_segments(now_ms=1_000_000 + 10_000) == 0
    # 40 ms later the segments whose newest batch is older than i=40 have expired
    deleted = log.delete_old_segments(now_ms=1_000_000 + 10_040)
    assert deleted > 0
    assert all(s.max_timestamp >= 1_000_040 for s in log.segments)
    assert log.log_start_offset == log.segments[0].base_offset
    with pytest.raises(OffsetOutOfRange):
        log.read(0, 100)
    # far future: everything but the active segment goes
    log.delete_old_segments(now_ms=10**12)
    assert len(log.segments) == 1 and log.log_start_offset == log.active_segment.base_offset


def test_retention_survives_restart(tmp_path: Path, clock: ManualClock, batch: Batch) -> None:
    log = Log(tmp_path / "t-0", SMALL.replace(retention_bytes=2000), clock)
    fill(log, batch, 80)
    log.high_watermark = log.log_end_offset
    log.delete_old_segments()
    start = log.log_start_offset
    log.close()
    again = Log(tmp_path / "t-0", SMALL.replace(retention_bytes=2000), clock)
    assert again.log_start_offset == start > 0
    again.close()


def test_delete_records_before(open_log: OpenLog, batch: Batch) -> None:
    log = open_log(SMALL)
    fill(log, batch, 60)
    with pytest.raises(OffsetOutOfRange, match="high watermark 0"):
        log.delete_records_before(10)
    log.high_watermark = 100
    segments = len(log.segments)
    assert log.delete_records_before(90) == 90
    assert len(log.segments) < segments and log.segments[0].base_offset <= 90
    with pytest.raises(OffsetOutOfRange):
        log.read(89, 100)
    assert log.delete_records_before(-1) == 100
    assert log.delete_records_before(50) == 100  # never moves back


def test_segment_ms_rolls_by_the_records_time(open_log: OpenLog, clock: ManualClock,
                                               batch: Batch) -> None:
    """As Kafka: a segment rolls once a batch is stamped more than segment.ms after the
    segment's first batch, however little wall time passed; wall time alone does not roll
    it while the records carry their own times."""
    log = open_log(LogConfig(segment_ms=1000))
    log.append_as_leader(batch(1, timestamp=1_000), 0)
    log.append_as_leader(batch(1, timestamp=2_000), 0)  # 1000 ms later: not more than segment.ms
    clock.advance(5_000)
    log.append_as_leader(batch(1, timestamp=1_500), 0)
    assert len(log.segments) == 1
    log.append_as_leader(batch(1, timestamp=2_001), 0)
    assert [s.base_offset for s in log.segments] == [0, 3]
    log.close()
    reopened = open_log(LogConfig(segment_ms=1000))  # the first batch's time read from the file
    reopened.append_as_leader(batch(1, timestamp=3_002), 0)
    assert [s.base_offset for s in reopened.segments] == [0, 3, 4]


def test_segment_ms_rolls_by_the_wall_clock_when_records_have_no_time(
        open_log: OpenLog, clock: ManualClock, batch: Batch) -> None:
    log = open_log(LogConfig(segment_ms=1000))
    log.append_as_leader(batch(1, timestamp=-1), 0)
    log.append_as_leader(batch(1, timestamp=-1), 0)
    assert len(log.segments) == 1
    clock.advance(1001)
    log.append_as_leader(batch(1, timestamp=-1), 0)
    assert [s.base_offset for s in log.segments] == [0, 2]


# --------------------------------------------------------------- timestamps


def test_offset_for_timestamp(open_log: OpenLog, batch: Batch) -> None:
    log = open_log(SMALL)
    # batch i: 4 records with timestamps 1000*i + 0, 10, 20, 30 (offsets 4i .. 4i+3)
    for i in range(1, 60):
        compression = GZIP if i % 3 == 0 else 0
        log.append_as_leader(batch(4, timestamp=1000 * i, ts_step=10, compression=compression), 0)
    assert len(log.segments) > 3
    assert log.offset_for_timestamp(0) == (0, 1000)
    assert log.offset_for_timestamp(1000) == (0, 1000)
    assert log.offset_for_timestamp(1005) == (1, 1010)
    assert log.offset_for_timestamp(1031) == (4, 2000)
    assert log.offset_for_timestamp(30_015) == (4 * 29 + 2, 30_020)  # inside a gzip batch
    assert log.offset_for_timestamp(45_030) == (4 * 44 + 3, 45_030)
    assert log.offset_for_timestamp(59_031) is None
    assert log.offset_for_timestamp(-2) == (0, -1)
    assert log.offset_for_timestamp(-1) == (log.log_end_offset, -1)
    assert log.offset_for_timestamp(-3) == (4 * 58 + 3, 59_030)
    assert log.offset_for_timestamp(30_015, max_offset=4 * 29) is None  # above the HW
    log.high_watermark = 100
    log.delete_records_before(42)
    assert log.offset_for_timestamp(0) == (42, 11_020)


# -------------------------------------------------------------- truncation, follower


def test_truncate_to(open_log: OpenLog, batch: Batch, parse: Parse) -> None:
    log = open_log(SMALL)
    fill(log, batch, 100)
    log.high_watermark = log.log_end_offset
    assert not log.truncate_to(log.log_end_offset)
    n_segments = len(log.segments)
    target = log.segments[3].base_offset + 1  # inside the first batch of segment 3
    assert log.truncate_to(target)
    assert len(log.segments) == 4 < n_segments
    hs = read_all(log, parse)
    assert hs[-1].next_offset == log.log_end_offset <= target
    assert log.high_watermark == log.log_end_offset
    assert len(list(log.dir.glob("*.log"))) == 4
    info = log.append_as_leader(batch(2), 0)
    assert info.first_offset == hs[-1].next_offset


def test_truncate_fully_and_below_log_start(open_log: OpenLog, batch: Batch) -> None:
    log = open_log(SMALL)
    fill(log, batch, 30)
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (500, 500, 500)
    assert [s.base_offset for s in log.segments] == [500]
    assert log.append_as_leader(batch(1), 0).first_offset == 500
    log.high_watermark = 501
    log.delete_records_before(501)
    assert log.truncate_to(200)  # below the log start: restart the log there
    assert (log.log_start_offset, log.log_end_offset) == (200, 200)


def test_follower_append(open_log: OpenLog, batch: Batch, parse: Parse) -> None:
    log = open_log(SMALL)
    b1 = batch(3, base_offset=0)
    b2 = batch(2, base_offset=10)  # a gap, as after compaction on the leader
    info = log.append_as_follower(b1 + b2 + b1[:20])  # a trailing partial batch is ignored
    assert (info.first_offset, info.last_offset, info.num_records) == (0, 11, 5)
    assert log.log_end_offset == 12
    assert [h.base_offset for h in parse(copied(log.read(0, 1000).records))] == [0, 10]
    assert log.read(5, 1000).first_offset == 10
    with pytest.raises(UnexpectedAppendOffset, match="below the expected offset 12"):
        log.append_as_follower(batch(1, base_offset=11))
    with pytest.raises(InvalidRecord):  # UnexpectedAppendOffset is an InvalidRecord
        log.append_as_follower(batch(1, base_offset=20) + batch(1, base_offset=15))
    with pytest.raises(CorruptMessage):
        bad = bytearray(batch(1, base_offset=12))
        bad[-2] ^= 1
        log.append_as_follower(bytes(bad))
    assert log.append_as_follower(b"").num_records == 0
    assert log.log_end_offset == 12


def test_state_file_is_json(open_log: OpenLog, batch: Batch) -> None:
    import json

    log = open_log(SMALL)
    fill(log, batch, 5)
    log.high_watermark = 3
    log.flush()
    state = json.loads((log.dir / STATE_FILE).read_text())
    assert state == {"version": 1, "log_start_offset": 0, "high_watermark": 3, "recovery_point": log.log_end_offset}


def test_delete_removes_directory(open_log: OpenLog, batch: Batch) -> None:
    log = open_log(SMALL)
    fill(log, batch, 5)
    log.delete()
    assert not log.dir.exists()
    with pytest.raises(KafkaStorageError):
        log.append_as_leader(batch(1), 0)
