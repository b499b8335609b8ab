"""The transaction coordinator's state machine on a real replica manager and real logs,
driven by a manual clock: markers go to a recording channel the test completes by hand."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from broker_sim.common import ManualClock
from broker_sim.controller.image import BrokerInfo, ClusterImage, PartitionInfo, TopicInfo
from broker_sim.coordinator.placement import TRANSACTION_STATE_TOPIC
from broker_sim.coordinator.transaction.config import TransactionConfig
from broker_sim.coordinator.transaction.coordinator import HOLD_MS, TransactionCoordinator
from broker_sim.coordinator.transaction.metadata import TxnState
from broker_sim.coordinator.transaction.store import TransactionStore
from broker_sim.log import LogManager
from broker_sim.protocol.errors import (
    ConcurrentTransactions,
    InvalidProducerEpoch,
    InvalidProducerIdMapping,
    InvalidTransactionTimeout,
    InvalidTxnState,
    ProducerFenced,
)
from broker_sim.server.replica_manager import ReplicaManager
from broker_sim.timer import SystemTimer
from tests.timer.timer_helpers import SyncExecutor

PARTITIONS = 2
T0 = {("t", 0), ("t", 1)}


class Markers:
    """Records what the coordinator asks partition leaders to write."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, int, bool, set[tuple[str, int]]]] = []
        self._done: list = []

    def send(self, producer_id, producer_epoch, commit, coordinator_epoch, partitions,
             still_owned, done) -> None:
        self.sent.append((producer_id, producer_epoch, commit, set(partitions)))
        self._done.append(done)

    def deliver(self) -> None:
        """Every leader wrote its marker."""
        done, self._done = self._done, []
        for d in done:
            d()

    def retry_later(self, action) -> None:
        action()

    def shutdown(self) -> None:
        pass


class Harness:
    def __init__(self, data_dir: Path) -> None:
        self.clock = ManualClock(0, wall_start_ms=1_700_000_000_000)
        self.logs = LogManager(data_dir / "logs", clock=self.clock)
        self.replicas = ReplicaManager(0, self.logs, lambda b: None, lambda p, isr: None,
                                       clock=self.clock)
        self.ids = itertools.count(1000)
        self.epoch = 0
        self.start()

    def start(self) -> None:
        self.replicas.apply_image(ClusterImage(
            version=self.epoch + 1, brokers={0: BrokerInfo("127.0.0.1", 1, 1)},
            topics={TRANSACTION_STATE_TOPIC: TopicInfo("ts", {}, [
                PartitionInfo([0], [0], 0, self.epoch) for _ in range(PARTITIONS)])}))
        self.timer = SystemTimer("txn-test", clock=self.clock, executor=SyncExecutor())
        self.markers = Markers()
        self.store = TransactionStore(TransactionConfig(state_log_num_partitions=PARTITIONS,
                                                        max_timeout_ms=60_000),
                                      self.replicas, self.clock)
        self.coordinator = TransactionCoordinator(self.store.config, self.store,
                                                  lambda: next(self.ids), self.markers,
                                                  self.clock, timer=self.timer,
                                                  reaper_enabled=False)
        self.store.set_leadership(PARTITIONS, {i: self.epoch for i in range(PARTITIONS)})
        deadline = time.monotonic() + 10
        while self.store.any_loading():
            assert time.monotonic() < deadline
            time.sleep(0.005)

    def restart(self) -> None:
        """A new leader of the state partitions reads the transactions back."""
        self.coordinator.shutdown()
        self.epoch += 1
        self.start()

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        while self.timer.advance_clock(0):
            pass

    def close(self) -> None:
        self.coordinator.shutdown()
        self.replicas.shutdown()
        self.logs.close()

    # ---- requests, answered synchronously (the writes complete on this thread) --------
    def init(self, txn: str = "app", timeout_ms: int = 10_000) -> tuple[int, int, int]:
        out: list = []
        self.coordinator.init_producer_id(txn, timeout_ms, lambda *a: out.append(a))
        assert len(out) == 1
        return out[0]

    def add(self, pid: int, epoch: int, partitions=T0, txn: str = "app") -> int:
        out: list = []
        self.coordinator.add_partitions(txn, pid, epoch, set(partitions), out.append)
        return out[0]

    def end(self, pid: int, epoch: int, commit: bool, txn: str = "app") -> int:
        out: list = []
        self.coordinator.end_txn(txn, pid, epoch, commit, out.append)
        return out[0]

    def state(self, txn: str = "app") -> TxnState:
        t = self.store.get(txn)
        assert t is not None
        return t.state


@pytest.fixture
def h(tmp_path):
    harness = Harness(tmp_path)
    yield harness
    harness.close()


def test_a_commit_goes_prepare_markers_complete(h) -> None:
    code, pid, epoch = h.init()
    assert (code, epoch) == (0, 0) and pid >= 1000
    assert h.add(pid, epoch) == 0 and h.state() is TxnState.ONGOING
    assert h.end(pid, epoch, commit=True) == 0
    assert h.state() is TxnState.PREPARE_COMMIT
    assert h.markers.sent == [(pid, epoch, True, T0)]
    h.markers.deliver()
    assert h.state() is TxnState.COMPLETE_COMMIT
    assert h.end(pid, epoch, commit=True) == 0  # a retried EndTxn
    assert h.end(pid, epoch, commit=False) == InvalidTxnState.code
    assert h.add(pid, epoch, {("t", 0)}) == 0  # the next transaction
    assert h.store.get("app").partitions == {("t", 0)}


def test_the_next_transaction_waits_for_the_previous_one_to_complete(h) -> None:
    """AddPartitionsToTxn while the markers are out is answered once the transaction
    completes — or CONCURRENT_TRANSACTIONS after HOLD_MS, if it has not. EndTxn is not held
    (a retried one must not end the next transaction)."""
    _, pid, epoch = h.init()
    assert h.add(pid, epoch) == 0 and h.end(pid, epoch, commit=True) == 0
    assert h.end(pid, epoch, commit=True) == ConcurrentTransactions.code
    added: list = []
    h.coordinator.add_partitions("app", pid, epoch, {("t", 0)}, added.append)
    assert added == [] and h.state() is TxnState.PREPARE_COMMIT
    h.markers.deliver()  # complete: the request runs again
    assert added == [0]
    assert h.state() is TxnState.ONGOING and h.store.get("app").partitions == {("t", 0)}
    assert h.end(pid, epoch, commit=False) == 0
    late: list = []
    h.coordinator.add_partitions("app", pid, epoch, {("t", 1)}, late.append)
    h.advance(HOLD_MS - 1)
    assert late == []
    h.advance(2)  # the markers are still out: the client is told to ask again
    assert late == [ConcurrentTransactions.code]
    h.markers.deliver()
    assert h.state() is TxnState.COMPLETE_ABORT
    assert h.add(pid, epoch, {("t", 1)}) == 0


def test_a_new_instance_fences_the_old_one_and_aborts_what_it_left_open(h) -> None:
    _, pid, old = h.init()
    assert h.add(pid, old) == 0
    code, _, _ = h.init()  # the new instance arrives while a transaction is open
    assert code == ConcurrentTransactions.code
    assert h.markers.sent == [(pid, old + 1, False, T0)]  # aborted under a fencing epoch
    h.markers.deliver()
    assert h.state() is TxnState.COMPLETE_ABORT
    code, pid2, new = h.init()
    assert (code, pid2, new) == (0, pid, old + 2)
    assert h.add(pid, old) == ProducerFenced.code
    assert h.end(pid, old, commit=True) == ProducerFenced.code
    out: list = []
    h.coordinator.end_txn("app", pid, old, True, out.append, fenced_code=InvalidProducerEpoch.code)
    assert out == [InvalidProducerEpoch.code]  # what a client older than v2 understands
    assert h.add(pid + 1, new) == InvalidProducerIdMapping.code


def test_an_open_transaction_is_aborted_when_its_timeout_passes(h) -> None:
    _, pid, epoch = h.init(timeout_ms=5000)
    assert h.add(pid, epoch) == 0
    h.advance(4999)
    assert h.state() is TxnState.ONGOING and h.markers.sent == []
    h.advance(2)
    assert h.state() is TxnState.PREPARE_ABORT
    assert h.markers.sent == [(pid, epoch + 1, False, T0)]
    h.markers.deliver()
    assert h.state() is TxnState.COMPLETE_ABORT
    assert h.end(pid, epoch, commit=True) == ProducerFenced.code  # the late producer


def test_an_earlier_transactions_timeout_does_not_abort_a_later_one_of_the_same_epoch(h) -> None:
    """Found by the partition fault test (seed 34): the timer the first transaction armed
    fired 20 s after it began and aborted the producer's current transaction, begun 0.1 s
    before, with an epoch bump that fenced the live producer (PRODUCER_FENCED)."""
    _, pid, epoch = h.init(timeout_ms=5000)
    assert h.add(pid, epoch) == 0 and h.end(pid, epoch, commit=True) == 0
    h.markers.deliver()
    h.advance(4000)
    assert h.add(pid, epoch) == 0  # the next transaction, same epoch, 4 s later
    h.advance(1500)  # past the first transaction's 5 s, 1.5 s into the second's
    assert h.state() is TxnState.ONGOING and len(h.markers.sent) == 1
    assert h.end(pid, epoch, commit=True) == 0
    h.markers.deliver()
    assert h.state() is TxnState.COMPLETE_COMMIT
    assert h.add(pid, epoch) == 0  # a third, timed from its own start
    h.advance(4999)
    assert h.state() is TxnState.ONGOING
    h.advance(2)
    assert h.state() is TxnState.PREPARE_ABORT


def test_a_new_coordinator_finishes_a_decided_transaction_and_times_open_ones(h) -> None:
    _, pid, epoch = h.init()
    assert h.add(pid, epoch) == 0 and h.end(pid, epoch, commit=True) == 0
    _, other, oe = h.init("other", timeout_ms=8000)
    assert h.add(other, oe, {("u", 0)}, txn="other") == 0
    h.advance(3000)
    h.restart()  # the old coordinator died before the markers were written
    assert h.state() is TxnState.PREPARE_COMMIT
    assert h.markers.sent == [(pid, epoch, True, T0)]  # resent by the new coordinator
    h.markers.deliver()
    assert h.state() is TxnState.COMPLETE_COMMIT
    assert h.state("other") is TxnState.ONGOING
    h.advance(5001)  # what was left of its 8 s
    assert h.state("other") is TxnState.PREPARE_ABORT


def test_a_timeout_above_the_brokers_maximum_is_refused(h) -> None:
    assert h.init(timeout_ms=60_001)[0] == InvalidTransactionTimeout.code


def init_as(h: Harness, expected: tuple[int, int]) -> tuple[int, int, int]:
    out: list = []
    h.coordinator.init_producer_id("app", 10_000, lambda *a: out.append(a), expected=expected)
    return out[0]


def test_only_the_current_instance_may_bump_its_epoch_kip_360(h) -> None:
    _, pid, epoch = h.init()
    assert init_as(h, (pid, epoch)) == (0, pid, epoch + 1)  # e.g. after an abortable error
    assert init_as(h, (pid, epoch)) == (0, pid, epoch + 1)  # its answer was lost: a retry
    assert init_as(h, (pid, epoch - 1))[0] == ProducerFenced.code  # an older instance
    assert init_as(h, (pid + 1, epoch + 1))[0] == ProducerFenced.code  # someone else's id
