"""Buckets: O(1) linking and unlinking, flush, expiration changes, the shared counter."""

from __future__ import annotations

from broker_sim.timer import ManualClock, TaskCounter, TimerTaskEntry, TimerTaskList
from tests.timer.timer_helpers import RecordingTask


def _task(delay: int = 10, label: object = "t") -> RecordingTask:
    return RecordingTask(delay, label, [], ManualClock())


def test_add_links_in_order_and_counts() -> None:
    counter = TaskCounter()
    bucket = TimerTaskList(counter)
    entries = [TimerTaskEntry(_task(label=i), 5) for i in range(5)]
    for e in entries:
        bucket.add(e)
    assert bucket.entries() == entries
    assert all(e.list is bucket for e in entries)
    assert len(bucket) == 5
    assert counter.get() == 5


def test_remove_middle_head_tail_is_o1_unlink() -> None:
    counter = TaskCounter()
    bucket = TimerTaskList(counter)
    entries = [TimerTaskEntry(_task(label=i), 5) for i in range(5)]
    for e in entries:
        bucket.add(e)
    bucket.remove(entries[2])
    bucket.remove(entries[0])
    bucket.remove(entries[4])
    assert bucket.entries() == [entries[1], entries[3]]
    assert entries[2].list is None and entries[0].list is None
    assert counter.get() == 2
    bucket.remove(entries[2])  # not linked any more: no-op
    assert counter.get() == 2


def test_remove_from_another_bucket_is_a_no_op() -> None:
    counter = TaskCounter()
    a, b = TimerTaskList(counter), TimerTaskList(counter)
    e = TimerTaskEntry(_task(), 5)
    a.add(e)
    b.remove(e)
    assert e.list is a and counter.get() == 1


def test_adding_to_another_bucket_moves_the_entry() -> None:
    counter = TaskCounter()
    a, b = TimerTaskList(counter), TimerTaskList(counter)
    e = TimerTaskEntry(_task(), 5)
    a.add(e)
    b.add(e)
    assert a.entries() == [] and b.entries() == [e]
    assert (len(a), len(b), counter.get()) == (0, 1, 1)


def test_task_cancel_unlinks_its_entry() -> None:
    counter = TaskCounter()
    bucket = TimerTaskList(counter)
    task = _task()
    e = TimerTaskEntry(task, 5)
    bucket.add(e)
    assert task.timer_task_entry is e and not e.cancelled
    task.cancel()
    assert e.cancelled and e.list is None and bucket.entries() == []
    assert counter.get() == 0
    task.cancel()  # idempotent


def test_new_entry_for_a_task_replaces_and_unlinks_the_old_one() -> None:
    counter = TaskCounter()
    bucket = TimerTaskList(counter)
    task = _task()
    old = TimerTaskEntry(task, 5)
    bucket.add(old)
    new = TimerTaskEntry(task, 7)
    assert old.cancelled and old.list is None
    assert not new.cancelled and task.timer_task_entry is new
    assert counter.get() == 0


def test_flush_hands_over_every_entry_in_order_and_frees_the_bucket() -> None:
    counter = TaskCounter()
    bucket = TimerTaskList(counter)
    assert bucket.set_expiration(40)
    entries = [TimerTaskEntry(_task(label=i), 40) for i in range(4)]
    for e in entries:
        bucket.add(e)
    seen: list[TimerTaskEntry] = []

    def collect(e: TimerTaskEntry) -> None:
        assert e.list is None  # already unlinked when handed over
        seen.append(e)

    bucket.flush(collect)
    assert seen == entries
    assert bucket.entries() == [] and len(bucket) == 0 and counter.get() == 0
    assert bucket.expiration == -1


def test_flush_callback_may_re_add_to_another_bucket_of_the_same_lock() -> None:
    counter = TaskCounter()
    a = TimerTaskList(counter)
    b = TimerTaskList(counter, a.lock)
    for i in range(3):
        a.add(TimerTaskEntry(_task(label=i), 1))
    a.flush(b.add)
    assert len(a) == 0 and len(b) == 3 and counter.get() == 3


def test_set_expiration_reports_only_changes() -> None:
    bucket = TimerTaskList(TaskCounter())
    assert bucket.expiration == -1
    assert bucket.set_expiration(20) is True
    assert bucket.set_expiration(20) is False
    assert bucket.set_expiration(40) is True
    bucket.flush(lambda e: None)
    assert bucket.expiration == -1
    assert bucket.set_expiration(40) is True  # reused for a new round: offer again


def test_counter_sums_its_stripes() -> None:
    counter = TaskCounter()
    buckets = [TimerTaskList(counter) for _ in range(3)]
    for i, bucket in enumerate(buckets):
        for _ in range(i + 1):
            bucket.add(TimerTaskEntry(_task(), 1))
    assert counter.get() == 6
