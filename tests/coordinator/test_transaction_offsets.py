"""Offsets committed inside a transaction (TxnOffsetCommit): invisible until the
transaction's marker reaches the group's partition, gone if it aborts, and read back the
same way by a new coordinator."""

from __future__ import annotations

import pytest

from broker_sim.coordinator.group.group import CommittedOffset
from broker_sim.coordinator.placement import OFFSETS_TOPIC
from broker_sim.protocol.records.control import marker_batch
from tests.coordinator.group_harness import GroupHarness, Outcome

PID, EPOCH = 4000, 0


@pytest.fixture
def h(tmp_path):
    harness = GroupHarness(tmp_path)
    yield harness
    harness.close()


def txn_commit(h: GroupHarness, offsets: dict[tuple[str, int], int], pid: int = PID) -> dict:
    out = Outcome()
    h.coordinator.commit_offsets("g", "", None, -1,
                                 {tp: CommittedOffset(o) for tp, o in offsets.items()}, out,
                                 (pid, EPOCH))
    return out.value


def committed(h: GroupHarness) -> dict[tuple[str, int], int]:
    code, offsets = h.coordinator.fetch_offsets("g", None)
    assert code == 0
    return {tp: c.offset for tp, c in offsets.items()}


def write_marker(h: GroupHarness, commit: bool, pid: int = PID) -> None:
    """What WriteTxnMarkers does on the group's partition."""
    p = h.store.partition_of("g")
    done = Outcome()
    h.replicas.append(-1, 5000, [(OFFSETS_TOPIC, p, marker_batch(pid, EPOCH, commit, 0, 0))],
                      done, markers=True)
    assert done.value[0].error is None
    h.coordinator.on_transaction_completed(pid, commit, p)


def test_transactional_offsets_count_once_the_commit_marker_is_written(h) -> None:
    assert txn_commit(h, {("t", 0): 7, ("t", 1): 9}) == {("t", 0): 0, ("t", 1): 0}
    assert committed(h) == {}
    write_marker(h, commit=True)
    assert committed(h) == {("t", 0): 7, ("t", 1): 9}


def test_aborted_transactional_offsets_vanish(h) -> None:
    assert txn_commit(h, {("t", 0): 3}) == {("t", 0): 0}
    write_marker(h, commit=False)
    assert committed(h) == {}
    h.restart_coordinator()
    assert committed(h) == {}


def test_a_new_coordinator_reads_decided_and_undecided_transactions_back(h) -> None:
    txn_commit(h, {("t", 0): 5}, pid=PID)
    write_marker(h, commit=True, pid=PID)
    txn_commit(h, {("t", 1): 8}, pid=PID + 1)  # undecided when the coordinator moves
    h.restart_coordinator()
    assert committed(h) == {("t", 0): 5}
    write_marker(h, commit=True, pid=PID + 1)
    assert committed(h) == {("t", 0): 5, ("t", 1): 8}
