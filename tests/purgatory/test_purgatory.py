"""The purgatory: watching, checking, expiring, purging, and the races between them."""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial

import pytest

from broker_sim.purgatory import DelayedOperationPurgatory
from broker_sim.timer import SystemClock
from tests.purgatory.purgatory_helpers import MockOperation, manual_purgatory


def test_operation_completable_at_once_is_neither_watched_nor_delayed() -> None:
    purgatory, _ = manual_purgatory()
    op = MockOperation(1000)
    op.completable = True
    assert purgatory.try_complete_else_watch(op, ["a", "b"]) is True
    assert op.completions == 1
    assert purgatory.watched() == 0 and purgatory.num_delayed() == 0


def test_watch_then_check_and_complete() -> None:
    purgatory, _ = manual_purgatory()
    op1, op2 = MockOperation(1000), MockOperation(1000)
    assert not purgatory.try_complete_else_watch(op1, ["a"])
    assert not purgatory.try_complete_else_watch(op2, ["a", "b"])
    assert purgatory.watched() == 3 and purgatory.num_delayed() == 2
    assert purgatory.check_and_complete("a") == 0
    op1.completable = True
    assert purgatory.check_and_complete("a") == 1
    assert op1.completions == 1 and purgatory.num_delayed() == 1
    assert purgatory.watched() == 2  # op1 dropped from "a"
    op2.completable = True
    assert purgatory.check_and_complete("b") == 1
    assert purgatory.num_delayed() == 0
    assert purgatory.watched() == 1  # op2 is still listed under "a" (completed)
    assert purgatory.check_and_complete("a") == 0  # drops it; the empty key goes away
    assert purgatory.watched() == 0 and purgatory.keys() == []
    assert purgatory.check_and_complete("never-watched") == 0


def test_second_check_after_watching_completes_without_timer() -> None:
    purgatory, _ = manual_purgatory()

    class FlipsAfterFirstTry(MockOperation):
        def try_complete(self) -> bool:
            self.tries += 1
            if self.tries >= 2:  # the state changed while we were starting to watch
                return self.force_complete()
            return False

    op = FlipsAfterFirstTry(1000)
    assert purgatory.try_complete_else_watch(op, ["a"]) is True
    assert op.completions == 1 and purgatory.num_delayed() == 0


def test_expiration_of_watched_operations() -> None:
    purgatory, clock = manual_purgatory()
    ops = [MockOperation(d) for d in (10, 20, 30)]
    for i, op in enumerate(ops):
        purgatory.try_complete_else_watch(op, [f"k{i}"])
    clock.advance(20)
    purgatory.reaper.run_once(0)
    assert [op.expirations for op in ops] == [1, 1, 0]
    assert [op.completions for op in ops] == [1, 1, 0]
    assert purgatory.num_delayed() == 1
    assert purgatory.watched() == 3  # expired ones linger in their lists until purged
    assert purgatory.purge() == 2 and purgatory.watched() == 1


@pytest.fixture
def frequent_thread_switches() -> Iterator[None]:
    """Make the interpreter switch threads very often, so that races actually interleave."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


@pytest.mark.usefixtures("frequent_thread_switches")
@pytest.mark.parametrize("round_no", range(8))
def test_exactly_once_under_racing_completion_and_expiry(round_no: int) -> None:
    purgatory, clock = manual_purgatory()
    n_ops, n_keys = 300, 6
    ops = [MockOperation(50) for _ in range(n_ops)]
    for i, op in enumerate(ops):
        purgatory.try_complete_else_watch(op, [i % n_keys, (i + 1) % n_keys])
    for op in ops[::2]:  # the other half can only be forced or expire
        op.completable = True
    start = threading.Barrier(7)
    errors: list[BaseException] = []

    def guarded(fn: Callable[[], object]) -> threading.Thread:
        def run() -> None:
            try:
                start.wait(10)
                fn()
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        return threading.Thread(target=run)

    def checker(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(3):
            for key in rng.sample(range(n_keys), n_keys):
                purgatory.check_and_complete(key)

    def forcer(seed: int) -> None:
        for op in random.Random(seed).sample(ops, n_ops):
            op.force_complete()

    def expirer() -> None:
        clock.advance(50)
        purgatory.reaper.run_once(0)

    seed = round_no * 100
    threads = [guarded(expirer)]
    threads += [guarded(partial(checker, seed + s)) for s in range(3)]
    threads += [guarded(partial(forcer, seed + 10 + s)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and not any(t.is_alive() for t in threads)
    assert all(op.is_completed for op in ops)
    assert [op.completions for op in ops] == [1] * n_ops  # on_complete exactly once each
    assert all(op.expirations in (0, 1) for op in ops)
    assert purgatory.num_delayed() == 0


def test_no_lost_wakeup_while_another_thread_is_inside_try_complete() -> None:
    """A holds the op's lock inside try_complete (having read a stale condition); B makes
    the condition true and checks the key. B must not block, and the op must still
    complete, by A re-checking on B's behalf before it lets go."""
    purgatory, _ = manual_purgatory()
    inside = threading.Event()
    let_go = threading.Event()

    class Op(MockOperation):
        block_next = False

        def try_complete(self) -> bool:
            self.tries += 1
            condition = self.completable  # read before stalling: stale by the time we decide
            if self.block_next:
                self.block_next = False
                inside.set()
                assert let_go.wait(10)
            return self.force_complete() if condition else False

    op = Op(60_000)
    assert not purgatory.try_complete_else_watch(op, ["p0"])
    op.block_next = True
    a_result: list[int] = []
    a = threading.Thread(target=lambda: a_result.append(purgatory.check_and_complete("p0")))
    a.start()
    assert inside.wait(10)  # A holds the lock, inside try_complete, condition read as False

    op.completable = True  # B changes the state...
    b_result: list[int] = []
    b = threading.Thread(target=lambda: b_result.append(purgatory.check_and_complete("p0")))
    b.start()
    b.join(10)  # ...and checks: it must return while A is still stalled
    assert not b.is_alive() and b_result == [0]
    assert not op.is_completed and op._try_again

    let_go.set()
    a.join(10)
    assert not a.is_alive()
    assert op.is_completed and op.completions == 1 and a_result == [1]
    assert purgatory.num_delayed() == 0 and purgatory.watched() == 0


def test_num_delayed_is_exact_after_100k_operations_mostly_completed_early() -> None:
    purgatory, clock = manual_purgatory(purge_interval=1000)
    n, n_keys = 100_000, 1_000
    ops = [MockOperation(30_000) for _ in range(n)]
    for i, op in enumerate(ops):
        purgatory.try_complete_else_watch(op, [i % n_keys])
        if i % 100 != 0:  # 99% will complete early
            op.completable = True
    assert purgatory.num_delayed() == n
    for key in range(n_keys):
        purgatory.check_and_complete(key)
    pending = sum(1 for op in ops if not op.is_completed)
    assert pending == n // 100
    assert purgatory.num_delayed() == pending
    assert purgatory.watched() == pending
    clock.advance(30_000)
    purgatory.reaper.run_once(0)
    assert purgatory.num_delayed() == 0
    assert sum(op.expirations for op in ops) == pending
    assert all(op.completions == 1 for op in ops)


def test_purge_drops_completed_operations_from_watcher_lists() -> None:
    purgatory, clock = manual_purgatory(purge_interval=10)
    ops = [MockOperation(60_000) for _ in range(30)]
    for op in ops:
        purgatory.try_complete_else_watch(op, ["hot", "cold"])
    for op in ops[:25]:
        op.completable = True
    assert purgatory.check_and_complete("hot") == 25
    # Completed through "hot", they still sit in "cold"'s list:
    assert purgatory.watched() == 5 + 30
    purgatory.reaper.run_once(0)  # 30 watched - 5 delayed = 25 > 10: purge
    assert purgatory.watched() == 5 + 5
    assert purgatory.num_delayed() == 5


def test_no_purge_below_the_interval() -> None:
    purgatory, _ = manual_purgatory(purge_interval=100)
    ops = [MockOperation(60_000) for _ in range(30)]
    for op in ops:
        purgatory.try_complete_else_watch(op, ["hot", "cold"])
        op.completable = True
    purgatory.check_and_complete("hot")
    purgatory.reaper.run_once(0)
    assert purgatory.watched() == 30  # still listed under "cold": below the threshold


def test_cancel_for_key() -> None:
    purgatory, clock = manual_purgatory()
    a, b, c = MockOperation(100), MockOperation(100), MockOperation(100)
    purgatory.try_complete_else_watch(a, ["gone"])
    purgatory.try_complete_else_watch(b, ["gone"])
    purgatory.try_complete_else_watch(c, ["stays"])
    cancelled = purgatory.cancel_for_key("gone")
    assert set(map(id, cancelled)) == {id(a), id(b)}
    assert purgatory.num_delayed() == 1 and purgatory.watched() == 1
    assert purgatory.cancel_for_key("gone") == []
    clock.advance(100)
    purgatory.reaper.run_once(0)
    assert (a.expirations, b.expirations, c.expirations) == (0, 0, 1)
    assert not a.is_completed  # cancelled, not completed


def test_reaper_expires_operations_in_real_time() -> None:
    """The only test on the real clock: a reaper thread and a thread-pool executor."""
    purgatory: DelayedOperationPurgatory[MockOperation] = DelayedOperationPurgatory(
        "real-time", clock=SystemClock()
    )
    expired = threading.Semaphore(0)

    class Op(MockOperation):
        def on_expiration(self) -> None:
            super().on_expiration()
            expired.release()

    try:
        t0 = time.monotonic()
        ops = [Op(d) for d in (20, 40, 60)]
        for i, op in enumerate(ops):
            assert not purgatory.try_complete_else_watch(op, [f"k{i}", "shared"])
        survivor = Op(60_000)
        purgatory.try_complete_else_watch(survivor, ["shared"])
        for _ in ops:
            assert expired.acquire(timeout=10)
        elapsed_ms = (time.monotonic() - t0) * 1000
        assert elapsed_ms >= 59  # never early (the clock has whole-millisecond resolution)
        assert all(op.expirations == 1 and op.completions == 1 for op in ops)
        assert purgatory.num_delayed() == 1
        # Expired operations stay in their watcher lists until a check or a purge.
        assert purgatory.purge() + purgatory.watched() == 7
        assert purgatory.watched() == 1
    finally:
        purgatory.shutdown()
    assert not purgatory.reaper.is_alive()
    assert survivor.expirations == 0


def test_shutdown_stops_the_reaper_promptly() -> None:
    purgatory: DelayedOperationPurgatory[MockOperation] = DelayedOperationPurgatory("stop")
    assert purgatory.reaper.is_alive()
    purgatory.try_complete_else_watch(MockOperation(60_000), ["k"])
    t0 = time.monotonic()
    purgatory.shutdown()
    assert not purgatory.reaper.is_alive()
    assert time.monotonic() - t0 < 5
    assert purgatory.timer.is_shut_down
