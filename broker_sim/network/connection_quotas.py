"""Per-IP connection limits (``max.connections.per.ip`` and its per-IP overrides)."""

from __future__ import annotations

import threading
from collections import defaultdict

from ..protocol.errors import PyqError


class TooManyConnections(PyqError):
    def __init__(self, ip: str, limit: int) -> None:
        super().__init__(f"too many connections from {ip} (limit {limit})")
        self.ip = ip
        self.limit = limit


class ConnectionQuotas:
    """Counts open connections per IP; ``inc`` refuses one past the IP's limit.

    Called from the acceptor thread (inc) and from processor threads (dec): one lock.
    """

    def __init__(self, default_max: int, overrides: dict[str, int] | None = None) -> None:
        self.default_max = default_max
        self.overrides = dict(overrides or {})
        self._counts: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()

    def limit_for(self, ip: str) -> int:
        return self.overrides.get(ip, self.default_max)

    def inc(self, ip: str) -> None:
        limit = self.limit_for(ip)
        with self._lock:
            if self._counts[ip] >= limit:
                raise TooManyConnections(ip, limit)
            self._counts[ip] += 1

    def dec(self, ip: str) -> None:
        with self._lock:
            n = self._counts.get(ip, 0) - 1
            if n <= 0:
                self._counts.pop(ip, None)
            else:
                self._counts[ip] = n

    def count(self, ip: str) -> int:
        with self._lock:
            return self._counts.get(ip, 0)
