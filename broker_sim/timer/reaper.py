"""A thread that keeps a SystemTimer's clock moving."""

from __future__ import annotations

import logging
import threading

from .system_timer import SystemTimer

log = logging.getLogger(__name__)


class TimerReaper(threading.Thread):
    """Advances a SystemTimer forever (it sleeps until the next bucket is due)."""

    def __init__(self, timer: SystemTimer, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.timer = timer
        self._stopped = threading.Event()

    def run(self) -> None:
        while not self._stopped.is_set():
            try:
                self.timer.advance_clock(200)
            except Exception:
                log.exception("%s: timer advance failed", self.name)

    def stop(self) -> None:
        self._stopped.set()
