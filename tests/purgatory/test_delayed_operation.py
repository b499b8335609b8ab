"""DelayedOperation on its own: exactly-once completion, expiry, the try-lock protocol."""

from __future__ import annotations

import threading

from tests.purgatory.purgatory_helpers import MockOperation, manual_purgatory


def test_force_complete_happens_once_and_cancels_the_timeout() -> None:
    purgatory, clock = manual_purgatory()
    op = MockOperation(100)
    assert not purgatory.try_complete_else_watch(op, ["k"])
    assert purgatory.num_delayed() == 1
    assert op.force_complete() is True
    assert op.is_completed and op.completions == 1
    assert purgatory.num_delayed() == 0  # the timer entry was unlinked at once
    assert op.force_complete() is False
    clock.advance(100)
    purgatory.reaper.run_once(0)
    assert op.completions == 1 and op.expirations == 0


def test_expiry_completes_then_reports_expiration() -> None:
    purgatory, clock = manual_purgatory()
    order: list[str] = []

    class Op(MockOperation):
        def on_complete(self) -> None:
            order.append("complete")

        def on_expiration(self) -> None:
            order.append("expire")

    op = Op(100)
    purgatory.try_complete_else_watch(op, ["k"])
    clock.advance(99)
    purgatory.reaper.run_once(0)
    assert order == []
    clock.advance(1)
    purgatory.reaper.run_once(0)
    assert order == ["complete", "expire"] and op.is_completed
    op.run()  # a second expiry (cannot happen, but must be harmless)
    assert order == ["complete", "expire"]


def test_maybe_try_complete_does_not_block_on_a_held_lock() -> None:
    lock = threading.RLock()
    op = MockOperation(1000, lock)
    op.completable = True
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with lock:
            held.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(10)
    assert op.maybe_try_complete() is False  # returned without waiting for the holder
    assert op._try_again is True and op.tries == 0
    release.set()
    thread.join(10)
    # The holder here was not running try_complete, so nothing picked the flag up:
    # the next attempt does.
    assert op.maybe_try_complete() is True and op.completions == 1


def test_safe_try_complete_takes_the_lock() -> None:
    op = MockOperation(1000)
    assert op.safe_try_complete() is False
    op.completable = True
    assert op.safe_try_complete() is True and op.completions == 1
    assert op.safe_try_complete() is False  # already completed


def test_shared_lock_between_operations() -> None:
    lock = threading.RLock()
    a, b = MockOperation(10, lock), MockOperation(10, lock)
    assert a.lock is b.lock
    a.completable = b.completable = True
    with lock:  # reentrant: the holder itself may check
        assert a.maybe_try_complete() and b.maybe_try_complete()
