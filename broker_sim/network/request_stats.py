"""Per-API request counts, latencies and sizes, kept by each network processor.

A processor records every request once, when it takes the request's response off its
response queue (:meth:`RequestStats.record`): the API, the time since the frame was read
(queueing, handling and any wait in a purgatory), the request's and the response's sizes.
The metrics endpoint sums the processors' stats when it is scraped
(:func:`merged`); nothing else reads them.

Why not a ``prometheus_client`` Histogram on the request path: its ``observe`` takes a lock
per bucket and per sum, and ``labels()`` another, several times the cost of this
(see ``benchmarks/request_stats.py``). Here the hot path is one ``monotonic_ns`` call, one
bisect and a few integer additions into lists owned by the processor's thread.

Threading: one writer, the owning processor's thread; no lock. A scrape reads from another
thread and copies each list whole (atomic under the GIL), so it may miss a request being
recorded at that instant but never sees a half-updated histogram: the count is derived from
the copied buckets.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field

#: Upper bounds of the latency buckets, in seconds (Prometheus ``le``; +Inf is implied).
LATENCY_BUCKETS_S: tuple[float, ...] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                        0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_BOUNDS_NS: tuple[int, ...] = tuple(int(b * 1e9) for b in LATENCY_BUCKETS_S)


class RequestStats:
    """One processor's counters, per API key (see the module docstring)."""

    __slots__ = ("_per_api",)

    def __init__(self) -> None:
        #: api key -> [latency sum ns, request bytes, response bytes, bucket counts...];
        #: the bucket counts are per bucket (not cumulative), the last one is +Inf.
        self._per_api: dict[int, list[int]] = {}

    def record(self, api_key: int, received_ns: int, request_bytes: int, response_bytes: int) -> None:
        """One request answered (processor thread only)."""
        elapsed = time.monotonic_ns() - received_ns
        row = self._per_api.get(api_key)
        if row is None:
            row = self._per_api[api_key] = [0] * (3 + len(_BOUNDS_NS) + 1)
        row[0] += elapsed
        row[1] += request_bytes
        row[2] += response_bytes
        row[3 + bisect_left(_BOUNDS_NS, elapsed)] += 1

    def snapshot(self) -> dict[int, list[int]]:
        """A copy of every API's row (any thread)."""
        return {k: list(v) for k, v in list(self._per_api.items())}


@dataclass
class ApiTotals:
    """What the processors recorded for one API, summed."""

    latency_sum_s: float = 0.0
    request_bytes: int = 0
    response_bytes: int = 0
    #: Observations per bucket (not cumulative), ``len(LATENCY_BUCKETS_S) + 1`` of them.
    buckets: list[int] = field(default_factory=lambda: [0] * (len(_BOUNDS_NS) + 1))

    @property
    def count(self) -> int:
        return sum(self.buckets)

    def cumulative(self) -> list[tuple[str, int]]:
        """``(le, count)`` pairs as a Prometheus histogram wants them, ending with +Inf."""
        out, running = [], 0
        for bound, n in zip((*(repr(b) for b in LATENCY_BUCKETS_S), "+Inf"), self.buckets, strict=True):
            running += n
            out.append((bound, running))
        return out


def merged(stats: Iterable[RequestStats]) -> dict[int, ApiTotals]:
    """Sum several processors' stats per API key."""
    out: dict[int, ApiTotals] = {}
    for s in stats:
        for api_key, row in s.snapshot().items():
            t = out.setdefault(api_key, ApiTotals())
            t.latency_sum_s += row[0] / 1e9
            t.request_bytes += row[1]
            t.response_bytes += row[2]
            for i, n in enumerate(row[3:]):
                t.buckets[i] += n
    return out
