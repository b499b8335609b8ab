"""The operations watching one key of a purgatory."""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Generic, TypeVar

from .delayed_operation import DelayedOperation

T = TypeVar("T", bound=DelayedOperation)


class Watchers(Generic[T]):
    """The delayed operations waiting for something to happen to one key.

    Operations are kept in insertion order in a dict keyed by identity (so removal is
    O(1) and operations need not be hashable). An operation may stay here after it has
    completed elsewhere (through another key or the timer): completed operations are
    dropped lazily, when the key is checked (:meth:`try_complete_watched`) or purged
    (:meth:`purge_completed`), exactly as in Kafka.

    Threading contract: ``_lock`` guards the dict and is held only to copy or edit it,
    never while an operation's code runs: :meth:`try_complete_watched` works on a snapshot
    and calls ``maybe_try_complete``, which never blocks, so checking a key never waits
    for another thread's check. An operation added during a check is not in the snapshot;
    that is safe because the adder tries to complete it itself after watching it.
    """

    __slots__ = ("key", "_ops", "_lock")

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self._ops: dict[int, T] = {}
        self._lock = threading.Lock()

    def watch(self, op: T) -> None:
        with self._lock:
            self._ops[id(op)] = op

    def count_watched(self) -> int:
        return len(self._ops)

    def is_empty(self) -> bool:
        return not self._ops

    def operations(self) -> list[T]:
        with self._lock:
            return list(self._ops.values())

    def try_complete_watched(self) -> int:
        """Try to complete every watched operation; drop the completed ones.

        Returns how many operations this call completed.
        """
        with self._lock:
            ops = list(self._ops.values())
        completed = 0
        finished: list[int] = []
        for op in ops:
            if op.is_completed:
                finished.append(id(op))
            elif op.maybe_try_complete():
                completed += 1
                finished.append(id(op))
        if finished:
            with self._lock:
                for key in finished:
                    self._ops.pop(key, None)
        return completed

    def purge_completed(self) -> int:
        """Drop operations completed elsewhere; returns how many were dropped."""
        with self._lock:
            done = [key for key, op in self._ops.items() if op.is_completed]
            for key in done:
                del self._ops[key]
        return len(done)

    def cancel(self) -> list[T]:
        """Stop watching everything; cancel each operation's timeout; return them."""
        with self._lock:
            ops = list(self._ops.values())
            self._ops.clear()
        for op in ops:
            op.cancel()
        return ops

    def __repr__(self) -> str:
        return f"Watchers(key={self.key!r}, watched={len(self._ops)})"
