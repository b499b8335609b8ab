"""Transactions as one partition's log sees them: what is open, what was aborted, the LSO.

A transactional producer's batches carry the *transactional* bit; its transaction in this
partition is open from its first such batch until a marker (a control batch, COMMIT or
ABORT, written by the transaction coordinator) from the same producer. From that the log
derives, as Kafka does:

* the **first unstable offset** — the first offset of the oldest open transaction; the
  **last stable offset** (LSO) is the smaller of it and the high watermark: read_committed
  consumers read only below it, so they never wait on, nor see, an undecided record;
* the **aborted transactions** — ``(producer id, first offset, last offset, LSO at the
  abort)`` for every ABORT marker, kept per segment (the segment holding the marker): a
  read_committed fetch returns those overlapping what it read, and the consumer drops the
  aborted producer's batches between the first offset and the marker.

Worked example: producer 7 writes offsets 10-11 (transactional), producer 8 writes 12-13,
producer 7 aborts (marker at 14), producer 8 commits (marker at 15). The first unstable
offset is 10 until offset 14, then 12 until 15, then none; with the high watermark at 16
the LSO is 16 and a read_committed fetch from 10 returns offsets 10-15 with the aborted
transaction (7, first 10): the consumer keeps 12-13 and drops 10-11 and both markers.

The state is derived data: rebuilt from the batch headers (and each marker's one record)
when the log opens and after a truncation. Used under the owning log's lock for writes;
:meth:`aborted_between` and :meth:`first_unstable_offset` may be called from readers (they
read immutable snapshots).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

from ..protocol.records.batch_header import BatchHeader
from ..protocol.records.control import ABORT, marker_type


@dataclass(frozen=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset
    last_stable_offset: int


class TransactionState:
    def __init__(self) -> None:
        #: producer id -> first offset of its open transaction in this partition.
        self._open: dict[int, int] = {}
        self._first_unstable: int | None = None
        #: segment base offset -> aborted transactions whose marker it holds, in offset order.
        self._aborted: dict[int, tuple[AbortedTxn, ...]] = {}
        self._bases: tuple[int, ...] = ()

    # ---- writes (under the log's lock) ----------------------------------------------------
    def apply(self, buf: Any, pos: int, header: BatchHeader, segment_base: int,
              high_watermark: int) -> None:
        """Account for one appended batch (offsets assigned) living in ``segment_base``."""
        if not header.is_transactional or header.producer_id < 0:
            return
        pid = header.producer_id
        if not header.is_control:
            if pid not in self._open:
                self._open[pid] = header.base_offset
                self._recompute()
            return
        kind = marker_type(buf, pos, header)
        first = self._open.pop(pid, None)
        if first is None:
            return  # a marker for a transaction with nothing in this partition (or a retry)
        self._recompute()
        if kind == ABORT:
            lso = min(high_watermark, self._first_unstable if self._first_unstable is not None
                      else high_watermark)
            entries = self._aborted.get(segment_base, ())
            self._aborted = {**self._aborted, segment_base: entries + (
                AbortedTxn(pid, first, header.base_offset, lso),)}
            self._bases = tuple(sorted(self._aborted))

    def _recompute(self) -> None:
        self._first_unstable = min(self._open.values()) if self._open else None

    def forget_segments_below(self, log_start_offset: int) -> None:
        """Retention moved the log start: drop aborted transactions wholly before it."""
        kept = {}
        for base, entries in self._aborted.items():
            left = tuple(e for e in entries if e.last_offset >= log_start_offset)
            if left:
                kept[base] = left
        self._aborted = kept
        self._bases = tuple(sorted(kept))

    def clear(self) -> None:
        self._open = {}
        self._first_unstable = None
        self._aborted = {}
        self._bases = ()

    # ---- reads (any thread) ---------------------------------------------------------------
    def first_unstable_offset(self) -> int | None:
        return self._first_unstable

    def open_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of each transaction still open here."""
        return dict(self._open)

    def aborted_between(self, start_offset: int, end_offset: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping ``[start_offset, end_offset)``: what a
        read_committed fetch of that range must tell the consumer about."""
        aborted, bases = self._aborted, self._bases
        out: list[AbortedTxn] = []
        # a transaction's marker follows its data, so it lives in the segment holding
        # start_offset or a later one
        i = max(0, bisect_left(bases, start_offset + 1) - 1)
        for base in bases[i:]:  # a later segment may end a transaction begun in range
            out.extend(e for e in aborted[base]
                       if e.last_offset >= start_offset and e.first_offset < end_offset)
        return out
