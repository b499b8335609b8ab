"""The log's view of transactions: open transactions hold the last stable offset back,
markers close them, aborts are indexed, and all of it is rebuilt on reopen and truncation."""

from __future__ import annotations

import pytest

from broker_sim.log import Log, LogConfig
from broker_sim.log.transactions import AbortedTxn
from broker_sim.protocol.errors import InvalidRecord, TransactionCoordinatorFenced
from broker_sim.protocol.records.builder import RecordBatchBuilder
from broker_sim.protocol.records.control import marker_batch


def txn_batch(pid: int, seq: int, records: int = 2, epoch: int = 0) -> bytes:
    b = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                           is_transactional=True)
    for i in range(records):
        b.append(1_000, None, b"v%d" % i)
    return b.build()


def plain_batch(records: int = 1) -> bytes:
    b = RecordBatchBuilder()
    for _ in range(records):
        b.append(1_000, None, b"p")
    return b.build()


def marker(pid: int, commit: bool, epoch: int = 0) -> bytes:
    return marker_batch(pid, epoch, commit, coordinator_epoch=3, timestamp_ms=1_000)


def everything_committed(log: Log) -> None:
    log.high_watermark = log.log_end_offset


def test_the_worked_example_of_the_module(open_log) -> None:
    log = open_log()
    log.append_as_leader(plain_batch(10), 0)         # 0-9
    log.append_as_leader(txn_batch(7, 0), 0)         # 10-11
    log.append_as_leader(txn_batch(8, 0), 0)         # 12-13
    everything_committed(log)
    assert log.last_stable_offset == 10
    log.append_as_leader(marker(7, commit=False), 0, markers=True)  # 14
    everything_committed(log)
    assert log.last_stable_offset == 12
    log.append_as_leader(marker(8, commit=True), 0, markers=True)   # 15
    assert log.last_stable_offset == 15  # nothing open: the high watermark (not yet at 16)
    everything_committed(log)
    assert log.last_stable_offset == 16
    assert log.aborted_transactions(10, 16) == [AbortedTxn(7, 10, 14, 12)]
    assert log.aborted_transactions(15, 16) == []
    assert log.aborted_transactions(0, 10) == []


def test_the_high_watermark_bounds_the_last_stable_offset(open_log) -> None:
    log = open_log()
    log.append_as_leader(plain_batch(3), 0)
    log.high_watermark = 2
    assert log.last_stable_offset == 2
    log.append_as_leader(txn_batch(5, 0), 0)  # 3-4, open, above the high watermark
    assert log.last_stable_offset == 2


def test_state_is_rebuilt_when_the_log_reopens(tmp_path, clock) -> None:
    config = LogConfig(segment_bytes=300)  # several segments
    log = Log(tmp_path / "t-0", config, clock)
    for pid in range(1, 6):
        log.append_as_leader(txn_batch(pid, 0), 0)
    for pid in (1, 3):
        log.append_as_leader(marker(pid, commit=False), 0, markers=True)
    log.append_as_leader(marker(2, commit=True), 0, markers=True)
    everything_committed(log)
    open_before, aborted_before = log.txns.open_transactions(), log.aborted_transactions(0, 100)
    assert len(log.segments) > 1
    log.flush()
    log.close()
    again = Log(tmp_path / "t-0", config, clock)
    try:
        assert again.txns.open_transactions() == open_before == {4: 6, 5: 8}
        assert [(a.producer_id, a.first_offset) for a in again.aborted_transactions(0, 100)] == \
            [(a.producer_id, a.first_offset) for a in aborted_before] == [(1, 0), (3, 4)]
        assert again.last_stable_offset == 6
    finally:
        again.close()


def test_a_truncated_marker_reopens_its_transaction(open_log) -> None:
    log = open_log()
    log.append_as_leader(txn_batch(9, 0), 0)   # 0-1
    log.append_as_leader(marker(9, commit=False), 0, markers=True)  # 2
    everything_committed(log)
    assert log.txns.open_transactions() == {}
    log.truncate_to(2)  # the follower's copy diverged: the marker is gone
    assert log.txns.open_transactions() == {9: 0}
    assert log.aborted_transactions(0, 10) == []
    assert log.last_stable_offset == 0


def test_a_follower_derives_the_same_state_from_the_leaders_bytes(open_log) -> None:
    leader, follower = open_log(name="a-0"), open_log(name="b-0")
    leader.append_as_leader(txn_batch(4, 0), 0)
    leader.append_as_leader(marker(4, commit=False), 0, markers=True)
    leader.append_as_leader(txn_batch(6, 0), 0)
    data = leader.read(0, 1 << 20).records
    follower.append_as_follower(data)
    everything_committed(follower)
    assert follower.txns.open_transactions() == {6: 3}
    assert [(a.producer_id, a.first_offset, a.last_offset)
            for a in follower.aborted_transactions(0, 10)] == [(4, 0, 2)]


def test_a_producer_may_not_write_a_marker(open_log) -> None:
    log = open_log()
    log.append_as_leader(txn_batch(3, 0), 0)
    with pytest.raises(InvalidRecord, match="control"):
        log.append_as_leader(marker(3, commit=True), 0)
    assert log.log_end_offset == 2 and log.txns.open_transactions() == {3: 0}


def test_a_marker_from_an_older_coordinator_is_fenced(open_log) -> None:
    """After the coordinator moved (a new epoch of its ``__transaction_state`` partition),
    the old one may still try to end a transaction: the partition refuses its marker."""
    log = open_log()
    log.append_as_leader(txn_batch(5, 0), 0)
    log.append_as_leader(marker_batch(5, 0, False, coordinator_epoch=4, timestamp_ms=1_000), 0,
                         markers=True)  # the new coordinator aborted it
    log.append_as_leader(txn_batch(5, 2), 0)
    with pytest.raises(TransactionCoordinatorFenced, match="coordinator epoch 3"):
        log.append_as_leader(marker_batch(5, 0, True, coordinator_epoch=3, timestamp_ms=1_000), 0,
                             markers=True)
    assert log.txns.open_transactions() == {5: 3}  # still open: the stale commit was refused
    log.append_as_leader(marker_batch(5, 0, True, coordinator_epoch=4, timestamp_ms=1_000), 0,
                         markers=True)
    assert log.txns.open_transactions() == {}
