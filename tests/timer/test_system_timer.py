"""SystemTimer driven by a ManualClock and a synchronous executor: no real waiting."""

from __future__ import annotations

import threading

import pytest

from broker_sim.timer import ManualClock, SystemTimer, TimerTask, TimerTaskList
from tests.timer.timer_helpers import RecordingTask, SyncExecutor, advance_to, manual_timer

HOUR = 3_600_000
# Due times that straddle every level boundary of a 1 ms x 20 wheel, from 1 ms to hours.
DELAYS = [
    1, 2, 19, 20, 21, 399, 400, 401, 7_999, 8_000, 8_001, 159_999, 160_000, 160_001,
    3_199_999, 3_200_001, HOUR, 17 * HOUR + 7, 3 * 24 * HOUR + 5,
]


def bucket_of(task: TimerTask) -> TimerTaskList:
    """The bucket ``task`` is in (it must be in one)."""
    entry = task.timer_task_entry
    assert entry is not None and entry.list is not None, "the task is in no bucket"
    return entry.list


def test_tasks_run_at_their_due_time_in_order_across_all_levels() -> None:
    timer, clock = manual_timer(start_ms=12_345)
    log: list[tuple[object, int]] = []
    start = clock.monotonic_ms()
    tasks = [RecordingTask(d, d, log, clock) for d in reversed(DELAYS)]
    for t in tasks:
        timer.add(t)
    assert timer.size == len(DELAYS)
    assert len(timer.wheel.levels()) >= 6
    for d in sorted(DELAYS):
        advance_to(timer, clock, start + d - 1)
        assert (d, start + d) not in log, f"task due at +{d} ran early"
        advance_to(timer, clock, start + d)
        assert log[-1] == (d, start + d), f"task due at +{d} did not run on time"
    assert [label for label, _ in log] == sorted(DELAYS)
    assert all(t.runs == 1 for t in tasks)
    assert timer.size == 0


def test_one_big_jump_runs_everything_in_due_order() -> None:
    timer, clock = manual_timer()
    log: list[tuple[object, int]] = []
    for d in reversed(DELAYS):
        timer.add(RecordingTask(d, d, log, clock))
    advance_to(timer, clock, 10 * 24 * HOUR)
    assert [label for label, _ in log] == sorted(DELAYS)
    assert timer.size == 0


def test_entry_cascades_from_overflow_wheels_into_finer_ones() -> None:
    timer, clock = manual_timer()
    task = RecordingTask(30_421, "30s", [], clock)
    timer.add(task)
    levels = timer.wheel.levels()

    def where(t: TimerTask) -> tuple[int, int]:
        bucket = bucket_of(t)
        level = next(i for i, w in enumerate(levels) if bucket in w.buckets)
        return level, bucket.expiration

    # Level k has 20 buckets of 20**k ms: the task sits in ever finer buckets.
    assert where(task) == (3, 24_000)
    for now, expected in [(24_000, (2, 30_400)), (30_400, (1, 30_420)), (30_420, (0, 30_421))]:
        advance_to(timer, clock, now - 1)
        assert where(task)[0] == expected[0] + 1  # nothing moves before the bucket is due
        advance_to(timer, clock, now)
        assert where(task) == expected
    assert task.runs == 0 and timer.size == 1
    advance_to(timer, clock, 30_421)
    assert task.runs == 1 and timer.size == 0


@pytest.mark.parametrize("delay", DELAYS)
def test_cancel_at_every_level(delay: int) -> None:
    timer, clock = manual_timer(start_ms=777)
    log: list[tuple[object, int]] = []
    keep = RecordingTask(delay, "keep", log, clock)
    victim = RecordingTask(delay, "victim", log, clock)
    timer.add(keep)
    timer.add(victim)
    entry = victim.timer_task_entry
    bucket = bucket_of(victim)
    assert timer.size == 2 and len(bucket) == 2
    victim.cancel()
    assert entry is not None and entry.list is None and bucket.entries() == [keep.timer_task_entry]
    assert timer.size == 1
    advance_to(timer, clock, 777 + delay)
    assert log == [("keep", 777 + delay)]
    assert timer.size == 0


def test_cancel_after_cascading_and_after_running() -> None:
    timer, clock = manual_timer()
    task = RecordingTask(30_000, "x", [], clock)
    timer.add(task)
    advance_to(timer, clock, 29_990)  # now in a finer bucket
    task.cancel()
    assert timer.size == 0
    advance_to(timer, clock, 40_000)
    assert task.runs == 0
    ran = RecordingTask(5, "ran", [], clock)
    timer.add(ran)
    advance_to(timer, clock, 40_005)
    ran.cancel()  # harmless no-op
    assert ran.runs == 1 and timer.size == 0


def test_bucket_reuse_and_reoffer() -> None:
    timer, clock = manual_timer()
    log: list[tuple[object, int]] = []
    queue = timer.delay_queue
    a = RecordingTask(5, "a", log, clock)
    b = RecordingTask(5, "b", log, clock)
    timer.add(a)
    bucket = bucket_of(a)
    assert len(queue) == 1 and bucket.expiration == 5
    timer.add(b)  # same bucket, same expiration: set_expiration unchanged, not re-offered
    assert bucket_of(b) is bucket and len(queue) == 1
    advance_to(timer, clock, 5)
    assert [x for x, _ in log] == ["a", "b"] and bucket.expiration == -1 and len(queue) == 0
    timer.add(RecordingTask(5, "d", log, clock))  # the wheel's time moves when a bucket expires
    advance_to(timer, clock, 10)
    assert timer.wheel.current_time == 10
    c = RecordingTask(15, "c", log, clock)  # due 25: slot 25 % 20 == 5 again, next round
    timer.add(c)
    assert bucket_of(c) is bucket and bucket.expiration == 25 and len(queue) == 1
    advance_to(timer, clock, 25)
    assert log[-1] == ("c", 25)


def test_emptied_bucket_stays_queued_and_flushes_harmlessly() -> None:
    timer, clock = manual_timer()
    t = RecordingTask(5, "t", [], clock)
    timer.add(t)
    t.cancel()
    assert timer.size == 0 and len(timer.delay_queue) == 1
    advance_to(timer, clock, 5)
    assert t.runs == 0 and len(timer.delay_queue) == 0


@pytest.mark.parametrize("delay", [0, -5])
def test_due_task_runs_immediately_on_add(delay: int) -> None:
    timer, clock = manual_timer(start_ms=50)
    task = RecordingTask(delay, "now", [], clock)
    timer.add(task)
    assert task.runs == 1 and timer.size == 0


def test_readding_a_task_moves_it() -> None:
    timer, clock = manual_timer()
    task = RecordingTask(100, "x", [], clock)
    timer.add(task)
    task.delay_ms = 300
    timer.add(task)
    assert timer.size == 1
    advance_to(timer, clock, 100)
    assert task.runs == 0
    advance_to(timer, clock, 300)
    assert task.runs == 1


def test_advance_clock_reports_whether_buckets_were_processed() -> None:
    timer, clock = manual_timer()
    assert timer.advance_clock(0) is False
    timer.add(RecordingTask(3, "x", [], clock))
    assert timer.advance_clock(0) is False
    clock.advance(3)
    assert timer.advance_clock(0) is True


def test_a_task_may_add_another_task_from_run() -> None:
    timer, clock = manual_timer()
    log: list[tuple[object, int]] = []

    class Chain(TimerTask):
        __slots__ = ("left",)

        def __init__(self, delay_ms: int, left: int) -> None:
            super().__init__(delay_ms)
            self.left = left

        def run(self) -> None:
            log.append(("chain", clock.monotonic_ms()))
            if self.left:
                timer.add(Chain(10, self.left - 1))

    timer.add(Chain(10, 2))
    advance_to(timer, clock, 10)
    advance_to(timer, clock, 20)
    advance_to(timer, clock, 30)
    assert log == [("chain", 10), ("chain", 20), ("chain", 30)]


def test_default_executor_runs_tasks_off_the_advancing_thread() -> None:
    clock = ManualClock()
    timer = SystemTimer("exec-test", clock=clock)
    ran = threading.Event()
    where: list[str] = []

    class Probe(TimerTask):
        __slots__ = ()

        def run(self) -> None:
            where.append(threading.current_thread().name)
            ran.set()

    try:
        timer.add(Probe(10))
        clock.advance(10)
        assert timer.advance_clock(0)
        assert ran.wait(10)
        assert where[0] != threading.current_thread().name
        assert where[0].startswith("exec-test")
    finally:
        timer.shutdown()


def test_shutdown() -> None:
    executor = SyncExecutor()
    clock = ManualClock()
    timer = SystemTimer("t", clock=clock, executor=executor)
    task = RecordingTask(10, "x", [], clock)
    timer.add(task)
    timer.shutdown()
    assert timer.is_shut_down
    with pytest.raises(RuntimeError):
        timer.add(RecordingTask(1, "late", [], clock))
    clock.advance(100)
    assert timer.advance_clock(0) is False
    assert task.runs == 0 and executor.submitted == 0


def test_shutdown_wakes_a_blocked_advance() -> None:
    clock = ManualClock()
    timer = SystemTimer("t", clock=clock, executor=SyncExecutor())
    timer.add(RecordingTask(10, "x", [], clock))
    started = threading.Event()
    result: list[bool] = []

    def reaper() -> None:
        started.set()
        result.append(timer.advance_clock(60_000))  # would block for a minute

    thread = threading.Thread(target=reaper, daemon=True)
    thread.start()
    assert started.wait(10)
    timer.shutdown()
    thread.join(10)
    assert not thread.is_alive() and result == [False]


def test_manual_clock_advance_wakes_a_blocked_advance() -> None:
    clock = ManualClock()
    timer, _ = SystemTimer("t", clock=clock, executor=SyncExecutor()), None
    task = RecordingTask(10, "x", [], clock)
    timer.add(task)
    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(timer.advance_clock(60_000)))
    thread.start()
    clock.advance(10)  # no bucket due before this: the poller must wake for it
    thread.join(10)
    assert not thread.is_alive() and result == [True] and task.runs == 1
    timer.shutdown()
