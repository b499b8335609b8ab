"""The unit of work a timer runs when its delay has elapsed."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .timer_task_list import TimerTaskEntry


class TimerTask(ABC):
    """Something to :meth:`run` once, ``delay_ms`` milliseconds after it is added to a timer.

    A task is linked to at most one live :class:`~.timer_task_list.TimerTaskEntry` at a
    time: the timer creates the entry when the task is added, and the entry registers
    itself here. :meth:`cancel` unlinks that entry from its bucket in O(1), so a cancelled
    task neither runs nor occupies memory in the timer until its deadline.

    An entry whose task no longer points back at it is *cancelled*: the timer drops it
    instead of running it. Re-adding a task replaces (and unlinks) its previous entry.

    Threading contract (Kafka synchronizes on the task here; we avoid a lock per task, as
    tasks are created by the million and a pure-Python lock costs as much as the rest of
    an add): ``_entry`` is written only by the entry's constructor, which the timer calls
    while holding its own lock, and by :meth:`cancel`, which may run on any thread.
    ``cancel`` swaps the reference out first and then unlinks the entry under its bucket's
    lock, retrying while a concurrent cascade moves the entry between buckets. If a cancel
    races with an add of the same task, either order is a valid outcome; an entry the race
    leaves in a bucket is recognised as cancelled when the bucket expires and dropped, so
    it never runs (it only counts in ``SystemTimer.size`` until then).

    Subclasses must declare ``__slots__`` (or accept a ``__dict__``) and call
    ``super().__init__(delay_ms)``.
    """

    __slots__ = ("delay_ms", "_entry")

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self._entry: TimerTaskEntry | None = None

    @abstractmethod
    def run(self) -> None:
        """Called (on the timer's executor) once the delay has elapsed, unless cancelled."""

    def cancel(self) -> None:
        """Stop the task from running and remove its entry from the timer, in O(1).

        Idempotent; a no-op if the task is not in a timer or has already run.
        """
        entry = self._entry
        if entry is not None:
            self._entry = None
            bucket = entry.list
            while bucket is not None:  # loop: a cascade may move it between buckets
                # TimerTaskList.remove, inlined: one Python call less per cancel.
                lock = bucket._lock
                lock.acquire()
                try:
                    if entry.list is bucket:
                        nxt = entry.next
                        prev = entry.prev
                        nxt.prev = prev  # type: ignore[union-attr]  # a linked entry's next/prev are never None
                        prev.next = nxt  # type: ignore[union-attr]  # a linked entry's next/prev are never None
                        entry.next = entry.prev = entry.list = None
                        bucket._size -= 1
                finally:
                    lock.release()
                bucket = entry.list

    @property
    def timer_task_entry(self) -> TimerTaskEntry | None:
        """The entry currently scheduling this task, or None."""
        return self._entry
