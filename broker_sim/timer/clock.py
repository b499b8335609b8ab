"""Clocks for the timer: a monotonic system clock and a manual one for tests.

Everything in :mod:`broker_sim.timer` and :mod:`broker_sim.purgatory` reads time through a
:class:`Clock`, never through :mod:`time` directly, so a test can replace the passage of
time with :meth:`ManualClock.advance` and never sleep.

>>> clock = ManualClock(start_ms=100)
>>> clock.now_ms()
100
>>> clock.advance(50)
150
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """A source of monotonic time in whole milliseconds.

    Invariant: successive calls never go backwards. The origin is arbitrary (only
    differences between readings mean anything), so readings must never be compared with
    wall-clock timestamps.
    """

    def now_ms(self) -> int:
        """Milliseconds since an arbitrary, fixed origin."""
        ...


class SystemClock:
    """The real monotonic clock (``time.monotonic_ns`` truncated to milliseconds).

    Truncation means a reading lags real time by less than 1 ms, so a delay measured on
    this clock may end up to 1 ms early in real time (as with Kafka's millisecond clock).
    Stateless, hence safe to share between any number of threads.
    """

    __slots__ = ()

    def now_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    def __repr__(self) -> str:
        return "SystemClock()"


class ManualClock:
    """A clock that moves only when a test calls :meth:`advance`.

    Threading contract: :meth:`now_ms` is a single attribute read and may be called from any
    thread; :meth:`advance` is serialized by an internal lock, so concurrent advances add
    up. After each advance the clock calls every listener registered with
    :meth:`add_listener` (outside the lock) so that something waiting for a deadline on this
    clock, such as :class:`~broker_sim.timer.delay_queue.DelayQueue`, re-checks at once
    instead of sleeping until its real-time timeout.

    Invariant: time never goes backwards (``advance`` rejects negative steps).
    """

    __slots__ = ("_now", "_lock", "_listeners")

    def __init__(self, start_ms: int = 0) -> None:
        self._now = start_ms
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> int:
        """Move time forward by ``ms`` milliseconds; returns the new time."""
        if ms < 0:
            raise ValueError(f"a clock cannot go backwards (advance by {ms} ms)")
        with self._lock:
            self._now += ms
            now = self._now
            listeners = tuple(self._listeners)
        for listener in listeners:
            listener()
        return now

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` after every future :meth:`advance`."""
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[], None]) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def __repr__(self) -> str:
        return f"ManualClock(now_ms={self._now})"
