from __future__ import annotations

import os
from pathlib import Path

import pytest

from broker_sim.log import CorruptIndex, OffsetIndex


def test_lookup_finds_largest_entry_at_or_below(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "00000000000000000100.index", 100)
    assert idx.lookup(100) == 0 and idx.lookup(5000) == 0  # empty: the segment start
    for i in range(1, 50):
        idx.append(100 + 10 * i, 1000 * i)
    assert idx.lookup(99) == 0
    assert idx.lookup(109) == 0
    assert idx.lookup(110) == 1000
    assert idx.lookup(119) == 1000
    assert idx.lookup(120) == 2000
    assert idx.lookup(10**9) == 49000
    assert idx.lookup_entry(255) == (250, 15000)
    assert len(idx) == 49 and idx.last_entry == (590, 49000)
    # every offset: binary search agrees with a linear scan
    entries = [idx.entry(i) for i in range(len(idx))]
    for off in range(90, 700):
        expected = max((p for o, p in entries if o <= off), default=0)
        assert idx.lookup(off) == expected
    idx.close()


def test_entries_must_increase(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "a.index", 0)
    idx.append(5, 100)
    with pytest.raises(ValueError):
        idx.append(5, 200)
    with pytest.raises(ValueError):
        idx.append(6, 100)
    with pytest.raises(ValueError):
        idx.append(2**31, 300)  # relative offset does not fit int32
    idx.close()


def test_on_disk_format_and_reload(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    idx = OffsetIndex(path, 100)
    idx.append(105, 4120)
    idx.flush()
    assert path.read_bytes() == bytes.fromhex("00000005 00001018")
    for i in range(1, 1200):  # more than one buffered group
        idx.append(105 + i, 4120 + 100 * i)
    idx.close()
    assert path.stat().st_size == 1200 * 8
    again = OffsetIndex(path, 100)
    assert len(again) == 1200 and again.lookup(700) == 4120 + 100 * 595
    again.sanity_check(10**9)
    again.close()


def test_torn_trailing_entry_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    idx = OffsetIndex(path, 0)
    idx.append(1, 10)
    idx.append(2, 20)
    idx.close()
    with open(path, "ab") as f:
        f.write(b"\x00\x00\x00")
    idx = OffsetIndex(path, 0)
    assert len(idx) == 2 and path.stat().st_size == 16
    idx.close()


def test_truncate_to_and_reset(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    idx = OffsetIndex(path, 0)
    for i in range(1, 11):
        idx.append(10 * i, 100 * i)
    idx.flush()
    idx.truncate_to(55)  # removes entries with offset >= 55
    assert idx.last_entry == (50, 500) and len(idx) == 5
    assert path.stat().st_size == 5 * 8
    idx.truncate_to(50)
    assert idx.last_entry == (40, 400)
    idx.append(45, 450)  # appending continues after truncation
    assert idx.lookup(47) == 450
    idx.reset()
    assert len(idx) == 0 and path.stat().st_size == 0 and idx.lookup(47) == 0
    idx.close()


def test_sanity_check(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "x.index", 0)
    idx.append(1, 100)
    idx.sanity_check(101)
    with pytest.raises(CorruptIndex):
        idx.sanity_check(100)  # points at the end of the log
    idx.close()
    # an out-of-order file written by someone else
    path = tmp_path / "y.index"
    path.write_bytes(bytes.fromhex("00000005 00000010 00000003 00000020"))
    bad = OffsetIndex(path, 0)
    with pytest.raises(CorruptIndex):
        bad.sanity_check(1000)
    bad.delete()
    assert not os.path.exists(path)
