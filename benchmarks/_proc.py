"""CPU time of processes, from /proc, for the benchmarks' figures (Linux only)."""

from __future__ import annotations

import os
from pathlib import Path

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    fields = stat[stat.rindex(b")") + 2 :].split()  # fields from 3 (state) on
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK  # fields 14 and 15


def tree_cpu_seconds(root: int) -> float:
    """utime + stime of a process and of all its living descendants (for instance Spark's
    JVM and its Python workers)."""
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        try:
            total += proc_cpu_seconds(pid)
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        todo.extend(int(c) for c in children)
    return total
