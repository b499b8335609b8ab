"""The queue of *buckets* (not entries) that drives a timer, ordered by bucket expiration."""

from __future__ import annotations

import heapq
import itertools
import threading
import time

from ..common.clock import Clock
from .timer_task_list import TimerTaskList


class DelayQueue:
    """A blocking priority queue of :class:`TimerTaskList` buckets keyed by expiration.

    This is what makes the timer cheap when idle: the thread that advances the timer
    sleeps in :meth:`poll` until the *earliest bucket* is due (or its timeout elapses)
    instead of waking on every tick. It holds at most one record per bucket (a few dozen
    per wheel level), never one per task, so its O(log n) heap operations are on a tiny n.

    Time has two roles here. Whether a bucket is due is decided by the injected
    :class:`~broker_sim.common.Clock`, so a test with a :class:`~broker_sim.common.ManualClock` controls expiry
    exactly. How long :meth:`poll` may block is real time (``timeout_ms`` of wall-clock
    waiting), so a manual clock that nobody advances cannot hang a caller; ``poll(0)``
    never blocks. A manual clock wakes blocked pollers whenever it is advanced.

    Invariants: each record is ``(expiration, seq, bucket)`` with ``expiration`` the
    bucket's expiration at offer time (``seq`` breaks ties in offer order, so buckets are
    never compared); the timer offers a bucket only when ``set_expiration`` reports a
    change, and a bucket's expiration only changes again after it has been polled and
    flushed, so a record's key always equals its bucket's expiration while queued.

    Threading contract: all methods may be called from any thread; the heap is guarded by
    ``_lock``, and blocked pollers wait on a condition of that lock, which :meth:`offer`
    notifies when the head changes and a manual clock's listener when time moves (both
    only if someone is waiting, to keep the non-blocking path cheap).
    """

    __slots__ = ("_clock", "_heap", "_lock", "_cond", "_seq", "_closed", "_waiters")

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._heap: list[tuple[int, int, TimerTaskList]] = []
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._seq = itertools.count()
        self._closed = False
        self._waiters = 0  # pollers blocked (or about to block) in poll(); under _lock
        add_listener = getattr(clock, "add_listener", None)
        if add_listener is not None:
            add_listener(self._wake)

    def _wake(self) -> None:
        # Called after a manual clock moved. A poller increments _waiters before it reads
        # the clock, so if we read 0 here, any poller yet to come will see the new time.
        if self._waiters:
            with self._cond:
                self._cond.notify_all()

    def offer(self, bucket: TimerTaskList) -> None:
        """Queue ``bucket`` under its current expiration."""
        with self._lock:
            heap = self._heap
            record = (bucket.expiration, next(self._seq), bucket)
            heapq.heappush(heap, record)
            if heap[0] is record and self._waiters:
                self._cond.notify_all()

    def poll(self, timeout_ms: float = 0) -> TimerTaskList | None:
        """Remove and return the earliest bucket once it is due, else None after the timeout.

        Blocks for at most ``timeout_ms`` milliseconds of real time, sleeping until the
        earliest bucket is due rather than polling. ``timeout_ms <= 0`` never blocks.
        """
        clock = self._clock
        heap = self._heap
        with self._lock:
            if heap and heap[0][0] <= clock.monotonic_ms():
                return heapq.heappop(heap)[2]
            if timeout_ms <= 0 or self._closed:
                return None
            deadline = time.monotonic() + timeout_ms / 1000.0
            self._waiters += 1
            try:
                while True:
                    due_in_ms: int | None = None
                    if heap:
                        due_in_ms = heap[0][0] - clock.monotonic_ms()
                        if due_in_ms <= 0:
                            return heapq.heappop(heap)[2]
                    if self._closed:
                        return None
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return None
                    if due_in_ms is not None:
                        remaining = min(remaining, due_in_ms / 1000.0)
                    self._cond.wait(remaining)
            finally:
                self._waiters -= 1

    def peek_expiration(self) -> int | None:
        """Expiration of the earliest bucket, or None if the queue is empty."""
        with self._lock:
            return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        return len(self._heap)

    def close(self) -> None:
        """Wake every blocked poller, make future polls non-blocking, drop all buckets."""
        with self._cond:
            self._closed = True
            self._heap.clear()
            self._cond.notify_all()
        remove_listener = getattr(self._clock, "remove_listener", None)
        if remove_listener is not None:
            remove_listener(self._wake)
