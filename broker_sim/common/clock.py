"""Time, injected: every component that schedules reads a :class:`Clock`, never :mod:`time`.

Two readings, as Kafka's ``Time``: **monotonic** milliseconds for durations, deadlines and
timeouts (the origin is arbitrary; only differences mean anything, and they never go
backwards), and **wall** milliseconds since the epoch for record timestamps, retention by
time and anything compared with a timestamp from outside the process. Mixing the two is the
classic bug (a wall-clock step moving a timeout), which is why they are separate methods.

Production code takes ``clock: Clock = SYSTEM_CLOCK``; tests pass a :class:`ManualClock`
and move time with :meth:`ManualClock.advance`, so linger, backoff, expiry and session
timeouts are driven without sleeping.

>>> clock = ManualClock(start_ms=100, wall_start_ms=1_700_000_000_000)
>>> clock.monotonic_ms(), clock.wall_ms()
(100, 1700000000000)
>>> clock.advance(50)
150
>>> clock.monotonic_ms(), clock.wall_ms()
(150, 1700000000050)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """A source of monotonic and of wall time, both in whole milliseconds."""

    def monotonic_ms(self) -> int:
        """Milliseconds since an arbitrary fixed origin; never goes backwards."""
        ...

    def wall_ms(self) -> int:
        """Milliseconds since the Unix epoch (may jump when the system clock is set)."""
        ...


class SystemClock:
    """The process's real clocks.

    ``monotonic_ms`` truncates ``time.monotonic_ns``, so a reading lags real time by less
    than 1 ms and a delay measured on it may end up to 1 ms early (as with Kafka's
    millisecond clock). Stateless, hence safe to share between any number of threads.
    """

    __slots__ = ()

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def __repr__(self) -> str:
        return "SystemClock()"


SYSTEM_CLOCK = SystemClock()
"""The shared real clock: the default wherever a ``clock`` parameter is taken."""


class ManualClock:
    """A clock that moves only when a test calls :meth:`advance`; both readings move together.

    Threading contract: the readings are single attribute reads and may be taken from any
    thread; :meth:`advance` is serialized by an internal lock, so concurrent advances add
    up. After each advance the clock calls every listener registered with
    :meth:`add_listener` (outside the lock, so a listener may read the clock) so that a
    thread waiting for a deadline on this clock — the timer's delay queue — re-checks at
    once instead of sleeping until its real-time timeout.

    Invariant: time never goes backwards (``advance`` rejects negative steps).
    """

    __slots__ = ("_now", "_wall_offset", "_lock", "_listeners")

    def __init__(self, start_ms: int = 0, wall_start_ms: int | None = None) -> None:
        self._now = int(start_ms)
        self._wall_offset = (int(start_ms) if wall_start_ms is None else int(wall_start_ms)) - self._now
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []

    def monotonic_ms(self) -> int:
        return self._now

    def wall_ms(self) -> int:
        return self._now + self._wall_offset

    def advance(self, ms: int) -> int:
        """Move time forward by ``ms`` milliseconds; returns the new monotonic reading."""
        if ms < 0:
            raise ValueError(f"a clock cannot go backwards (advance by {ms} ms)")
        with self._lock:
            self._now += int(ms)
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
        return f"ManualClock(monotonic_ms={self._now}, wall_ms={self.wall_ms()})"
