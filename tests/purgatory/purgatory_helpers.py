"""Operations and purgatories for the purgatory tests."""

from __future__ import annotations

import threading

from broker_sim.purgatory import DelayedOperation, DelayedOperationPurgatory
from broker_sim.timer import ManualClock, SystemTimer
from tests.timer.timer_helpers import SyncExecutor


class MockOperation(DelayedOperation):
    """Completes once ``completable`` is set; counts its completions and expirations."""

    __slots__ = ("completable", "completions", "expirations", "tries", "_count_lock")

    def __init__(self, delay_ms: int, lock: threading.RLock | None = None) -> None:
        super().__init__(delay_ms, lock)
        self.completable = False
        self.completions = 0
        self.expirations = 0
        self.tries = 0
        self._count_lock = threading.Lock()

    def try_complete(self) -> bool:
        self.tries += 1
        if self.completable:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        with self._count_lock:
            self.completions += 1

    def on_expiration(self) -> None:
        with self._count_lock:
            self.expirations += 1


def manual_purgatory(
    purge_interval: int = 1000, start_ms: int = 0
) -> tuple[DelayedOperationPurgatory[MockOperation], ManualClock]:
    clock = ManualClock(start_ms)
    timer = SystemTimer("purgatory-test", clock=clock, executor=SyncExecutor())
    purgatory: DelayedOperationPurgatory[MockOperation] = DelayedOperationPurgatory(
        "test", timer=timer, purge_interval=purge_interval, reaper_enabled=False
    )
    return purgatory, clock
