"""The delay queue of buckets: ordering, due-ness by the injected clock, waking."""

from __future__ import annotations

import threading

from broker_sim.timer import DelayQueue, ManualClock, TaskCounter, TimerTaskList


def _bucket(expiration: int) -> TimerTaskList:
    bucket = TimerTaskList(TaskCounter())
    bucket.set_expiration(expiration)
    return bucket


def test_polls_due_buckets_in_expiration_order_then_offer_order() -> None:
    clock = ManualClock(0)
    queue = DelayQueue(clock)
    b30, b10, b20a, b20b = _bucket(30), _bucket(10), _bucket(20), _bucket(20)
    for b in (b30, b10, b20a, b20b):
        queue.offer(b)
    assert queue.peek_expiration() == 10
    assert queue.poll(0) is None  # nothing due at t=0, and a zero timeout never blocks
    clock.advance(25)
    assert [queue.poll(0) for _ in range(4)] == [b10, b20a, b20b, None]
    clock.advance(5)
    assert queue.poll(0) is b30
    assert len(queue) == 0 and queue.peek_expiration() is None


def test_blocked_poll_wakes_when_the_manual_clock_reaches_the_head() -> None:
    clock = ManualClock(0)
    queue = DelayQueue(clock)
    bucket = _bucket(50)
    queue.offer(bucket)
    waiting = threading.Event()
    got: list[TimerTaskList | None] = []

    def poller() -> None:
        waiting.set()
        got.append(queue.poll(60_000))

    thread = threading.Thread(target=poller, daemon=True)
    thread.start()
    assert waiting.wait(10)
    clock.advance(49)  # wakes the poller, which finds nothing due and waits again
    clock.advance(1)
    thread.join(10)
    assert got == [bucket]


def _wait_until_blocked(queue: DelayQueue) -> None:
    for _ in range(10_000):
        if queue._waiters:  # the poller is inside poll(), waiting on the condition
            return
        threading.Event().wait(0.001)
    raise AssertionError("poller never blocked")


def test_blocked_poll_wakes_for_an_earlier_offer() -> None:
    clock = ManualClock(100)
    queue = DelayQueue(clock)
    queue.offer(_bucket(10_000))
    got: list[TimerTaskList | None] = []
    thread = threading.Thread(target=lambda: got.append(queue.poll(60_000)), daemon=True)
    thread.start()
    _wait_until_blocked(queue)
    due = _bucket(100)  # already due: as the new head it must wake the sleeper
    queue.offer(due)
    thread.join(10)
    assert got == [due]


def test_close_releases_pollers_and_empties_the_queue() -> None:
    clock = ManualClock(0)
    queue = DelayQueue(clock)
    queue.offer(_bucket(10**9))
    started = threading.Event()
    got: list[TimerTaskList | None] = []

    def poller() -> None:
        started.set()
        got.append(queue.poll(60_000))

    thread = threading.Thread(target=poller, daemon=True)
    thread.start()
    assert started.wait(10)
    queue.close()
    thread.join(10)
    assert got == [None] and len(queue) == 0
    assert queue.poll(60_000) is None  # closed: never blocks again
