"""Zero-copy reads (``Log.read(zero_copy=True)``): the same bytes as a copying read, left
in the segment file and pinned there until released."""

from __future__ import annotations

import os
import random
from collections.abc import Callable

import pytest

from broker_sim.log import Log, LogConfig
from broker_sim.log.file_records import FileRecords
from broker_sim.network.file_send import send_file_region
from tests.log.support import copied

OpenLog = Callable[..., Log]


def _fill(log: Log, batches: int, seed: int) -> None:
    from tests.log.conftest import make_batch

    rng = random.Random(seed)
    for _ in range(batches):
        log.append_as_leader(make_batch(rng.randint(1, 6), value_size=rng.randint(1, 300)), 0)


def test_zero_copy_read_returns_exactly_the_copying_reads_bytes(open_log: OpenLog) -> None:
    log = open_log(LogConfig(segment_bytes=8192, index_interval_bytes=256))
    _fill(log, 300, seed=1)
    assert len(log.segments) > 3
    log.high_watermark = log.log_end_offset - 7
    rng = random.Random(2)
    for _ in range(2000):
        offset = rng.randint(log.log_start_offset, log.log_end_offset)
        max_bytes = rng.choice([0, 1, 60, 500, 2000, 9000, 1 << 20])
        upper = rng.choice([None, log.high_watermark, rng.randint(offset, log.log_end_offset)])
        one = rng.random() < 0.8
        copied = log.read(offset, max_bytes, max_offset=upper, min_one_batch=one)
        region = log.read(offset, max_bytes, max_offset=upper, min_one_batch=one, zero_copy=True)
        assert region.first_offset == copied.first_offset
        if not copied.records:
            assert region.records == b""
            continue
        assert isinstance(region.records, FileRecords)
        try:
            assert region.records.read() == copied.records
        finally:
            region.records.release()


def test_a_pinned_segment_deleted_by_retention_stays_readable(open_log: OpenLog) -> None:
    log = open_log(LogConfig(segment_bytes=4096, retention_bytes=1, index_interval_bytes=256))
    _fill(log, 80, seed=3)
    log.high_watermark = log.log_end_offset
    first = log.segments[0]
    info = log.read(log.log_start_offset, 1 << 20, zero_copy=True)
    region = info.records
    assert isinstance(region, FileRecords) and region.segment is first
    expected = region.read()
    log.delete_old_segments()
    assert first.deleted and not first.log_path.exists()
    file_region = region.file_region()
    assert file_region is not None  # not released yet
    fd, position, size = file_region
    assert os.pread(fd, size, position) == expected  # the descriptor outlived the unlink
    assert not region.changed
    region.release()
    region.release()  # idempotent
    assert first._fd == -1  # the last reader closed it


def test_truncation_under_a_pinned_range_is_seen(open_log: OpenLog) -> None:
    log = open_log()
    _fill(log, 20, seed=4)
    info = log.read(5, 1 << 20, zero_copy=True)
    region = info.records
    assert isinstance(region, FileRecords)
    log.truncate_to(8)
    assert region.changed
    region.release()


def test_truncation_and_new_appends_leave_a_pinned_ranges_bytes_as_read(open_log: OpenLog) -> None:
    """Bytes already given to ``sendfile`` are not copied yet (socket buffers refer to the
    page cache), so a truncation must not change the file a range was read from: the
    range's bytes stay the original ones while the log serves the new records, and the
    range refuses to be sent any further."""
    from broker_sim.protocol.primitives import ExternalBytesChanged

    log = open_log()
    _fill(log, 40, seed=6)
    log.high_watermark = log.log_end_offset
    region = log.read(0, 1 << 20, zero_copy=True).records
    assert isinstance(region, FileRecords) and len(log.segments) == 1
    expected = region.read()
    cut = log.read(log.log_end_offset // 2, 1).first_offset
    assert log.truncate_to(cut)
    _fill(log, 40, seed=7)  # other records at the same offsets and file positions
    log.high_watermark = log.log_end_offset
    assert region.changed
    file_region = region.file_region()
    assert file_region is not None  # not released yet
    fd, position, size = file_region
    assert os.pread(fd, size, position) == expected
    r, w = os.pipe()
    try:
        with pytest.raises(ExternalBytesChanged):
            send_file_region(w, region, 0, size)
    finally:
        os.close(r)
        os.close(w)
    from broker_sim.protocol.records.batch_header import iter_batches

    at = next(pos for pos, h in iter_batches(expected) if h.base_offset == cut)
    now = copied(log.read(0, 1 << 20).records)  # the log itself: the kept batches, then the new ones
    assert now[:at] == expected[:at] and now[at:at + 64] != expected[at:at + 64]
    region.release()
    assert log.segments[0]._retired == []  # the old file closed with its last reader
    assert not (log.dir / f"{0:020d}.log.tmp").exists()


def test_a_range_lost_without_release_lets_go_of_its_segment(open_log: OpenLog) -> None:
    import gc

    log = open_log()
    _fill(log, 10, seed=5)
    segment = log.segments[0]
    region = log.read(0, 1 << 20, zero_copy=True).records
    assert isinstance(region, FileRecords) and segment._readers == 1
    del region
    gc.collect()
    assert segment._readers == 0


def test_a_pinned_segment_swapped_out_by_the_cleaner_stays_readable(open_log: OpenLog) -> None:
    from broker_sim.log.cleaner import clean
    from tests.log.test_cleaner import COMPACT, MAP, fill, seal

    log = open_log(COMPACT)
    fill(log, 20_000, 200)
    seal(log)
    first = log.segments[0]
    region = log.read(0, 1 << 20, zero_copy=True).records
    assert isinstance(region, FileRecords) and region.segment is first
    expected = region.read()
    assert clean(log, 2_000_000, MAP) is not None
    assert first not in log.segments and first.deleted  # swapped out while pinned
    file_region = region.file_region()
    assert file_region is not None  # not released yet
    fd, position, size = file_region
    assert os.pread(fd, size, position) == expected
    assert not region.changed
    region.release()
    assert first._fd == -1
