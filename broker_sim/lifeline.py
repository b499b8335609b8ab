"""Children die with their parent: the lifeline between a process and the servers it starts.

A server process started by :class:`~broker_sim.process.ManagedProcess` (every child of
``pyq-broker cluster``, :class:`~broker_sim.cluster.LocalCluster` and ``EmbeddedCluster``)
must not outlive the process that started it, however that one ends — ``kill -9``
included, when no ``finally`` or ``atexit`` of the parent runs. Two mechanisms, both set up
by :func:`Lifeline.child_env` (parent side, before the fork) and :func:`hold` (child side,
first thing in ``pyq-broker``'s ``main``):

- **A pipe.** The parent creates a pipe, passes the read end to the child (``pass_fds``)
  and keeps the write end, writing nothing. When the parent dies, the kernel closes its
  descriptors, the child's blocking read returns EOF, and the child sends itself SIGTERM:
  the same clean shutdown as ``kill``, within a second (a child still running 1.5 s later
  exits hard, ``os._exit``). This works whatever the parent
  thread was, and whether it died by a signal, a crash or a plain exit without stopping
  its children.
- **PR_SET_PDEATHSIG** (Linux, through ``prctl`` via ctypes): the kernel sends the child
  SIGTERM when the parent dies — also if the pipe's write end leaked into another process
  (a ``fork()`` without ``exec`` in the parent keeps it open). Linux sends it when the
  *thread* that forked the child ends, so it is asked for only when the child was started
  from the parent's main thread (which ends with the process).

The race between the fork and ``prctl`` (the parent dying in between, before the child
asked) is closed by comparing ``getppid()`` with the parent's pid passed in the
environment; the pipe has no such race (EOF is sticky). Both arm only when
``PYQ_LIFELINE`` is set, so a server started by hand is not affected; the variable is
removed from the child's environment once read, so processes it starts do not inherit it.

Threading: :func:`hold` starts one daemon thread (``lifeline``) that only reads the pipe.
It is a plain ``threading.Thread``, not a :class:`~broker_sim.common.ShutdownableThread`,
on purpose: it has no rounds and no stop. It lives as long as the process, blocked in one
``read`` that only the parent's death ends, and that end *is* its work (it then stops the
process); a stop API would be one nobody may call, since a child that stopped its watcher
could outlive its parent. (This module also stays at the bottom of the layers: it imports
nothing of pyq, ``MAY_IMPORT`` in ``tests/test_import_layers.py``.)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import signal
import sys
import threading
import time

log = logging.getLogger(__name__)

ENV = "PYQ_LIFELINE"
_PR_SET_PDEATHSIG = 1
#: After the parent is gone and SIGTERM was sent: exit hard if still alive this much later.
#: A clean stop takes 0.02-0.3 s; this is the backstop for one that hangs, so that an orphan
#: never lingers. (It was first reached by a handler that deadlocked on the second of the two
#: SIGTERMs a child gets when its parent dies: see ``broker_sim.cli._wait_for_signal``.)
_HARD_EXIT_AFTER_S = 1.5


class Lifeline:
    """The parent's side for one child: create before starting it, close after it exited."""

    def __init__(self) -> None:
        self._read_fd, self._write_fd = os.pipe()  # both non-inheritable (PEP 446)

    def child_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The child's environment: ``base`` (default ``os.environ``) plus the lifeline."""
        main = threading.current_thread() is threading.main_thread()
        env = dict(os.environ if base is None else base)
        env[ENV] = f"{os.getpid()}:{self._read_fd}:{int(main)}"
        return env

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return (self._read_fd,)

    def started(self) -> None:
        """The child has its copy of the read end: drop ours."""
        if self._read_fd >= 0:
            os.close(self._read_fd)
            self._read_fd = -1

    def close(self) -> None:
        """Close the write end: a child still running sees EOF and shuts down."""
        self.started()
        if self._write_fd >= 0:
            os.close(self._write_fd)
            self._write_fd = -1


def _set_pdeathsig(sig: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch(fd: int, parent: int) -> None:
    try:
        while os.read(fd, 4096):
            pass  # the parent never writes; anything read is ignored
    except OSError:
        pass
    log.warning("parent process %d is gone: shutting down", parent)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(_HARD_EXIT_AFTER_S)
    log.error("still running %.1f s after the parent died: exiting now", _HARD_EXIT_AFTER_S)
    os._exit(1)


def hold() -> None:
    """Child side: arm both mechanisms if ``PYQ_LIFELINE`` is set (see the module doc).

    Exits at once (status 1) if the parent is already gone."""
    spec = os.environ.pop(ENV, None)
    if not spec:
        return
    parent_s, fd_s, main_s = spec.split(":")
    parent, fd = int(parent_s), int(fd_s)
    os.set_inheritable(fd, False)
    if main_s == "1":
        _set_pdeathsig(signal.SIGTERM)
    if os.getppid() != parent:  # died before prctl took effect: nobody would tell us
        print(f"parent process {parent} is gone: not starting", file=sys.stderr, flush=True)
        os._exit(1)
    threading.Thread(target=_watch, args=(fd, parent), name="lifeline", daemon=True).start()
