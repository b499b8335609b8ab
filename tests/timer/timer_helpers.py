"""Helpers shared by the timer and purgatory tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

from broker_sim.timer import Clock, ManualClock, SystemTimer, TimerTask


class SyncExecutor(Executor):
    """Runs each submitted callable at once, on the submitting thread (deterministic)."""

    def __init__(self) -> None:
        self.submitted = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted += 1
        fut: Future[Any] = Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # pragma: no cover - surfaced through the future
            fut.set_exception(exc)
        return fut


class RecordingTask(TimerTask):
    """Appends ``(label, clock time)`` to ``log`` when run; counts its runs."""

    __slots__ = ("label", "log", "clock", "runs", "thread")

    def __init__(self, delay_ms: int, label: object, log: list, clock: Clock) -> None:
        super().__init__(delay_ms)
        self.label = label
        self.log = log
        self.clock = clock
        self.runs = 0
        self.thread: str | None = None

    def run(self) -> None:
        self.runs += 1
        self.thread = threading.current_thread().name
        self.log.append((self.label, self.clock.monotonic_ms()))

    def __repr__(self) -> str:
        return f"RecordingTask({self.label!r}, delay_ms={self.delay_ms})"


def manual_timer(
    start_ms: int = 0, tick_ms: int = 1, wheel_size: int = 20
) -> tuple[SystemTimer, ManualClock]:
    clock = ManualClock(start_ms)
    timer = SystemTimer(
        "test-timer", tick_ms=tick_ms, wheel_size=wheel_size, clock=clock, executor=SyncExecutor()
    )
    return timer, clock


def advance_to(timer: SystemTimer, clock: ManualClock, time_ms: int) -> None:
    """Move the manual clock to ``time_ms`` and let the timer expire what is due."""
    if time_ms > clock.monotonic_ms():
        clock.advance(time_ms - clock.monotonic_ms())
    timer.advance_clock(0)
