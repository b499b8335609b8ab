"""The timer's task counter: how many entries are linked into its buckets."""

from __future__ import annotations

import threading
from typing import Protocol


class Stripe(Protocol):
    """A bucket as the counter sees it: it knows how many entries it holds."""

    def __len__(self) -> int: ...


class TaskCounter:
    """The number of entries linked into any bucket of one timer (``SystemTimer.size``).

    Shared by the timer and all of its buckets. It is a striped counter, like
    ``java.util.concurrent.atomic.LongAdder``: every bucket is one stripe and keeps its own
    count, which it changes only while holding its lock (held anyway to link or unlink an
    entry), so counting costs nothing extra on the hot path. :meth:`get` sums the stripes:
    exact whenever no add, cancel or flush is in flight, which ``SystemTimer.size``
    ensures by holding the timer's lock (shared by all its buckets) while it sums.
    """

    __slots__ = ("_buckets", "_lock")

    def __init__(self) -> None:
        self._buckets: list[Stripe] = []
        self._lock = threading.Lock()

    def register(self, bucket: Stripe) -> None:
        """Add ``bucket`` as a stripe (each bucket's constructor does this once)."""
        with self._lock:
            self._buckets.append(bucket)

    def get(self) -> int:
        with self._lock:
            buckets = tuple(self._buckets)
        return sum(len(bucket) for bucket in buckets)

    def __repr__(self) -> str:
        return f"TaskCounter({self.get()})"
