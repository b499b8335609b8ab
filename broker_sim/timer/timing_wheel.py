"""Hierarchical timing wheels: O(1) insertion and removal of timer entries."""

from __future__ import annotations

import threading

from .delay_queue import DelayQueue
from .task_counter import TaskCounter
from .timer_task_list import TimerTaskEntry, TimerTaskList


class TimingWheel:
    """A circular array of ``wheel_size`` buckets, each covering ``tick_ms`` milliseconds.

    The wheel spans ``interval = tick_ms * wheel_size`` from ``current_time`` (always a
    multiple of ``tick_ms``). An entry due at ``e`` with
    ``current_time + tick_ms <= e < current_time + interval`` goes into bucket
    ``(e // tick_ms) % wheel_size``, whose expiration becomes ``(e // tick_ms) * tick_ms``;
    an entry due before ``current_time + tick_ms`` is already expired (``add`` returns
    False and the caller runs it). An entry beyond the span goes to the *overflow wheel*,
    created on first use, whose tick is this wheel's whole interval and whose start is this
    wheel's current time; overflow wheels chain, so level ``k`` has tick
    ``tick_ms * wheel_size ** k`` and n levels cover ``tick_ms * wheel_size ** n``
    (1 ms x 20 slots: 20 ms, 400 ms, 8 s, 160 s, 53 min, 17.8 h, ...).

    Only buckets go into the :class:`~.delay_queue.DelayQueue`, once per round: a bucket
    is offered when its expiration changes (it was empty, or holds a new round). When the
    queue hands back a due bucket, the timer advances the wheels to its expiration and
    flushes it, re-adding every entry: an entry from an overflow wheel thereby *cascades*
    into a finer wheel (its bucket there is due later, at finer precision), and one that
    is now within the finest tick runs. Each entry cascades at most once per level, so the
    cost of an entry is O(levels) in the worst case and O(1) when it is cancelled early,
    which is the purgatory's common case: cancel unlinks it from its bucket, and nothing
    about it remains.

    Worked example (``tick_ms=1``, ``wheel_size=4``, start 0). Level 0 covers [0, 4) with
    1 ms buckets; level 1 (tick 4) covers [0, 16); level 2 (tick 16) covers [0, 64)::

        t=0  add due 2   -> level 0, slot 2, bucket expiration 2    (offered: 2)
             add due 5   -> 5 >= 0+4: level 1, slot 5//4%4=1, exp 4  (offered: 4)
             add due 17  -> 17 >= 0+16: level 2, slot 1, exp 16    (offered: 16)
             add due 30  -> level 2, slot 30//16%4=1, exp 16       (same bucket and
                            expiration: set_expiration is False, not offered again)
             delay queue: [2: L0s2, 4: L1s1, 16: L2s1]
        t=2  poll -> L0s2. Advance: level 0 current_time=2 (level 1 stays 0: 2 < 0+4).
             Flush: entry 2 < 2+1 is expired -> run it. L0s2 is free (expiration -1).
        t=4  poll -> L1s1. Advance: level 0 -> 4, level 1 -> 4 (level 2 stays 0).
             Flush: entry 5 -> level 0 (5 < 4+4), slot 1, exp 5 (offered: 5).
        t=5  poll -> L0s1, run entry 5. L0s1 is free again.
        t=16 poll -> L2s1. Advance all three levels to 16. Flush: entry 17 -> level 0,
             slot 1 (L0s1 reused: its expiration changes -1 -> 17, so it is re-offered);
             entry 30 -> level 1 (30 >= 16+4, 30 < 16+16), slot 7%4=3, exp 28.
        t=17 run entry 17.  t=28 flush L1s3: entry 30 -> level 0, slot 2, exp 30.
        t=30 run entry 30.

    Threading contract: :meth:`add` and :meth:`advance_clock` must be called with
    ``lock`` held (the owning timer's lock, shared with every bucket of every level; see
    ``SystemTimer``), so ``current_time`` never changes under an add and the lazy creation
    of an overflow wheel needs no lock of its own. Cancels unlink entries from buckets
    under the same lock from any thread.
    """

    __slots__ = (
        "tick_ms",
        "wheel_size",
        "interval",
        "_current_time",
        "_tick_end",
        "_span_end",
        "_buckets",
        "_counter",
        "_queue",
        "_lock",
        "_overflow",
    )

    def __init__(
        self,
        tick_ms: int,
        wheel_size: int,
        start_ms: int,
        task_counter: TaskCounter,
        queue: DelayQueue,
        lock: threading.RLock | None = None,
    ) -> None:
        if tick_ms < 1 or wheel_size < 2:
            raise ValueError("tick_ms must be >= 1 and wheel_size >= 2")
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self.interval = tick_ms * wheel_size
        self._lock = lock if lock is not None else threading.RLock()
        self._buckets = [TimerTaskList(task_counter, self._lock) for _ in range(wheel_size)]
        self._counter = task_counter
        self._queue = queue
        self._overflow: TimingWheel | None = None
        self._set_current_time(start_ms - start_ms % tick_ms)

    def _set_current_time(self, current_time: int) -> None:
        # The two bounds are cached because add() compares against them on every level.
        self._current_time = current_time
        self._tick_end = current_time + self.tick_ms
        self._span_end = current_time + self.interval

    @property
    def current_time(self) -> int:
        """Start of the current tick: a multiple of ``tick_ms``, never decreasing."""
        return self._current_time

    @property
    def overflow_wheel(self) -> TimingWheel | None:
        """The next-coarser wheel, if it has been needed yet."""
        return self._overflow

    @property
    def buckets(self) -> tuple[TimerTaskList, ...]:
        return tuple(self._buckets)

    def _add_overflow_wheel(self) -> TimingWheel:
        overflow = self._overflow
        if overflow is None:
            overflow = TimingWheel(
                self.interval,
                self.wheel_size,
                self._current_time,
                self._counter,
                self._queue,
                self._lock,
            )
            self._overflow = overflow
        return overflow

    def add(self, entry: TimerTaskEntry) -> bool:
        """Link ``entry`` into the right bucket of this wheel or of an overflow wheel.

        Returns False, linking nothing, if the entry is cancelled or already expired
        (due before ``current_time + tick_ms``); the caller then runs it unless cancelled.
        Kafka recurses into the overflow wheel, checking expiry on every level; this walks
        the levels in a loop and checks once, which is equivalent because each coarser
        level's current time is this level's rounded down to its tick (see
        :meth:`advance_clock`), so an entry past this wheel's span is never expired there.
        """
        expiration = entry.expiration_ms
        if expiration < self._tick_end or entry.task._entry is not entry:  # type: ignore[union-attr]  # an added entry carries a task (only a root has none)
            return False
        wheel = self
        while expiration >= wheel._span_end:
            overflow = wheel._overflow
            wheel = overflow if overflow is not None else wheel._add_overflow_wheel()
        tick = wheel.tick_ms
        virtual_id = expiration // tick
        bucket = wheel._buckets[virtual_id % wheel.wheel_size]
        # TimerTaskList.add_locked, inlined: one Python call less per add (the caller holds
        # the lock all buckets share). A re-added entry is unlinked from its bucket first.
        if entry.list is not None:
            entry.remove()
        root = bucket._root
        tail = root.prev
        entry.next = root
        entry.prev = tail
        entry.list = bucket
        tail.next = entry  # type: ignore[union-attr]  # a linked entry's next/prev are never None (the root links to itself)
        root.prev = entry
        bucket._size += 1
        # A changed expiration means the bucket was free (its previous round was flushed):
        # offer it to the delay queue for this round. (The first test skips a call.)
        expiration = virtual_id * tick
        if bucket.expiration != expiration and bucket.set_expiration(expiration):
            wheel._queue.offer(bucket)
        return True

    def advance_clock(self, time_ms: int) -> None:
        """Move this wheel, and in turn its overflow wheels, up to ``time_ms``.

        A level's current time moves only by whole ticks, and a coarser level moves only
        when the finer one below it does; so level k+1's current time is always level k's
        rounded down to level k+1's tick.
        """
        wheel: TimingWheel | None = self
        while wheel is not None and time_ms >= wheel._tick_end:
            wheel._set_current_time(time_ms - time_ms % wheel.tick_ms)
            wheel = wheel._overflow

    def levels(self) -> list[TimingWheel]:
        """This wheel followed by its overflow wheels, finest first."""
        out: list[TimingWheel] = []
        wheel: TimingWheel | None = self
        while wheel is not None:
            out.append(wheel)
            wheel = wheel._overflow
        return out
