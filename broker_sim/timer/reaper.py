"""The thread that keeps a :class:`SystemTimer` moving: Kafka's expiration reaper."""

from __future__ import annotations

from collections.abc import Callable

from ..common.shutdownable_thread import ShutdownableThread
from .system_timer import SystemTimer

DEFAULT_POLL_MS = 200


class TimerReaper(ShutdownableThread):
    """Advances a timer round after round; the one reaper of the broker and the controller.

    Each round waits in the timer's delay queue for at most ``poll_ms`` for a bucket to
    come due, expires what is due (its tasks run on the timer's executor), then calls
    ``after_round`` — the purgatory passes its purge check here. An idle timer therefore
    costs one wake-up per ``poll_ms``, whatever the number of pending tasks.

    Threading: ``run_once`` runs on this thread, or on a test's thread with an explicit
    ``timeout_ms`` (0: expire what is due now, never wait) when the reaper was not started.
    Stopping: :meth:`stop` returns within one ``poll_ms``; stop the reaper before shutting
    the timer down, so no round runs on a closed executor.
    """

    def __init__(self, timer: SystemTimer, name: str, poll_ms: int = DEFAULT_POLL_MS,
                 after_round: Callable[[], None] | None = None) -> None:
        super().__init__(name)
        self.timer = timer
        self.poll_ms = poll_ms
        self._after_round = after_round

    def run_once(self, timeout_ms: float | None = None) -> None:
        if self.timer.is_shut_down:
            self.stopping.wait(self.poll_ms / 1000)
            return
        self.timer.advance_clock(self.poll_ms if timeout_ms is None else timeout_ms)
        if self._after_round is not None:
            self._after_round()
