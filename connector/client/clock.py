"""Time as the client sees it, injected so that tests drive it by hand.

Every class that schedules (linger, backoff, expiry, timeouts) takes ``now`` in
milliseconds as a parameter; only the loops at the edge (the sender's ``run()``, a
blocking ``flush()``) read a :class:`Clock`. Two readings, as in Kafka: a **monotonic**
one for durations and deadlines, and **wall** time for record timestamps.

>>> c = ManualClock(1000)
>>> c.advance(250)
>>> c.monotonic_ms(), c.wall_ms()
(1250.0, 1250)
"""

from __future__ import annotations

import time


class Clock:
    """The system clock."""

    def monotonic_ms(self) -> float:
        return time.monotonic() * 1000.0

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock(Clock):
    """A clock that moves only when told to (tests)."""

    def __init__(self, start_ms: float = 0.0) -> None:
        self._now = float(start_ms)

    def advance(self, ms: float) -> None:
        self._now += ms

    def monotonic_ms(self) -> float:
        return self._now

    def wall_ms(self) -> int:
        return int(self._now)


SYSTEM_CLOCK = Clock()
