"""Broker sessions at the controller, on a manual clock: a broker that stops heartbeating is
fenced one session timeout later, but a controller that was itself stalled past half a
session (paused, starved: its timer runs the expiry late) gives the broker a fresh session
instead of fencing it on silence it could not have heard."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_sim.common import ManualClock
from broker_sim.controller.controller import Controller
from broker_sim.timer import SystemTimer
from tests.timer.timer_helpers import SyncExecutor

SESSION_MS = 3000


class Stallable:
    """A lone controller whose session timer runs on a manual clock."""

    def __init__(self, data_dir: Path) -> None:
        self.clock = ManualClock(0)
        self.timer = SystemTimer("test-sessions", clock=self.clock, executor=SyncExecutor())
        self.controller = Controller(data_dir, self.timer, session_timeout_ms=SESSION_MS)
        self.controller.heartbeat(0, "127.0.0.1", 9000, "inc-0")

    def run_timer(self, ms: int) -> None:
        """The clock moves ``ms`` at once, then the timer runs what is due (a stall when
        ``ms`` spans a session)."""
        self.clock.advance(ms)
        while self.timer.advance_clock(0):
            pass

    def alive(self) -> bool:
        return self.controller.image.brokers[0].alive


@pytest.fixture
def c(tmp_path: Path) -> Iterator[Stallable]:
    stallable = Stallable(tmp_path)
    yield stallable
    stallable.controller.close()
    stallable.timer.shutdown(wait=False)


def test_a_silent_broker_is_fenced_one_session_later(c):
    c.run_timer(SESSION_MS - 1)
    assert c.alive()
    c.run_timer(1)
    assert not c.alive()


def test_a_stalled_controller_gives_a_fresh_session_instead_of_fencing(c):
    c.run_timer(3 * SESSION_MS)  # the expiry runs two sessions late
    assert c.alive()
    c.controller.heartbeat(0, "127.0.0.1", 9000, "inc-0")  # its heartbeat, read after the stall
    c.run_timer(SESSION_MS - 1)
    assert c.alive()


def test_after_the_fresh_session_a_broker_still_silent_is_fenced(c):
    c.run_timer(3 * SESSION_MS)
    assert c.alive()
    c.run_timer(2 * SESSION_MS - 1)
    assert c.alive()
    c.run_timer(1)
    assert not c.alive()


def test_an_expiry_less_than_half_a_session_late_still_fences(c):
    c.run_timer(SESSION_MS + SESSION_MS // 2)
    assert not c.alive()
