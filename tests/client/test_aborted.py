"""Which batches a read_committed reader keeps, from the fetch's aborted transactions."""

from __future__ import annotations

from types import SimpleNamespace

from broker_sim.protocol.records import BatchHeader
from broker_sim.protocol.records.builder import RecordBatchBuilder
from broker_sim.protocol.records.control import marker_batch
from connector.client.aborted import AbortedTransactions


def header(pid: int, base: int, records: int = 2, *, transactional: bool = True) -> BatchHeader:
    b = RecordBatchBuilder(base_offset=base, producer_id=pid, producer_epoch=0,
                           base_sequence=0 if pid >= 0 else -1, is_transactional=transactional)
    for _ in range(records):
        b.append(0, None, b"v")
    return BatchHeader.parse(b.build(), 0)


def marker(pid: int, base: int) -> BatchHeader:
    data = bytearray(marker_batch(pid, 0, False, 0, 0))
    data[0:8] = base.to_bytes(8, "big")
    return BatchHeader.parse(bytes(data), 0)


def test_the_worked_example() -> None:
    aborted = AbortedTransactions([SimpleNamespace(producer_id=7, first_offset=10)])
    assert [aborted.keeps(h) for h in (header(8, 10), header(7, 12), marker(7, 14),
                                       header(7, 15, records=1))] == [True, False, False, True]


def test_plain_batches_and_other_producers_are_kept_and_markers_never() -> None:
    aborted = AbortedTransactions([SimpleNamespace(producer_id=3, first_offset=0)])
    assert aborted.keeps(header(-1, 0, transactional=False))
    assert not aborted.keeps(header(3, 2))
    assert aborted.keeps(header(4, 4))
    assert not aborted.keeps(marker(4, 6))  # a commit marker: dropped, 3 still aborted
    assert not aborted.keeps(header(3, 7))


def test_an_abort_is_counted_from_its_first_offset_only() -> None:
    aborted = AbortedTransactions([SimpleNamespace(producer_id=5, first_offset=20)])
    assert aborted.keeps(header(5, 10))       # an earlier, committed transaction of 5
    assert not aborted.keeps(header(5, 19))   # its last offset 20 reaches the aborted one
    assert AbortedTransactions(None).keeps(header(5, 0))
