"""The wheel on its own: placement, overflow wheels, expiry, and the docstring's example."""

from __future__ import annotations

import pytest

from broker_sim.timer import (
    DelayQueue,
    ManualClock,
    TaskCounter,
    TimerTaskEntry,
    TimerTaskList,
    TimingWheel,
)
from tests.timer.timer_helpers import RecordingTask


def _wheel(tick: int = 1, size: int = 4, start: int = 0) -> tuple[TimingWheel, DelayQueue, ManualClock]:
    clock = ManualClock(start)
    queue = DelayQueue(clock)
    return TimingWheel(tick, size, start, TaskCounter(), queue), queue, clock


def _entry(due: int, label: object = None) -> TimerTaskEntry:
    return TimerTaskEntry(RecordingTask(0, label if label is not None else due, [], ManualClock()), due)


def _level_and_slot(wheel: TimingWheel, entry: TimerTaskEntry) -> tuple[int, int]:
    for level, w in enumerate(wheel.levels()):
        for slot, bucket in enumerate(w.buckets):
            if entry.list is bucket:
                return level, slot
    raise AssertionError("entry is in no bucket")


def _bucket(entry: TimerTaskEntry) -> TimerTaskList:
    assert entry.list is not None, "entry is in no bucket"
    return entry.list


def test_geometry() -> None:
    wheel, _, _ = _wheel(tick=2, size=10, start=7)
    assert wheel.interval == 20
    assert wheel.current_time == 6  # rounded down to a tick
    assert wheel.overflow_wheel is None
    with pytest.raises(ValueError):
        TimingWheel(0, 10, 0, TaskCounter(), DelayQueue(ManualClock()))


def test_docstring_worked_example() -> None:
    wheel, queue, clock = _wheel()
    e2, e5, e17, e30 = (_entry(d) for d in (2, 5, 17, 30))
    assert all(wheel.add(e) for e in (e2, e5, e17, e30))
    assert _level_and_slot(wheel, e2) == (0, 2)
    assert _level_and_slot(wheel, e5) == (1, 1)
    assert _level_and_slot(wheel, e17) == (2, 1)
    assert _level_and_slot(wheel, e30) == (2, 1)  # same bucket, offered once
    assert [(w.tick_ms, w.interval) for w in wheel.levels()] == [(1, 4), (4, 16), (16, 64)]
    assert len(queue) == 3
    assert [_bucket(e).expiration for e in (e2, e5, e17)] == [2, 4, 16]

    ran: list[int] = []

    def reinsert(e: TimerTaskEntry) -> None:
        if not wheel.add(e):
            ran.append(e.expiration_ms)

    def expire_until(t: int) -> None:
        clock.advance(t - clock.monotonic_ms())
        while (bucket := queue.poll(0)) is not None:
            wheel.advance_clock(bucket.expiration)
            bucket.flush(reinsert)

    expire_until(2)
    assert ran == [2]
    assert [w.current_time for w in wheel.levels()] == [2, 0, 0]
    expire_until(4)
    assert [w.current_time for w in wheel.levels()] == [4, 4, 0]
    assert _level_and_slot(wheel, e5) == (0, 1) and _bucket(e5).expiration == 5
    expire_until(5)
    assert ran == [2, 5]
    l0s1 = wheel.buckets[1]
    assert l0s1.expiration == -1  # free again
    expire_until(16)
    assert [w.current_time for w in wheel.levels()] == [16, 16, 16]
    assert e17.list is l0s1 and l0s1.expiration == 17  # bucket reused for a new round
    assert _level_and_slot(wheel, e30) == (1, 3) and _bucket(e30).expiration == 28
    expire_until(17)
    assert ran == [2, 5, 17]
    expire_until(28)
    assert _level_and_slot(wheel, e30) == (0, 2) and _bucket(e30).expiration == 30
    expire_until(29)
    assert ran == [2, 5, 17]
    expire_until(30)
    assert ran == [2, 5, 17, 30]
    assert len(queue) == 0


def test_expired_or_cancelled_entries_are_refused() -> None:
    wheel, queue, _ = _wheel(start=100)
    assert not wheel.add(_entry(100))  # due within the current tick
    assert not wheel.add(_entry(50))
    e = _entry(101)
    assert e.task is not None
    e.task.cancel()  # the task no longer points at e
    assert e.cancelled and not wheel.add(e)
    assert len(queue) == 0


def test_overflow_wheel_is_created_lazily_from_the_current_time() -> None:
    wheel, _, _ = _wheel(tick=1, size=20, start=1_000_005)
    assert wheel.add(_entry(1_000_010))
    assert wheel.overflow_wheel is None
    assert wheel.add(_entry(1_000_005 + 20))
    overflow = wheel.overflow_wheel
    assert overflow is not None
    assert (overflow.tick_ms, overflow.interval, overflow.current_time) == (20, 400, 1_000_000)
    assert wheel.add(_entry(1_000_005 + 3_600_000))  # an hour: several levels up
    assert [w.tick_ms for w in wheel.levels()] == [1, 20, 400, 8_000, 160_000, 3_200_000]


def test_advance_clock_moves_coarser_levels_only_by_whole_ticks() -> None:
    wheel, _, _ = _wheel(tick=1, size=4)
    wheel.add(_entry(60))
    levels = wheel.levels()
    wheel.advance_clock(3)
    assert [w.current_time for w in levels] == [3, 0, 0]
    wheel.advance_clock(2)  # never backwards
    assert [w.current_time for w in levels] == [3, 0, 0]
    wheel.advance_clock(37)
    assert [w.current_time for w in levels] == [37, 36, 32]


def test_bucket_reuse_reoffers_only_on_a_changed_expiration() -> None:
    wheel, queue, clock = _wheel(tick=1, size=4)
    a, b = _entry(3), _entry(3, "b")
    wheel.add(a)
    wheel.add(b)
    assert len(queue) == 1  # second add: same expiration, not offered again
    assert queue.poll(0) is None  # not due yet
    clock.advance(3)
    bucket = queue.poll(0)
    assert bucket is not None and bucket is a.list
    wheel.advance_clock(3)
    bucket.flush(lambda e: None)
    assert bucket.expiration == -1
    wheel.advance_clock(4)  # the span is now [4, 8)
    c = _entry(7)  # slot 7 % 4 == 3: the same bucket, next round
    wheel.add(c)
    assert c.list is bucket and bucket.expiration == 7
    assert len(queue) == 1


def test_list_lock_is_shared_by_all_levels() -> None:
    wheel, _, _ = _wheel()
    wheel.add(_entry(1_000))
    locks = {id(b.lock) for w in wheel.levels() for b in w.buckets}
    assert len(locks) == 1
    assert isinstance(wheel.buckets[0], TimerTaskList)
