"""Timer benchmark: the purgatory workload on our SystemTimer, a lazy-deletion heap, asyncio.

Workload (identical for all three timers, generated from one precomputed pattern):

* 1,000,000 delayed operations, each with a 30 s timeout, like produce requests with
  ``acks=all`` waiting in the produce purgatory.
* Simulated time advances in 1 ms steps; 100 operations arrive per step (100k ops/s, so
  arrivals span 10 s of simulated time), then time keeps advancing until the last timeout.
* 99% of operations complete 1-50 ms after they arrive (uniformly at random): the
  workload cancels their timer entry at that step. 1% never complete and expire after
  30 s, when the timer must run them exactly once. After each step, the timer is given
  the chance to expire due work (ours: ``advance_clock(0)``; heap: pop due entries;
  asyncio: one iteration of the event loop).
* The workload keeps a reference to an operation only until it completes (in a ring of
  per-millisecond completion lists), as the purgatory does; after that only the timer
  may still hold it.

One *op* = creating the operation object + adding it to the timer + either cancelling
it or having it expire and run; the workload's own bookkeeping is included and is the
same for all three, so ops/s is end-to-end throughput of this workload.

Timers compared (all with a simulated clock, in the same process, run alternately):

* ``ours``: ``broker_sim.timer.SystemTimer`` with Kafka's defaults (1 ms tick, 20 slots,
  overflow wheels), a ``ManualClock`` and a synchronous executor (due tasks run inline
  after the timer's lock is released). Cancel unlinks the entry in O(1).
* ``heapq``: the textbook lazy-deletion timer: ``heappush((expiration, seq, op))``;
  cancel sets ``op.cancelled``; due entries are popped and run unless cancelled. A
  cancelled entry therefore stays in the heap until its 30 s deadline.
* ``asyncio``: a ``SelectorEventLoop`` whose ``time()`` returns the simulated clock;
  operations are scheduled with ``loop.call_at`` and cancelled with
  ``TimerHandle.cancel``. The driver is a callback re-queued with ``call_soon`` that runs
  one 1 ms step, so each step is one real iteration of the loop (``_run_once``: it drops
  cancelled handles - asyncio rebuilds its heap once more than half of it is cancelled -
  and runs due timer handles); the loop never actually sleeps, because a ready callback is
  always queued, but it does call ``select`` with a zero timeout once per step, which is
  part of asyncio's real cost.

Measurements: CPU time of this process (``time.process_time``; the workload is
single-threaded and CPU-bound, and unlike wall time this is not inflated when other
processes share the machine) for the whole workload without tracing (best of
``--repeat`` runs, alternating implementations), then a separate run under ``tracemalloc`` for the
peak of Python-allocated memory during the workload (tracing slows Python down, so it is
never mixed with timing). Finally, our per-op cost (add + cancel of one operation in
steady state) with 10,000 vs 1,000,000 other operations pending in the timer.

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "timer", "ratios": {...}, "figures": {...}}
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import heapq
import itertools
import json
import random
import sys
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from broker_sim.timer import ManualClock, SystemTimer, TimerTask  # noqa: E402

TIMEOUT_MS = 30_000
PER_STEP = 100  # arrivals per simulated millisecond
MAX_COMPLETE_MS = 50
RING = 64  # > MAX_COMPLETE_MS, power of two
PATTERN_LEN = 100_003  # prime, so the pattern does not align with the steps
NEVER = -1


def make_pattern(seed: int = 42) -> list[int]:
    """Completion delay (ms after arrival) per operation, or NEVER (1%): cycled."""
    rng = random.Random(seed)
    return [
        NEVER if rng.random() < 0.01 else rng.randint(1, MAX_COMPLETE_MS)
        for _ in range(PATTERN_LEN)
    ]


class Result:
    def __init__(self, name: str, ops: int, seconds: float, expired: int) -> None:
        self.name = name
        self.ops = ops
        self.seconds = seconds
        self.expired = expired

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.seconds


# ---------------------------------------------------------------------------------- ours


class SyncExecutor(Executor):
    """Runs a submitted callable at once on the submitting thread."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        fut: Future[Any] = Future()
        fut.set_result(fn(*args, **kwargs))
        return fut


class WheelOp(TimerTask):
    __slots__ = ()

    def run(self) -> None:
        EXPIRED[0] += 1


EXPIRED = [0]


def run_ours(n: int, pattern: list[int]) -> int:
    clock = ManualClock(0)
    timer = SystemTimer("bench", clock=clock, executor=SyncExecutor())
    add = timer.add
    advance_clock = timer.advance_clock
    advance = clock.advance
    ring: list[list[WheelOp]] = [[] for _ in range(RING)]
    EXPIRED[0] = 0
    plen = len(pattern)
    i = 0
    step = 0
    while i < n:
        due = ring[step & (RING - 1)]
        for op in due:
            op.cancel()
        due.clear()
        for _ in range(PER_STEP if n - i >= PER_STEP else n - i):
            op = WheelOp(TIMEOUT_MS)
            add(op)
            d = pattern[i % plen]
            if d != NEVER:
                ring[(step + d) & (RING - 1)].append(op)
            i += 1
        advance(1)
        step += 1
        advance_clock(0)
    end = step + TIMEOUT_MS + 1
    while step <= end:
        due = ring[step & (RING - 1)]
        for op in due:
            op.cancel()
        due.clear()
        advance(1)
        step += 1
        advance_clock(0)
    assert timer.size == 0, timer.size
    timer.shutdown()
    return EXPIRED[0]


# --------------------------------------------------------------------------------- heapq


class HeapOp:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def run(self) -> None:
        EXPIRED[0] += 1


class HeapTimer:
    """Lazy deletion: cancel marks the op; entries leave the heap only when due."""

    def __init__(self) -> None:
        self.heap: list[tuple[int, int, HeapOp]] = []
        self.seq = itertools.count()

    def add(self, op: HeapOp, expiration: int) -> None:
        heapq.heappush(self.heap, (expiration, next(self.seq), op))

    def advance(self, now: int) -> None:
        heap = self.heap
        pop = heapq.heappop
        while heap and heap[0][0] <= now:
            op = pop(heap)[2]
            if not op.cancelled:
                op.run()


def run_heapq(n: int, pattern: list[int]) -> int:
    timer = HeapTimer()
    add = timer.add
    advance = timer.advance
    ring: list[list[HeapOp]] = [[] for _ in range(RING)]
    EXPIRED[0] = 0
    plen = len(pattern)
    now = 0
    i = 0
    step = 0
    while i < n:
        due = ring[step & (RING - 1)]
        for op in due:
            op.cancel()
        due.clear()
        for _ in range(PER_STEP if n - i >= PER_STEP else n - i):
            op = HeapOp()
            add(op, now + TIMEOUT_MS)
            d = pattern[i % plen]
            if d != NEVER:
                ring[(step + d) & (RING - 1)].append(op)
            i += 1
        now += 1
        step += 1
        advance(now)
    end = step + TIMEOUT_MS + 1
    while step <= end:
        due = ring[step & (RING - 1)]
        for op in due:
            op.cancel()
        due.clear()
        now += 1
        step += 1
        advance(now)
    assert not timer.heap
    return EXPIRED[0]


# ------------------------------------------------------------------------------- asyncio


class SimLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock is simulated milliseconds (seconds as float)."""

    sim_ms = 0

    def time(self) -> float:
        return self.sim_ms / 1000.0


class AsyncOp:
    __slots__ = ("handle",)

    def __init__(self) -> None:
        self.handle: asyncio.TimerHandle | None = None

    def cancel(self) -> None:
        self.handle.cancel()  # type: ignore[union-attr]

    def run(self) -> None:
        EXPIRED[0] += 1


def run_asyncio(n: int, pattern: list[int]) -> int:
    loop = SimLoop()
    ring: list[list[AsyncOp]] = [[] for _ in range(RING)]
    EXPIRED[0] = 0
    plen = len(pattern)
    call_at = loop.call_at
    state = {"i": 0, "step": 0, "end": None}

    def step_once() -> None:
        i = state["i"]
        step = state["step"]
        due = ring[step & (RING - 1)]
        for op in due:
            op.cancel()
        due.clear()
        if i < n:
            now_s = loop.sim_ms
            for _ in range(PER_STEP if n - i >= PER_STEP else n - i):
                op = AsyncOp()
                op.handle = call_at((now_s + TIMEOUT_MS) / 1000.0, op.run)
                d = pattern[i % plen]
                if d != NEVER:
                    ring[(step + d) & (RING - 1)].append(op)
                i += 1
            state["i"] = i
        elif state["end"] is None:
            state["end"] = step + TIMEOUT_MS + 1
        loop.sim_ms += 1
        state["step"] = step + 1
        if state["end"] is not None and step >= state["end"]:
            loop.stop()
        else:
            loop.call_soon(step_once)

    loop.call_soon(step_once)
    try:
        loop.run_forever()
        assert not loop._scheduled, len(loop._scheduled)  # type: ignore[attr-defined]
    finally:
        loop.close()
    return EXPIRED[0]


# ------------------------------------------------------------------------------ harness

RUNNERS: dict[str, Callable[[int, list[int]], int]] = {
    "ours": run_ours,
    "heapq": run_heapq,
    "asyncio": run_asyncio,
}


def timed(name: str, n: int, pattern: list[int]) -> Result:
    gc.collect()
    t0 = time.process_time()
    expired = RUNNERS[name](n, pattern)
    seconds = time.process_time() - t0
    return Result(name, n, seconds, expired)


def peak_memory(name: str, n: int, pattern: list[int]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        RUNNERS[name](n, pattern)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - base


def per_op_cost(pending: int, ops: int) -> float:
    """Seconds per (create + add + cancel) with ``pending`` other long-lived tasks waiting."""
    clock = ManualClock(0)
    timer = SystemTimer("bench-cost", clock=clock, executor=SyncExecutor())
    keep = []
    for k in range(pending):  # spread over the next 30 s, as the purgatory would have them
        op = WheelOp(TIMEOUT_MS + k % TIMEOUT_MS)
        timer.add(op)
        keep.append(op)
    add = timer.add
    advance = clock.advance
    advance_clock = timer.advance_clock
    best = float("inf")
    for _ in range(3):
        gc.collect()
        t0 = time.process_time()
        done = 0
        while done < ops:
            batch = [WheelOp(TIMEOUT_MS) for _ in range(PER_STEP)]
            for op in batch:
                add(op)
            for op in batch:
                op.cancel()
            done += PER_STEP
            advance(1)
            advance_clock(0)
        best = min(best, (time.process_time() - t0) / ops)
    assert timer.size == pending, (timer.size, pending)
    timer.shutdown()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--cost-ops", type=int, default=200_000)
    args = parser.parse_args()
    n = args.ops
    pattern = make_pattern()
    expected_expired = sum(1 for i in range(n) if pattern[i % len(pattern)] == NEVER)
    print(
        f"workload: {n:,} ops, {TIMEOUT_MS / 1000:.0f} s timeout, {PER_STEP} arrivals/ms, "
        f"{n - expected_expired:,} complete after 1-{MAX_COMPLETE_MS} ms, "
        f"{expected_expired:,} expire"
    )

    best: dict[str, Result] = {}
    for rep in range(args.repeat):
        for name in RUNNERS:
            r = timed(name, n, pattern)
            if r.expired != expected_expired:
                raise SystemExit(f"{name}: {r.expired} expired, expected {expected_expired}")
            print(f"  run {rep + 1} {name:8s} {r.seconds:7.2f} s  {r.ops_per_s:12,.0f} ops/s")
            if name not in best or r.seconds < best[name].seconds:
                best[name] = r
    peaks = {name: peak_memory(name, n, pattern) for name in RUNNERS}
    for name in RUNNERS:
        r = best[name]
        print(
            f"{name:8s} {r.ops_per_s:12,.0f} ops/s  {r.seconds / n * 1e6:6.2f} us/op  "
            f"peak {peaks[name] / 2**20:8.1f} MiB"
        )

    cost_10k = per_op_cost(10_000, args.cost_ops)
    cost_1m = per_op_cost(1_000_000, args.cost_ops)
    print(
        f"ours per-op (create+add+cancel): {cost_10k * 1e6:.2f} us with 10k pending, "
        f"{cost_1m * 1e6:.2f} us with 1M pending"
    )

    ratios = {
        "ops_vs_heapq": round(best["ours"].ops_per_s / best["heapq"].ops_per_s, 3),
        "memory_vs_heapq": round(peaks["ours"] / peaks["heapq"], 4),
        "ops_vs_asyncio": round(best["ours"].ops_per_s / best["asyncio"].ops_per_s, 3),
        "op_cost_1m_vs_10k": round(cost_1m / cost_10k, 3),
    }
    figures = {
        "ops": n,
        "timeout_ms": TIMEOUT_MS,
        "expired": expected_expired,
        "ops_per_s": {k: round(v.ops_per_s) for k, v in best.items()},
        "seconds": {k: round(v.seconds, 3) for k, v in best.items()},
        "peak_bytes": peaks,
        "op_cost_us": {"pending_10k": round(cost_10k * 1e6, 3), "pending_1m": round(cost_1m * 1e6, 3)},
        "python": sys.version.split()[0],
    }
    print(json.dumps({"benchmark": "timer", "ratios": ratios, "figures": figures}))


if __name__ == "__main__":
    main()
