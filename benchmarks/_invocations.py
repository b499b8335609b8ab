"""The median of several invocations of a benchmark, each in its own process.

A head-to-head ratio on 2 cores moves from one invocation to the next far more than
between the interleaved rounds of one (the page cache, the VM's memory, what else runs), so
the JSON a benchmark reports is the median of ``--invocations`` (3) whole invocations, each
a fresh process with fresh brokers, and every invocation's own JSON line is printed before
it. ``run`` is called by a benchmark's ``main`` before it does anything: it returns
``False`` in a child (the caller then runs one invocation as before) and ``True`` once the
parent printed the combined line.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from typing import Any

_CHILD = "PYQ_BENCH_INVOCATION"


def run(name: str, invocations: int) -> bool:
    """Run this benchmark ``invocations`` times as child processes (the command line this
    process was started with, ``sys.orig_argv``), echo
    their output, then print ``{"benchmark": name, "ratios": {median of each ratio},
    "figures": {"invocations": [each invocation's JSON]}}``. ``False`` when this process is
    a child or a single invocation was asked for."""
    if os.environ.get(_CHILD) or invocations <= 1:
        return False
    reports: list[dict[str, Any]] = []
    for i in range(invocations):
        print(f"=== invocation {i + 1} of {invocations} ===", flush=True)
        child = subprocess.Popen(sys.orig_argv, stdout=subprocess.PIPE, text=True,
                                 env={**os.environ, _CHILD: str(i + 1)})
        assert child.stdout is not None
        last = ""
        for line in child.stdout:
            print(line, end="", flush=True)
            if line.strip():
                last = line
        if child.wait() != 0:
            raise SystemExit(f"invocation {i + 1} failed (exit status {child.returncode})")
        report = json.loads(last)
        if report.get("benchmark") != name:
            raise SystemExit(f"invocation {i + 1} did not end with the {name} JSON line")
        reports.append(report)
    names = sorted({k for r in reports for k in r["ratios"]})
    ratios = {k: round(statistics.median(r["ratios"][k] for r in reports if k in r["ratios"]), 4)
              for k in names}
    print(f"{name}: medians of {invocations} invocations")
    for k in names:
        values = ", ".join(f"{r['ratios'][k]:.3f}" for r in reports if k in r["ratios"])
        print(f"  {k:28s} {ratios[k]:.3f}   ({values})")
    print(json.dumps({"benchmark": name, "ratios": ratios, "figures": {"invocations": reports}}))
    return True
