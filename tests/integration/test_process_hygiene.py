"""Clean process trees: the children of ``pyq-broker cluster`` and of an ``EmbeddedCluster``
die with their parent, ``kill -9`` included; every server stops soon after SIGTERM.

Processes are checked by the pids the test recorded, through /proc (a zombie counts as
gone); whatever a failing test leaves behind is killed by those pids in ``finally``."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from broker_sim.lifeline import Lifeline
from tests.cli.support import pid_alive
from tests.wire import create_topic, wait_for_topic_everywhere

pytestmark = pytest.mark.integration

PYQ_BROKER = str(Path(sys.executable).parent / "pyq-broker")


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """The pids still alive after ``timeout`` seconds (empty as soon as all are gone)."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in pids if pid_alive(p)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        if pid_alive(pid):
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGKILL)


def read_until(proc: subprocess.Popen[str], marker: str) -> str:
    lines: list[str] = []
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, "the process exited early:\n" + "".join(lines)
        lines.append(line)
        if line.startswith(marker):
            return "".join(lines)


@pytest.mark.cluster
def test_kill_9_of_the_cluster_command_leaves_no_process(tmp_path):
    assert Path(PYQ_BROKER).exists(), "the pyq-broker entry point is not installed in the venv"
    proc = subprocess.Popen([PYQ_BROKER, "cluster", "--brokers", "2", "--data-dir", str(tmp_path)],
                            stdout=subprocess.PIPE, text=True)
    children: list[int] = []
    try:
        out = read_until(proc, "bootstrap servers:")
        children = [int(m) for m in re.findall(r"pid (\d+)", out)]
        assert len(children) == 3  # the controller and 2 brokers
        assert all(pid_alive(p) for p in children)

        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert wait_gone(children, 2.0) == [], "children outlived the killed cluster command"
    finally:
        kill_all([proc.pid, *children])
        proc.wait(10)


def test_a_signal_arriving_while_the_servers_handler_runs_still_stops_it():
    """A server whose parent dies gets two SIGTERMs (the parent-death signal and the
    lifeline's); Python may run the second handler inside the first, in the main thread. Here
    a profile hook sends another SIGTERM at every call the running handler makes: a handler
    that takes a lock (``threading.Event.set`` did) waits for itself forever."""
    program = textwrap.dedent("""
        import os, signal, sys, threading
        from broker_sim.cli import _wait_for_signal

        sent = 0

        def in_handler(frame):
            handler = signal.getsignal(signal.SIGTERM)
            code = getattr(handler, "__code__", None)
            while frame is not None:
                if frame.f_code is code:
                    return True
                frame = frame.f_back
            return False

        def another_sigterm_at_each_call(frame, event, arg):
            global sent
            if event in ("call", "c_call") and sent < 20 and in_handler(frame):
                sent += 1
                os.kill(os.getpid(), signal.SIGTERM)

        def first_sigterm():
            while signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
                threading.Event().wait(0.001)
            os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=first_sigterm, daemon=True).start()
        sys.setprofile(another_sigterm_at_each_call)
        _wait_for_signal()
        sys.setprofile(None)
        print("stopped", flush=True)
    """)
    try:
        done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                              timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail("the server's signal handler deadlocked on a signal arriving while it ran")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "stopped\n"


@pytest.mark.cluster
def test_an_embedded_clusters_processes_die_with_its_owner(tmp_path):
    owner = textwrap.dedent(f"""
        import time
        from connector.cluster import EmbeddedCluster
        cluster = EmbeddedCluster(brokers=2, data_dir={str(tmp_path)!r}).start()
        print("pids", *cluster.pids(), flush=True)
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", owner], stdout=subprocess.PIPE, text=True)
    children: list[int] = []
    try:
        children = [int(p) for p in read_until(proc, "pids").split()[1:]]
        assert len(children) == 3
        os.kill(proc.pid, signal.SIGKILL)  # no finally, no atexit, no __exit__ runs
        proc.wait(10)
        assert wait_gone(children, 2.0) == [], "the cluster outlived the killed notebook/test"
    finally:
        kill_all([proc.pid, *children])
        proc.wait(10)


def test_the_lifeline_ends_a_child_when_the_parent_closes_it():
    """The pipe alone (as when the parent dies): the child sees EOF and stops itself."""
    child = "from broker_sim.lifeline import hold; import time; hold(); print('ready', flush=True); time.sleep(60)"
    lifeline = Lifeline()
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True,
                            env=lifeline.child_env(), pass_fds=lifeline.pass_fds)
    try:
        lifeline.started()
        read_until(proc, "ready")
        lifeline.close()
        assert proc.wait(5) == -signal.SIGTERM  # it sent itself SIGTERM (no handler here)
    finally:
        lifeline.close()
        kill_all([proc.pid])
        proc.wait(5)


def test_a_child_whose_parent_is_already_gone_does_not_start():
    """The race between fork and prctl: the recorded parent pid is not our parent."""
    lifeline = Lifeline()
    env = lifeline.child_env()
    _, fd, main = env["PYQ_LIFELINE"].split(":")
    env["PYQ_LIFELINE"] = f"1:{fd}:{main}"  # "our parent was pid 1": it is not
    proc = subprocess.run([sys.executable, "-c", "from broker_sim.lifeline import hold; hold()"],
                          env=env, pass_fds=lifeline.pass_fds, capture_output=True, text=True,
                          timeout=30)
    lifeline.close()
    assert proc.returncode == 1
    assert "is gone: not starting" in proc.stderr


@pytest.mark.cluster
def test_sigterm_stops_a_broker_and_the_controller_within_a_second(cluster_factory):
    cluster = cluster_factory(2)
    create_topic(cluster.brokers[0].port, "busy", partitions=2, replication_factor=2)
    wait_for_topic_everywhere(cluster.bootstrap_servers, "busy", 2)
    # An upper bound with slack for a loaded machine, not a benchmark: each takes ~0.1 s.
    for proc in (cluster.brokers[1], cluster.controller):
        assert proc.proc is not None
        started = time.monotonic()
        proc.proc.send_signal(signal.SIGTERM)
        code = proc.proc.wait(10)
        elapsed = time.monotonic() - started
        assert code == 0, proc.output()[-2000:]
        assert elapsed < 1.5, f"{proc.log_path.name} took {elapsed:.2f} s to stop after SIGTERM"


@pytest.mark.parametrize("argv,ready", [(["--port", "0"], "listening on "),
                                        (["cluster", "--brokers", "1"], "bootstrap servers: ")],
                         ids=["broker", "cluster"])
def test_a_sigterm_right_after_the_ready_line_stops_cleanly(tmp_path, argv, ready):
    """The stop signals are caught before the line a launcher waits for is printed: a SIGTERM
    sent the moment it appears is a clean stop (exit 0), never the default action (-15,
    which would leave a cluster's children to their lifelines)."""
    proc = subprocess.Popen([sys.executable, "-m", "broker_sim", *argv, "--data-dir",
                             str(tmp_path / "d")], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if line.startswith(ready):
                proc.send_signal(signal.SIGTERM)
                break
        assert proc.wait(60) == 0, "".join(seen)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
