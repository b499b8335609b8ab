"""Dropping aborted transactions from a read_committed fetch, one batch header at a time.

A read_committed Fetch stops at the partition's last stable offset and lists the aborted
transactions that overlap what it returned, as ``(producer id, first offset)``. Walking the
batches in offset order, a producer's transaction counts as aborted from its first offset
until that producer's marker (a control batch): its transactional batches in between are
dropped, the marker too, as every control batch is. Whole batches are kept or dropped on
their header alone, so the columnar decoder never touches a record of an aborted one.

Worked example: aborted ``[(7, 10)]``; batches: producer 8 at 10-11 (kept), producer 7 at
12-13 (dropped: 7 is aborted from offset 10), marker of 7 at 14 (dropped; 7 is no longer
aborted), producer 7 at 15 (kept: a new transaction).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

from broker_sim.protocol.records import BatchHeader


class AbortedTransactions:
    """The aborted transactions of one fetch response; ask :meth:`keeps` for each batch in
    offset order. One use per response (it is consumed as batches go by)."""

    def __init__(self, aborted: Iterable[Any] | None) -> None:
        self._pending = [(a.first_offset, a.producer_id) for a in aborted or ()]
        heapq.heapify(self._pending)
        self._ongoing: set[int] = set()

    def keeps(self, header: BatchHeader) -> bool:
        pending = self._pending
        while pending and pending[0][0] <= header.last_offset:
            self._ongoing.add(heapq.heappop(pending)[1])
        if header.is_control:
            self._ongoing.discard(header.producer_id)
            return False
        return not (header.is_transactional and header.producer_id in self._ongoing)
