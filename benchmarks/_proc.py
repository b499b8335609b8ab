"""CPU time of processes, from /proc, for the benchmarks' figures (Linux only)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TypeVar

_CLK_TCK = os.sysconf("SC_CLK_TCK")

T = TypeVar("T", bound="Timed")


def proc_user_system_seconds(pid: int) -> tuple[float, float]:
    """(utime, stime) of a process (all its threads), in seconds."""
    fields = _stat(pid)
    return int(fields[11]) / _CLK_TCK, int(fields[12]) / _CLK_TCK  # fields 14 and 15


def proc_cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds."""
    return sum(proc_user_system_seconds(pid))


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


def _stat(pid: int) -> list[bytes]:
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    return stat[stat.rindex(b")") + 2 :].split()  # fields from 3 (state) on


def tree_cpu_snapshot(root: int) -> dict[int, float]:
    """CPU seconds (utime + stime + reaped children's cutime + cstime) of ``root`` and of
    each of its descendants, by pid: the Spark JVM with its Python workers."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = _stat(int(entry))
            except OSError:
                continue
            parents[int(entry)] = int(fields[1])
            cpu[int(entry)] = sum(int(x) for x in fields[11:15]) / _CLK_TCK
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in tree:
                tree.add(pid)
                frontier.append(pid)
    return {pid: cpu[pid] for pid in tree if pid in cpu}


def tree_cpu_delta(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU used between two snapshots. A process gone by ``after`` was reaped by its parent
    in the tree, whose cutime now holds that process's whole lifetime: its ``before`` share
    is subtracted so it is not counted twice (approximate: CPU a process used after
    ``before`` and then lost by being re-parented outside the tree is not seen)."""
    return (sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())
            - sum(cpu for pid, cpu in before.items() if pid not in after))


class Timed:
    """A ``with`` block's wall time, this process's CPU and the CPU of other processes.

    ``wall`` (perf_counter), ``client_cpu`` (this process: the client under test) and
    ``server_cpu`` (the summed utime + stime of ``server_pids``: brokers, a socket server)
    are set when the block exits.
    """

    def __init__(self, server_pids: list[int]) -> None:
        self.server_pids = server_pids
        self.wall = self.client_cpu = self.server_cpu = 0.0

    def _servers(self) -> float:
        return sum(proc_cpu_seconds(pid) for pid in self.server_pids)

    def __enter__(self: T) -> T:
        self._s0 = self._servers()
        self._c0 = time.process_time()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._t0
        self.client_cpu = time.process_time() - self._c0
        self.server_cpu = self._servers() - self._s0
