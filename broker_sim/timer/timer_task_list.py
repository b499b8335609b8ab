"""Timer buckets: circular doubly linked lists of entries, with O(1) add and remove."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from .task_counter import TaskCounter

if TYPE_CHECKING:
    from .timer_task import TimerTask

__all__ = ["TaskCounter", "TimerTaskEntry", "TimerTaskList"]


class TimerTaskEntry:
    """One scheduling of a :class:`TimerTask`: a node of a bucket's linked list.

    ``list`` is the bucket the entry is linked into (None when in none), which makes
    removal O(1): unlink from ``prev``/``next`` under that bucket's lock.
    ``expiration_ms`` is the absolute time (timer clock) at which the task is due. The
    entry is *cancelled* once its task no longer points back at it (cancelled, or re-added
    with a new entry); the timer drops such an entry instead of running it.

    Threading contract: the link fields ``list``/``prev``/``next`` belong to the lock of
    the bucket the entry is in, and change only under it. Kafka also locks the entry
    itself so that an entry moving between two buckets with different locks stays
    consistent; we have no per-entry lock (it would double an entry's cost) because all
    buckets of one timer share one lock, so a move is atomic. :meth:`remove` still loops,
    as Kafka's does, so it stays correct for buckets with distinct locks.
    """

    __slots__ = ("task", "expiration_ms", "list", "next", "prev")

    def __init__(self, task: TimerTask | None, expiration_ms: int) -> None:
        self.task = task
        self.expiration_ms = expiration_ms
        self.list: TimerTaskList | None = None
        self.next: TimerTaskEntry | None = None
        self.prev: TimerTaskEntry | None = None
        if task is not None:  # attach, unlinking a previous entry: re-adding a task moves it
            old = task._entry
            if old is not None:
                old.remove()
            task._entry = self

    @property
    def cancelled(self) -> bool:
        """True once the task was cancelled or rescheduled with another entry."""
        task = self.task
        return task is None or task._entry is not self

    def remove(self) -> None:
        """Unlink from whatever bucket holds the entry (no-op if none)."""
        bucket = self.list
        while bucket is not None:
            bucket.remove(self)
            bucket = self.list

    def __repr__(self) -> str:
        return f"TimerTaskEntry(expiration_ms={self.expiration_ms}, task={self.task!r})"


class TimerTaskList:
    """A bucket: the entries of one tick of a :class:`~.timing_wheel.TimingWheel`.

    A circular doubly linked list with a sentinel ``root`` (``root.next`` is the head,
    ``root.prev`` the tail), so adding and removing are O(1) without special cases.
    ``expiration`` is the start of the tick the bucket currently holds, or -1 when it is
    empty and free for reuse: a wheel reuses each bucket round after round.

    Invariants:

    * every linked entry ``e`` has ``e.list is self``; ``len(self)`` counts them exactly;
    * all linked entries are due in ``[expiration, expiration + tick)``;
    * while ``expiration != -1`` the bucket is in the timer's delay queue exactly once,
      keyed by that expiration; :meth:`set_expiration` reports a change so the wheel
      offers the bucket again for each new round.

    Threading contract: the list synchronizes on ``lock`` (a reentrant lock, given at
    construction). Kafka gives every list its own monitor; here all buckets of one timer
    share the timer's lock, because a pure-Python lock round trip costs as much as the
    rest of an add and the GIL gives no parallelism to win back with finer locks: a timer
    operation thus takes one lock, not three (timer, list, entry). :meth:`add`,
    :meth:`remove` and :meth:`flush` acquire it (reentrantly, so ``flush``'s ``f`` may add
    to another bucket, as the timer's re-insertion does); :meth:`add_locked` and
    :meth:`set_expiration` require the caller to hold it already (the wheel's hot path).
    ``TimerTask.cancel`` calls :meth:`remove` from any thread.
    """

    __slots__ = ("_root", "_lock", "expiration", "_size")

    def __init__(self, task_counter: TaskCounter, lock: threading.RLock | None = None) -> None:
        root = TimerTaskEntry(None, -1)
        root.next = root
        root.prev = root
        self._root = root
        self._lock = lock if lock is not None else threading.RLock()
        #: Start of the tick this bucket holds, or -1 if none. Read it freely; change it only
        #: through :meth:`set_expiration` (a plain slot, so the wheel's check is cheap).
        self.expiration = -1
        self._size = 0
        task_counter.register(self)

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def set_expiration(self, expiration_ms: int) -> bool:
        """Set the expiration; True only if it changed (then the bucket must be queued).

        The caller holds ``lock`` (this is Kafka's ``getAndSet`` on an atomic long).
        """
        if self.expiration != expiration_ms:
            self.expiration = expiration_ms
            return True
        return False

    def __len__(self) -> int:
        return self._size

    def add(self, entry: TimerTaskEntry) -> None:
        """Append ``entry`` at the tail, first unlinking it from any other bucket."""
        with self._lock:
            self.add_locked(entry)

    def add_locked(self, entry: TimerTaskEntry) -> None:
        """:meth:`add` for a caller that already holds ``lock``."""
        if entry.list is not None:
            entry.remove()
        root = self._root
        tail = root.prev
        entry.next = root
        entry.prev = tail
        entry.list = self
        tail.next = entry  # type: ignore[union-attr]  # a linked entry's next/prev are never None (the root links to itself)
        root.prev = entry
        self._size += 1

    def remove(self, entry: TimerTaskEntry) -> None:
        """Unlink ``entry`` if it is (still) in this bucket. O(1); any thread."""
        lock = self._lock
        lock.acquire()
        try:
            if entry.list is self:
                nxt = entry.next
                prev = entry.prev
                nxt.prev = prev  # type: ignore[union-attr]  # a linked entry's next/prev are never None
                prev.next = nxt  # type: ignore[union-attr]  # a linked entry's next/prev are never None
                entry.next = entry.prev = entry.list = None
                self._size -= 1
        finally:
            lock.release()

    def flush(self, f: Callable[[TimerTaskEntry], object]) -> None:
        """Unlink every entry, head first, handing each to ``f``; then mark the bucket free.

        ``f`` runs under ``lock`` (as in Kafka); it may re-add the entry anywhere.
        """
        with self._lock:
            root = self._root
            head = root.next
            while head is not root:
                self.remove(head)  # type: ignore[arg-type]  # a linked entry's next/prev are never None
                f(head)  # type: ignore[arg-type]  # a linked entry's next/prev are never None
                head = root.next
            self.expiration = -1

    def entries(self) -> list[TimerTaskEntry]:
        """Snapshot of the linked entries, head to tail (for inspection and tests)."""
        with self._lock:
            out: list[TimerTaskEntry] = []
            entry = self._root.next
            while entry is not None and entry is not self._root:  # linked entries are never None
                out.append(entry)
                entry = entry.next
            return out

    def __repr__(self) -> str:
        return f"TimerTaskList(expiration={self.expiration}, size={self._size})"
