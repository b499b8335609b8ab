"""The one shape of a background thread in pyq: a loop of ``run_once()`` with one stop API."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class ShutdownableThread(threading.Thread):
    """A daemon thread that repeats :meth:`run_once` until stopped (Kafka's ``ShutdownableThread``).

    Subclasses implement :meth:`run_once` — one bounded round of work that returns within
    about its poll interval — and never override :meth:`run`. Tests drive ``run_once()`` by
    hand on a thread that was never started.

    - :meth:`run` loops until :meth:`request_stop`; an exception from one round is logged
      with the thread's name and the loop goes on (one bad round must not silently kill a
      broker's fetcher or reaper).
    - :meth:`request_stop` only signals (so a caller can signal many threads, then wait for
      all); :meth:`stop` signals, calls :meth:`wake` so a round blocked in a wait returns
      early, and joins. Stopping a thread that never started, or twice, is harmless.
    - :meth:`on_stopped` runs once on this thread after the last round (even one that
      raised), to release what the loop owned.
    - :attr:`stopping` is the event ``run_once`` may wait on instead of ``time.sleep``, so a
      stop interrupts the wait at once.

    Threading contract: ``request_stop``/``stop``/``wake`` may be called from any thread;
    ``run_once`` runs only on this thread (or on the test's thread when not started).
    """

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.stopping = threading.Event()

    def run_once(self) -> None:
        """One round of work. Must return within the thread's poll interval."""
        raise NotImplementedError

    def wake(self) -> None:
        """Interrupt a blocking wait inside :meth:`run_once` (override where there is one)."""

    def on_stopped(self) -> None:
        """Release what the loop owned (sockets, selectors); runs once, on this thread, last."""

    def run(self) -> None:
        log.debug("%s: started", self.name)
        try:
            while not self.stopping.is_set():
                try:
                    self.run_once()
                except Exception:
                    if self.stopping.is_set():
                        break
                    log.exception("%s: a round of work failed; carrying on", self.name)
                    self.stopping.wait(0.01)  # no hot loop if every round fails at once
        finally:
            self.on_stopped()
            log.debug("%s: stopped", self.name)

    def request_stop(self) -> None:
        """Ask the loop to end after the current round; returns at once."""
        self.stopping.set()
        self.wake()

    def stop(self, timeout: float | None = 5.0) -> None:
        """Ask the loop to end and wait (at most ``timeout`` seconds) until it has."""
        self.request_stop()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout)
            if self.is_alive():
                log.warning("%s: still running %.1f s after stop()", self.name, timeout or 0)


class PeriodicThread(ShutdownableThread):
    """Runs ``action()`` every ``interval_ms`` (first run one interval after start).

    For housekeeping such as the log-retention check. A failing ``action`` is logged and
    tried again at the next interval; :meth:`stop` interrupts the wait at once. ``runs``
    counts the runs of ``action`` that have ended (failed ones too): a test that must show
    something did *not* happen waits for it to advance instead of sleeping.
    """

    def __init__(self, name: str, interval_ms: int, action: Callable[[], object]) -> None:
        super().__init__(name)
        self.interval_ms = interval_ms
        self._action = action
        self.runs = 0  # written by this thread only

    def run_once(self) -> None:
        if not self.stopping.wait(self.interval_ms / 1000):
            try:
                self._action()
            finally:
                self.runs += 1
