"""The timer the broker uses: hierarchical wheels driven by a delay queue of buckets."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Executor, ThreadPoolExecutor

from ..common.clock import SYSTEM_CLOCK, Clock
from .delay_queue import DelayQueue
from .task_counter import TaskCounter
from .timer_task import TimerTask
from .timer_task_list import TimerTaskEntry, TimerTaskList
from .timing_wheel import TimingWheel

log = logging.getLogger(__name__)


class SystemTimer:
    """Runs each added :class:`~.timer_task.TimerTask` ``delay_ms`` after it was added.

    Structure (as Kafka's ``SystemTimer``): a :class:`~.timing_wheel.TimingWheel` of
    ``wheel_size`` buckets of ``tick_ms`` (with lazily created overflow wheels) holds the
    entries; a :class:`~.delay_queue.DelayQueue` holds the non-empty buckets. Adding and
    cancelling are O(1); nothing happens per tick: :meth:`advance_clock` sleeps in the delay
    queue until the earliest bucket is due, advances the wheels to it and flushes it,
    re-adding each entry, which either cascades into a finer bucket or, being due, is handed
    to the executor. Expiry precision is ``tick_ms``: a task runs once the clock has
    reached the start of its due tick, so with the default 1 ms tick it runs at its due
    millisecond or later, never early (with a coarser tick, up to a tick early, as Kafka).

    Due tasks run on ``executor`` (a one-thread ``ThreadPoolExecutor`` named after
    ``executor_name`` by default), never inline on the thread calling :meth:`add` or
    :meth:`advance_clock`, so a slow task cannot stall the timer. A test may inject a
    synchronous executor; tasks are submitted only after the timer's lock is released, so
    a task may even call :meth:`add` from within ``run``.

    Threading contract. Kafka uses a read/write lock (``add`` takes the read side so adds
    run in parallel; ``advanceClock`` the write side so no add sees the wheels'
    ``current_time`` move or a bucket half-flushed) plus a monitor per bucket and per
    entry for cancels. Under CPython's GIL adds cannot run in parallel anyway, and each
    pure-Python lock round trip costs about as much as the rest of an add, so the
    equivalent here is a single reentrant lock, ``_lock``, shared by the timer, its wheels
    and all their buckets. :meth:`add` holds it for entry creation and insertion; the
    flush part of :meth:`advance_clock` holds it while advancing the wheels and
    re-inserting (so, as with the write lock, an add never interleaves with an advance);
    ``TimerTask.cancel`` holds it to unlink its entry. One add plus one cancel thus costs
    two lock round trips instead of Kafka's five monitor/lock operations. The blocking
    wait in the delay queue happens *without* ``_lock``, so an idle reaper never delays an
    add or a cancel. Lock order: ``_lock`` -> delay-queue condition, never the reverse.

    :attr:`size` is the exact number of linked entries: cancelled tasks are unlinked at
    once, so it counts only tasks still waiting to run (the one exception is a cancel that
    races with the add of the same task; see ``TimerTask``).
    """

    def __init__(
        self,
        executor_name: str,
        tick_ms: int = 1,
        wheel_size: int = 20,
        clock: Clock | None = None,
        executor: Executor | None = None,
    ) -> None:
        self.executor_name = executor_name
        self._clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self._now = self._clock.monotonic_ms
        self._counter = TaskCounter()
        self._queue = DelayQueue(self._clock)
        self._lock = threading.RLock()
        self._wheel = TimingWheel(
            tick_ms, wheel_size, self._now(), self._counter, self._queue, self._lock
        )
        self._owns_executor = executor is None
        self._executor: Executor = (
            executor
            if executor is not None
            else ThreadPoolExecutor(max_workers=1, thread_name_prefix=executor_name)
        )
        self._shut_down = False

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def wheel(self) -> TimingWheel:
        """The finest wheel (its overflow wheels hang off it)."""
        return self._wheel

    @property
    def delay_queue(self) -> DelayQueue:
        return self._queue

    def add(self, task: TimerTask) -> None:
        """Schedule ``task`` to run ``task.delay_ms`` from now (at once if that is <= 0)."""
        lock = self._lock
        lock.acquire()
        try:
            if self._shut_down:
                raise RuntimeError(f"timer {self.executor_name!r} is shut down")
            delay = task.delay_ms
            entry = TimerTaskEntry(task, delay + self._now())
            # A task due now runs now, even if the wheel's time lags the clock (it only
            # moves when a bucket expires, so after an idle spell the wheel would file
            # the task in a bucket that is already due, to run on the next advance).
            if delay > 0 and self._wheel.add(entry):
                return
        finally:
            lock.release()
        if not entry.cancelled:  # already due: run it now (on the executor)
            self._submit(task)

    def advance_clock(self, timeout_ms: float) -> bool:
        """Wait up to ``timeout_ms`` (real time) for a due bucket; process every due bucket.

        Returns True if at least one bucket was flushed. ``timeout_ms=0`` never blocks.
        """
        bucket = self._queue.poll(timeout_ms)
        if bucket is None:
            return False
        due: list[TimerTask] = []
        wheel = self._wheel

        def reinsert(entry: TimerTaskEntry) -> None:
            if not wheel.add(entry) and not entry.cancelled:
                due.append(entry.task)  # type: ignore[arg-type]  # not cancelled implies a task

        queue = self._queue
        with self._lock:
            current: TimerTaskList | None = bucket
            while current is not None:
                wheel.advance_clock(current.expiration)
                current.flush(reinsert)
                current = queue.poll(0)
        for task in due:
            self._submit(task)
        return True

    def _submit(self, task: TimerTask) -> None:
        if self._shut_down:
            return
        try:
            self._executor.submit(_run_task, task)
        except RuntimeError:  # executor shut down concurrently with shutdown()
            log.debug("timer %s dropped a due task after shutdown", self.executor_name)

    @property
    def size(self) -> int:
        """Number of tasks waiting in the timer (added, neither run nor cancelled).

        Exact: summed under the timer's lock, so no add, cancel or flush is half done.
        """
        with self._lock:
            return self._counter.get()

    def __len__(self) -> int:
        return self.size

    def shutdown(self, wait: bool = True) -> None:
        """Stop: pending tasks never run, further adds raise, blocked pollers return.

        Shuts the executor down only if the timer created it (waiting for a running task
        if ``wait``).
        """
        with self._lock:
            self._shut_down = True
        self._queue.close()
        if self._owns_executor:
            self._executor.shutdown(wait=wait)

    @property
    def is_shut_down(self) -> bool:
        return self._shut_down


def _run_task(task: TimerTask) -> None:
    try:
        task.run()
    except Exception:
        log.exception("timer task %r failed", task)
