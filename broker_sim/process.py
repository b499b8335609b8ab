"""Run a broker as a separate OS process (for tests, the demo and local clusters).

The child is ``python -m broker_sim`` with its output going to a log file in the data
directory; :meth:`BrokerProcess.start` waits for its ``listening on HOST:PORT`` line, so
with ``port=0`` the caller learns the ephemeral port the broker picked. Stopping is by the
child's own process id: SIGTERM for a clean shutdown, SIGKILL to simulate a crash.

Every child holds a :class:`~broker_sim.lifeline.Lifeline` to this process: if this
process dies without stopping it (``kill -9`` included), the child shuts itself down.
A child started with ``metrics.port`` also reports ``metrics on HOST:PORT`` before its
listening line; :attr:`ManagedProcess.metrics_port` is that port. A broker with
``schema.registry.listeners`` reports ``schema registry on URL``
(:attr:`ManagedProcess.schema_registry_url`).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TypeVar

from .lifeline import Lifeline

_LISTENING = re.compile(r"^listening on (\S+):(\d+)$", re.M)
_LISTENER = re.compile(r"^listener (\w+)://(\S+):(\d+)$", re.M)
_METRICS = re.compile(r"^metrics on (\S+):(\d+)$", re.M)
_SCHEMA_REGISTRY = re.compile(r"^schema registry on (\S+)$", re.M)

P = TypeVar("P", bound="ManagedProcess")


class ManagedProcess:
    """A child process that reports ``listening on HOST:PORT`` when it is ready."""

    def __init__(self, data_dir: Path, command: list[str], log_name: str, host: str = "127.0.0.1") -> None:
        self.data_dir = Path(data_dir)
        self.command = command
        self.host = host
        self.port: int | None = None
        #: Listener name -> "host:port", from the child's ``listener NAME://HOST:PORT`` lines.
        self.listeners: dict[str, str] = {}
        #: Port of the child's metrics endpoint, from its ``metrics on HOST:PORT`` line.
        self.metrics_port: int | None = None
        #: URL of the child's schema registry, from its ``schema registry on URL`` line.
        self.schema_registry_url: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._lifeline: Lifeline | None = None
        self.log_path = self.data_dir / log_name

    def _command(self) -> list[str]:
        return list(self.command)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self: P, timeout: float = 60.0) -> P:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cmd = self._command()
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self._drop_lifeline()
        lifeline = self._lifeline = Lifeline()
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                         env=lifeline.child_env(), pass_fds=lifeline.pass_fds)
        lifeline.started()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log_path.read_bytes()[offset:].decode(errors="replace")
            m = _LISTENING.search(text)
            if m:
                self.port = int(m.group(2))
                # A broker prints its listener lines before the listening line.
                self.listeners = {n: f"{h}:{p}" for n, h, p in _LISTENER.findall(text)}
                metrics = _METRICS.search(text)
                self.metrics_port = int(metrics.group(2)) if metrics else None
                registry = _SCHEMA_REGISTRY.search(text)
                self.schema_registry_url = registry.group(1) if registry else None
                return self
            if self.proc.poll() is not None:
                self._drop_lifeline()
                raise RuntimeError(f"{self.command[:4]} exited with code {self.proc.returncode}:\n{text[-3000:]}")
            time.sleep(0.05)
        self.kill()
        raise TimeoutError(f"{self.command[:4]} did not report its listen address within {timeout}s")

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM and wait; SIGKILL if it does not exit in time. Returns the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            self._drop_lifeline()
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGCONT)  # a paused process could not act on SIGTERM
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None
        finally:
            self._drop_lifeline()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._drop_lifeline()

    def _drop_lifeline(self) -> None:
        """Close our end of the lifeline (after the child exited, or before a new one)."""
        lifeline, self._lifeline = self._lifeline, None
        if lifeline is not None:
            lifeline.close()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def pause(self) -> None:
        """SIGSTOP: the process stays alive but does nothing (a stuck broker)."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def __enter__(self: P) -> P:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class BrokerProcess(ManagedProcess):
    """``python -m broker_sim`` as a child; a restart keeps the port it first got."""

    def __init__(self, data_dir: Path, port: int = 0, broker_id: int = 0, host: str = "127.0.0.1",
                 overrides: dict[str, str] | None = None, python: str = sys.executable,
                 add_scram: list[str] | None = None, log_args: list[str] | None = None) -> None:
        super().__init__(data_dir, [], f"broker-{broker_id}.out", host)
        #: extra command-line arguments, e.g. ``["--log-format", "json"]``
        self.log_args = list(log_args or [])
        self.requested_port = port
        self.broker_id = broker_id
        self.overrides = dict(overrides or {})
        self.add_scram = list(add_scram or [])
        self.python = python

    def _command(self) -> list[str]:
        port = self.port if self.port is not None else self.requested_port
        cmd = [self.python, "-m", "broker_sim", "--data-dir", str(self.data_dir), "--host", self.host,
               "--port", str(port), "--broker-id", str(self.broker_id)]
        overrides = dict(self.overrides)
        if "listeners" in overrides and self.listeners:  # a restart keeps every listener's port
            overrides["listeners"] = ",".join(f"{n}://{a}" for n, a in self.listeners.items())
        if "schema.registry.listeners" in overrides and self.schema_registry_url:
            overrides["schema.registry.listeners"] = self.schema_registry_url  # and the registry's
        for k, v in overrides.items():
            cmd += ["--override", f"{k}={v}"]
        for spec in self.add_scram:
            cmd += ["--add-scram", spec]
        return cmd + self.log_args
