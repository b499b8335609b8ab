"""The lag history behind the groups page's chart: every consumer group's lag, sampled
every ``interval_ms`` while the console runs (it keeps no history across restarts)."""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Any

from broker_sim.common import SYSTEM_CLOCK, Clock, ShutdownableThread
from broker_sim.protocol.errors import PyqError
from connector.client import Admin

from .clients import ConsoleClients
from .lag import group_lags, total

log = logging.getLogger(__name__)

#: Samples kept per group: an hour at the default interval of 5 s.
DEFAULT_SAMPLES = 720
DEFAULT_INTERVAL_MS = 5_000


class _Sampler(ShutdownableThread):
    """``pyq-console-lag``: a round samples at once, then waits an interval (a stop ends the wait)."""

    def __init__(self, history: LagHistory) -> None:
        super().__init__("pyq-console-lag")
        self.history = history

    def run_once(self) -> None:
        try:
            self.history.sample()
        finally:  # an unexpected failure (logged by the loop) waits its interval too
            self.stopping.wait(self.history.interval_ms / 1000)


class LagHistory:
    """Samples of each group's lag, ``{"time": ms, "lag": n or None, "partitions": {"t-p": n},
    "committed": n, "partition_count": n}`` (``lag``: :func:`.lag.total`, None when no
    partition's lag is known — a group listed before its first commit is durable, a topic
    without a leader — so the chart shows a gap there, never a lag of 0; ``committed``: the
    sum of its committed offsets, for a rate),
    the newest last, at most ``samples`` per group (the oldest dropped); a group is
    sampled from the first round after it appears (ListGroups) until it is gone.

    Sample times are the wall time of ``clock``.

    Threading: :meth:`start` runs the sampling rounds on a thread of its own (a
    :class:`~broker_sim.common.ShutdownableThread`), which
    reaches the cluster through an Admin of its own (made from the console's client
    options, used by that thread only), so a page never waits for a round;
    :meth:`samples`, :meth:`rate` and :meth:`latest_round` are read by request threads,
    under this object's own lock. :meth:`close` stops the thread (a round in progress
    finishes first), then closes the Admin. A round that fails (the cluster unreachable, a group
    described while it is deleted) is logged and kept as :attr:`last_error`, and the next
    round tries again.
    """

    def __init__(self, clients: ConsoleClients, interval_ms: int = DEFAULT_INTERVAL_MS,
                 samples: int = DEFAULT_SAMPLES, clock: Clock = SYSTEM_CLOCK) -> None:
        if interval_ms < 100:
            raise ValueError(f"lag history interval {interval_ms} ms is not allowed: must be "
                             "at least 100")
        self.clients = clients
        self._admin = Admin(clients.options)
        self._round: tuple[int, dict[str, dict[str, Any]]] | None = None
        self.interval_ms = interval_ms
        self._samples = samples
        self._history: dict[str, deque[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._clock = clock
        self._thread: _Sampler | None = None
        self.last_error: str | None = None

    def start(self) -> LagHistory:
        self._thread = _Sampler(self)
        self._thread.start()
        return self

    def sample(self) -> None:
        """One round: every group's lag now."""
        try:
            now = self._clock.wall_ms()
            groups = [g.group_id for g in self._admin.list_groups()]
            taken = {}
            for group, rows in group_lags(self._admin, groups).items():
                lags = {f"{r['topic']}-{r['partition']}": r["lag"] for r in rows
                        if r["lag"] is not None}
                taken[group] = {"time": now, "lag": total(rows), "partitions": lags,
                                "committed": sum(r["committed"] for r in rows
                                                 if r["committed"] is not None),
                                "partition_count": len(rows)}
        except PyqError as e:
            self.last_error = f"{type(e).__name__}: {' '.join(str(e).split())}"
            log.warning("lag history: sampling failed, trying again in %d ms: %s",
                        self.interval_ms, self.last_error)
            return
        self.last_error = None
        with self._lock:
            self._round = (now, taken)
            for group in list(self._history):
                if group not in taken:
                    del self._history[group]
            for group, sample in taken.items():
                self._history.setdefault(group, deque(maxlen=self._samples)).append(sample)

    def samples(self, group: str) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._history.get(group, ()))

    def latest_round(self) -> tuple[int, dict[str, dict[str, Any]]] | None:
        """(time in ms, each group's sample) of the last round that succeeded, if it is
        at most two intervals old (None otherwise: the groups page then computes lag
        itself)."""
        with self._lock:
            taken = self._round
        if taken is None or self._clock.wall_ms() - taken[0] > 2 * self.interval_ms:
            return None
        return taken

    def rate(self, group: str, window_ms: int = 60_000) -> float | None:
        """Records per second the group committed past over the last ``window_ms`` of
        samples (None before two samples)."""
        with self._lock:
            taken = list(self._history.get(group, ()))
        recent = [t for t in taken if t["time"] >= taken[-1]["time"] - window_ms] if taken else []
        if len(recent) < 2 or recent[-1]["time"] == recent[0]["time"]:
            return None
        return (recent[-1]["committed"] - recent[0]["committed"]) * 1000 / (
            recent[-1]["time"] - recent[0]["time"])

    def close(self) -> None:
        if self._thread is not None:
            self._thread.stop(timeout=None)  # a round in progress finishes first
        self._admin.close()
