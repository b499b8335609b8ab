"""What the request metrics cost per request: micro-benchmark and a broker before/after.

Two measurements, one run:

* **record** (micro): the cost a network processor pays per answered request,
  ``RequestStats.record`` (one ``monotonic_ns``, one bisect, four list additions), next to
  the obvious alternative, a ``prometheus_client`` Histogram child observing the same
  latency plus two Counter children for the bytes (each a lock round trip), and next to
  a bare ``time.monotonic_ns()`` call for scale. Each is timed over ``--calls`` calls
  (best of 5 rounds), in ns per request. Ratio ``record_vs_prometheus_histogram``.
* **broker** (end to end, optional with ``--before REV``): a broker process of git
  revision ``--now`` (default: the working tree) and one of REV (each checked out with
  ``git worktree`` in a temporary directory; e.g. the commit that added the metrics and
  its parent) answer the same stream of
  small requests (Metadata for one topic, one blocking client, one request in flight, so
  the rate is bound by per-request costs rather than bytes) for ``--seconds`` per run,
  alternating, ``--runs`` runs each; the median requests/s per side and the ratio
  ``requests_per_s_now_vs_before`` are reported. On a shared machine the noise of this
  end-to-end figure is several percent, far above the recorded cost; it shows there is no
  visible regression, the micro-benchmark gives the cost itself.

    python -m benchmarks.request_stats [--calls 1000000]
        [--before 3e82793 --now 273ae34 --seconds 5 --runs 3]

Prints a human summary, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def micro(calls: int) -> dict[str, float]:
    from prometheus_client import CollectorRegistry, Counter, Histogram

    from broker_sim.network.request_stats import LATENCY_BUCKETS_S, RequestStats

    stats = RequestStats()
    registry = CollectorRegistry()
    hist = Histogram("lat", "", ["api"], buckets=LATENCY_BUCKETS_S, registry=registry)
    bytes_in = Counter("bin", "", ["api"], registry=registry)
    bytes_out = Counter("bout", "", ["api"], registry=registry)
    h, bi, bo = hist.labels("Produce"), bytes_in.labels("Produce"), bytes_out.labels("Produce")
    mono = time.monotonic_ns

    base = mono()  # "received at": every call measures from here, as a request would

    def ours() -> None:
        record = stats.record
        for _ in range(calls):
            record(0, base, 1200, 60)

    def prom() -> None:
        for _ in range(calls):
            h.observe((mono() - base) / 1e9)
            bi.inc(1200)
            bo.inc(60)

    def clock() -> None:
        for _ in range(calls):
            mono()

    def empty() -> None:
        for _ in range(calls):
            pass

    out = {}
    for name, fn in (("empty_loop", empty), ("monotonic_ns", clock), ("record", ours),
                     ("prometheus_histogram", prom)):
        best = min(_timed(fn) for _ in range(5))
        out[name] = best / calls * 1e9
    # Net of the loop itself; both include the one clock read a request needs.
    for name in ("monotonic_ns", "record", "prometheus_histogram"):
        out[name] -= out["empty_loop"]
    return out


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _broker_rate(tree: Path, seconds: float) -> float:
    """Requests/s of one blocking client against a broker started from ``tree``."""
    with tempfile.TemporaryDirectory() as d:
        proc = subprocess.Popen([sys.executable, "-m", "broker_sim", "--data-dir", d, "--port", "0",
                                 "--log-level", "WARNING"], cwd=tree, stdout=subprocess.PIPE,
                                text=True, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})
        try:
            assert proc.stdout is not None
            port = 0
            for line in proc.stdout:
                if line.startswith("listening on"):
                    port = int(line.rsplit(":", 1)[1])
                    break
            from broker_sim.network.blocking_client import BlockingConnection
            from broker_sim.protocol.api import ApiKey

            conn = BlockingConnection("127.0.0.1", port, "bench")
            body = {"topics": [], "allow_auto_topic_creation": False,
                    "include_cluster_authorized_operations": False,
                    "include_topic_authorized_operations": False}
            for _ in range(200):  # warm up
                conn.request(ApiKey.METADATA, 9, body)
            n, start = 0, time.perf_counter()
            deadline = start + seconds
            while True:
                for _ in range(100):
                    conn.request(ApiKey.METADATA, 9, body)
                n += 100
                if time.perf_counter() >= deadline:
                    break
            rate = n / (time.perf_counter() - start)
            conn.close()
            return rate
        finally:
            proc.terminate()
            proc.wait(10)


def broker(before: str, now_rev: str | None, seconds: float, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        trees: dict[str | None, Path] = {None: ROOT}
        try:
            for rev in {before, now_rev} - {None}:
                trees[rev] = Path(d) / f"tree-{rev}"
                subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach",
                                str(trees[rev]), str(rev)], check=True, capture_output=True)
            now_rates, old_rates = [], []
            for _ in range(runs):
                now_rates.append(_broker_rate(trees[now_rev], seconds))
                old_rates.append(_broker_rate(trees[before], seconds))
        finally:
            for rev, tree in trees.items():
                if rev is not None:
                    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                    str(tree)], check=True, capture_output=True)
    now, was = statistics.median(now_rates), statistics.median(old_rates)
    return {"before": before, "now": now_rev or "working tree", "now_requests_per_s": now_rates, "before_requests_per_s": old_rates,
            "now_median": now, "before_median": was, "ratio": now / was}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=1_000_000)
    p.add_argument("--before", help="git revision to compare a broker process against")
    p.add_argument("--now", help="git revision for the 'now' side (default: the working tree)")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    m = micro(args.calls)
    print(f"per request: RequestStats.record {m['record']:.0f} ns; prometheus_client histogram "
          f"+ 2 counters {m['prometheus_histogram']:.0f} ns; time.monotonic_ns() alone "
          f"{m['monotonic_ns']:.0f} ns (each net of the loop)")
    ratios = {"record_vs_prometheus_histogram": m["record"] / m["prometheus_histogram"]}
    figures: dict[str, object] = {"ns_per_call": m}
    if args.before:
        b = broker(args.before, args.now, args.seconds, args.runs)
        print(f"broker, Metadata round trips/s: now ({b['now']}) {b['now_median']:.0f}, before ({args.before}) "
              f"{b['before_median']:.0f}: ratio {b['ratio']:.3f} "
              f"(runs now {[round(x) for x in b['now_requests_per_s']]}, "
              f"before {[round(x) for x in b['before_requests_per_s']]})")
        ratios["requests_per_s_now_vs_before"] = b["ratio"]
        figures["broker"] = b
    print(json.dumps({"benchmark": "request_stats", "ratios": ratios, "figures": figures}))


if __name__ == "__main__":
    main()
