from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from broker_sim.log import LogSegment
from broker_sim.log.segment import SegmentGone
from broker_sim.protocol.records.batch_header import BatchHeader

Batch = Callable[..., bytes]
Parse = Callable[[bytes], list[BatchHeader]]


def fill(seg: LogSegment, batch: Batch, count: int, per_batch: int = 3, start: int | None = None) -> list[bytes]:
    """Append ``count`` batches of ``per_batch`` records at consecutive offsets."""
    offset = seg.base_offset if start is None else start
    out = []
    for i in range(count):
        b = batch(per_batch, timestamp=1000 + i, value_size=20, base_offset=offset)
        seg.append(offset + per_batch - 1, b)
        out.append(b)
        offset += per_batch
    return out


def test_files_named_by_base_offset(tmp_path: Path) -> None:
    seg = LogSegment(tmp_path, 100, 4096)
    assert (tmp_path / "00000000000000000100.log").exists()
    assert (tmp_path / "00000000000000000100.index").exists()
    assert seg.size == 0 and seg.next_offset == 100 and seg.max_timestamp == -1
    seg.close()


def test_read_every_offset_returns_the_batch_holding_it(tmp_path: Path, batch: Batch, parse: Parse) -> None:
    seg = LogSegment(tmp_path, 100, index_interval_bytes=200)
    batches = fill(seg, batch, 40)
    assert len(seg.index) > 5  # sparse index was written
    assert seg.next_offset == 100 + 120 and seg.size == sum(map(len, batches))
    for offset in range(100, 220):
        data = seg.read(offset, max_bytes=1)  # min_one_batch: exactly the one batch
        (h,) = parse(data)
        assert h.base_offset <= offset <= h.last_offset
        assert data == batches[(offset - 100) // 3]
    assert seg.read(220, 10_000) == b""
    assert seg.read_batches(220, 10_000) == (b"", -1)
    seg.close()


def test_max_bytes_min_one_batch_max_position_max_offset(tmp_path: Path, batch: Batch, parse: Parse) -> None:
    seg = LogSegment(tmp_path, 0, 4096)
    batches = fill(seg, batch, 10)
    size = len(batches[0])
    assert all(len(b) == size for b in batches)
    assert seg.read(0, 3 * size + size // 2) == b"".join(batches[:3])  # whole batches only
    assert seg.read(0, size - 1) == batches[0]  # min_one_batch
    assert seg.read(0, size - 1, min_one_batch=False) == b""
    assert seg.read(4, 10 * size, max_position=3 * size) == b"".join(batches[1:3])
    assert [h.base_offset for h in parse(seg.read(0, 10**6, max_offset=9))] == [0, 3, 6]  # last < 9
    assert [h.base_offset for h in parse(seg.read(0, 10**6, max_offset=8))] == [0, 3]
    assert seg.read_batches(9, 10**6, max_offset=9) == (b"", 9)
    seg.close()


def test_recover_rebuilds_index_and_cuts_torn_tail(tmp_path: Path, batch: Batch) -> None:
    seg = LogSegment(tmp_path, 0, index_interval_bytes=150)
    batches = fill(seg, batch, 30)
    entries = [seg.index.entry(i) for i in range(len(seg.index))]
    size, nxt, max_ts = seg.size, seg.next_offset, seg.max_timestamp
    assert seg.recover() == 0
    assert [seg.index.entry(i) for i in range(len(seg.index))] == entries
    assert (seg.size, seg.next_offset, seg.max_timestamp) == (size, nxt, max_ts)
    seg.close()
    with open(tmp_path / "00000000000000000000.log", "ab") as f:
        f.write(batches[0][:40])  # a torn write
    seg = LogSegment(tmp_path, 0, index_interval_bytes=150)
    assert seg.recover() == 40
    assert seg.size == size and seg.next_offset == nxt
    assert os.path.getsize(seg.log_path) == size
    seg.close()


def test_truncate_to(tmp_path: Path, batch: Batch, parse: Parse) -> None:
    seg = LogSegment(tmp_path, 0, index_interval_bytes=100)
    batches = fill(seg, batch, 10)  # offsets 0..29, 3 per batch
    assert seg.truncate_to(30) == 0
    removed = seg.truncate_to(16)  # batch [15, 17] holds 16: it goes as a whole
    assert removed == 5 * len(batches[0])
    assert seg.next_offset == 15 and seg.size == 5 * len(batches[0])
    assert seg.index.last_entry[1] < seg.size
    assert parse(seg.read(14, 10**6))[-1].last_offset == 14
    assert seg.max_timestamp == 1004
    fill(seg, batch, 2, start=15)  # appends continue at the new end
    assert seg.next_offset == 21 and parse(seg.read(20, 100))[0].base_offset == 18
    seg.close()


def test_delete_while_reading_is_safe(tmp_path: Path, batch: Batch) -> None:
    seg = LogSegment(tmp_path, 0, 4096)
    fill(seg, batch, 3)
    seg._acquire()  # a reader in flight
    seg.delete()
    assert not seg.log_path.exists() and not seg.index_path.exists()
    assert seg._fd >= 0  # still open for the in-flight reader
    seg._release()
    assert seg._fd == -1
    with pytest.raises(SegmentGone):
        seg.read(0, 100)


def test_find_timestamp_and_max_timestamp(tmp_path: Path, batch: Batch) -> None:
    seg = LogSegment(tmp_path, 0, 4096)
    fill(seg, batch, 5)  # batch i has timestamp 1000 + i
    found = seg.find_timestamp(1003)
    assert found is not None
    pos, h = found
    assert h.base_offset == 9 and h.max_timestamp == 1003
    assert seg.find_timestamp(2000) is None
    assert seg.find_timestamp(1003, max_offset=9) is None
    assert seg.max_timestamp == 1004 and seg.max_timestamp_position == 4 * h.size
    seg.close()
    again = LogSegment(tmp_path, 0, 4096)  # not recovered: computed lazily by a scan
    assert again.max_timestamp == 1004 and again.next_offset == 15
    again.close()


def test_read_matches_a_naive_reference(tmp_path: Path, batch: Batch) -> None:
    """Random reads (offset, max_bytes, max_offset, min_one_batch) against a linear scan."""
    rng = random.Random(1)
    seg = LogSegment(tmp_path, 1000, index_interval_bytes=300)
    stored: list[tuple[int, bytes]] = []  # (last offset, batch)
    offset = 1000
    for _ in range(150):
        n = rng.randint(1, 5)
        b = batch(n, value_size=rng.randint(0, 200), base_offset=offset)
        seg.append(offset + n - 1, b)
        stored.append((offset + n - 1, b))
        offset += n

    def reference(start: int, max_bytes: int, max_offset: int | None, min_one: bool) -> bytes:
        out = b""
        for last, b in stored:
            if last < start:
                continue
            if max_offset is not None and last >= max_offset:
                break
            if len(out) + len(b) > max_bytes and not (min_one and not out):
                break
            out += b
            if len(out) > max_bytes:
                break
        return out

    def check(s: LogSegment) -> None:
        for _ in range(1500):
            start = rng.randint(995, offset + 1)
            max_bytes = rng.choice([0, 50, 500, 2000, 10**6]) + rng.randint(0, 300)
            max_offset = rng.choice([None, rng.randint(1000, offset + 3)])
            min_one = rng.random() < 0.8
            got = s.read(start, max_bytes, min_one_batch=min_one, max_offset=max_offset)
            assert got == reference(start, max_bytes, max_offset, min_one), (start, max_bytes, max_offset, min_one)

    check(seg)
    seg.close()
    reopened = LogSegment(tmp_path, 1000, index_interval_bytes=300)  # lazily loaded state
    assert reopened.load_index()
    check(reopened)
    reopened.close()
