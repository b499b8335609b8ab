"""Consumer processes for the group tests, watched from the test."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from tests import wire

WORKER = Path(__file__).with_name("consumer_worker.py")
ROOT = WORKER.parents[2]


class ConsumerProcess:
    """One consumer_worker.py process; its events are collected by a reader thread."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str,
                 session_ms: int = 10_000, instance_id: str | None = None, pause_ms: int = 0,
                 heartbeat_ms: int = 0) -> None:
        cmd = [sys.executable, str(WORKER), client, bootstrap, group, topic,
               "--session-ms", str(session_ms), "--pause-ms", str(pause_ms),
               "--heartbeat-ms", str(heartbeat_ms)]
        if instance_id:
            cmd += ["--instance-id", instance_id]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.stderr = tempfile.TemporaryFile()  # the client's own log, shown when a wait fails
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.stderr, env=env,
                                     text=True)
        self.lock = threading.Lock()
        self.assignments: list[tuple[float, list[int]]] = []
        self.consumed: list[tuple[int, int, str]] = []
        self.commit_failures: list[str] = []
        self.arrivals: list[tuple[float, int]] = []  # (when this process reported it, partition)
        self.closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            with self.lock:
                if event["event"] == "assigned":
                    self.assignments.append((time.monotonic(), event["partitions"]))
                elif event["event"] == "consumed":
                    self.consumed.extend(tuple(r) for r in event["records"])
                    now = time.monotonic()
                    self.arrivals.extend((now, r[0]) for r in event["records"])
                elif event["event"] == "commit_failed":
                    self.commit_failures.append(event["error"])
                else:
                    self.closed = True

    @property
    def assignment(self) -> list[int]:
        with self.lock:
            return self.assignments[-1][1] if self.assignments else []

    def records(self) -> list[tuple[int, int, str]]:
        with self.lock:
            return list(self.consumed)

    def first_arrival(self, partition: int, after: float) -> float | None:
        """When this consumer first reported a record of ``partition`` after ``after``."""
        with self.lock:
            return next((t for t, p in self.arrivals if p == partition and t > after), None)

    def log_tail(self, lines: int = 15) -> str:
        self.stderr.seek(0)
        tail = self.stderr.read().decode(errors="replace").splitlines()[-lines:]
        return "\n".join(tail)

    def terminate(self, timeout: float = 30) -> None:
        """Close cleanly (the consumer leaves its group)."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout)
        self._reader.join(5)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def wait_for(condition: Callable[[], bool], timeout: float, what: str,
             show: Iterable[ConsumerProcess] = ()) -> float:
    """``tests.wire.wait_for`` at 50 ms, returning when ``condition`` became true
    (monotonic); on a timeout the error carries the end of each process's log in ``show``."""
    try:
        wire.wait_for(condition, timeout, interval=0.05, what=what)
    except AssertionError as e:
        logs = "".join(f"\n--- consumer {c.proc.pid} (exit {c.proc.poll()}), assignment "
                       f"{c.assignment}, {len(c.records())} records, commit failures "
                       f"{c.commit_failures[-3:]}:\n{c.log_tail()}" for c in show)
        raise AssertionError(f"{e}{logs}") from None
    return time.monotonic()


def covers(consumers: list[ConsumerProcess], partitions: int) -> bool:
    """The consumers' assignments are disjoint and cover every partition."""
    owned = [p for c in consumers for p in c.assignment]
    return sorted(owned) == list(range(partitions))
