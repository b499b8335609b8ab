"""Running the ``pyq`` command: as a separate process (as a user does), or in this process
with stdin, stdout and stderr swapped for strings (the same code, without the ~0.7 s it
takes a new interpreter to import the client)."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from typing import NamedTuple

import pytest

from connector.cli.main import main

PYQ = [sys.executable, "-m", "connector.cli.main"]


def pyq(*args: str, input: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``pyq ARGS`` in a new process."""
    return subprocess.run([*PYQ, *args], input=input, capture_output=True, text=True,
                          timeout=timeout)


class Result(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def pyq_here(monkeypatch: pytest.MonkeyPatch, *args: str, input: str = "") -> Result:
    """``pyq ARGS`` in this process: ``main(args)`` with its standard streams captured."""
    stdout, stderr = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(input.encode())))
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main(list(args))
        except SystemExit as e:  # argparse: --help (0) and usage errors (2)
            code = int(e.code or 0)
    return Result(code, stdout.getvalue(), stderr.getvalue())


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is gone for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def terminate(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
