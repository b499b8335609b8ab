"""Idempotent-producer state of one partition: de-duplication by (producer id, epoch, sequence).

An idempotent producer numbers its batches per partition: ``base_sequence`` of a batch is
one more than the last sequence of its previous batch. For each producer id the log keeps
its epoch and the sequence/offset ranges of its last five batches (a producer has at most
five requests in flight), and checks every new batch from that producer:

    epoch lower than known            -> ProducerFenced (an old instance)
    same (first, last) sequence as one of the cached batches
                                      -> a retry of a batch already written: not appended
                                         again, answered with its original offsets
    sequences at or below the last one written, older than the cache
                                      -> DuplicateSequenceNumber (written long ago; clients
                                         treat it as success), never appended twice
    first sequence != last + 1        -> OutOfOrderSequenceNumber (a gap: a batch was lost)
    otherwise                         -> appended; cached (evicting the oldest of five)

Worked example: batches seq 0-9 -> offsets 0-9, seq 10-19 -> 10-19; the producer times
out and resends seq 10-19: the log answers "offsets 10-19" without writing them twice.

Transaction markers (control batches, written by the coordinator) are checked too: a
marker older than the producer's epoch is fenced, and so is one from a coordinator epoch
older than the last marker's (``TransactionCoordinatorFenced``: a coordinator that lost
its partition of ``__transaction_state`` must not end transactions its successor owns).

A new epoch (or a producer the log has no state for, e.g. after its state aged out)
starts fresh. State is rebuilt from batch headers when the log opens (the headers carry
producer id, epoch and base sequence), from the segments a reopen recovers; the
coordinator epoch, which sits in a marker's record rather than its header, is known again
from the next marker written after a reopen. Owned by a
Log and used under the log's lock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..protocol.errors import (
    DuplicateSequenceNumber,
    OutOfOrderSequenceNumber,
    ProducerFenced,
    TransactionCoordinatorFenced,
)
from ..protocol.records.batch_header import BatchHeader

CACHED_BATCHES = 5
INT32_MAX = 0x7FFFFFFF


@dataclass
class _Batch:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int


@dataclass(frozen=True)
class ActiveProducer:
    """What a partition knows of one producer (DescribeProducers)."""

    producer_id: int
    epoch: int
    last_sequence: int  # -1: only a marker of it is known
    last_timestamp: int  # the max timestamp of its last batch; -1 as last_sequence
    coordinator_epoch: int
    current_txn_start_offset: int = -1


@dataclass
class _ProducerEntry:
    epoch: int
    coordinator_epoch: int = -1  # of the last transaction marker
    last_timestamp: int = -1
    batches: deque[_Batch] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))


def _last_seq(header: BatchHeader) -> int:
    return (header.base_sequence + header.last_offset_delta) % (INT32_MAX + 1)


class ProducerStateManager:
    def __init__(self) -> None:
        self._producers: dict[int, _ProducerEntry] = {}

    def __len__(self) -> int:
        return len(self._producers)

    def check(self, header: BatchHeader, topic_partition: str) -> tuple[int, int] | None:
        """Validate a leader append; returns (first, last) offsets if it is a duplicate."""
        pid = header.producer_id
        if pid < 0 or header.base_sequence < 0:
            return None
        entry = self._producers.get(pid)
        if entry is None or header.producer_epoch > entry.epoch:
            return None
        if header.producer_epoch < entry.epoch:
            raise ProducerFenced(f"{topic_partition}: producer {pid} epoch {header.producer_epoch} is "
                                 f"older than the current epoch {entry.epoch}")
        last = _last_seq(header)
        for b in entry.batches:
            if b.first_seq == header.base_sequence and b.last_seq == last:
                return b.first_offset, b.last_offset
        if entry.batches and last <= entry.batches[-1].last_seq and header.base_sequence <= last:
            raise DuplicateSequenceNumber(
                f"{topic_partition}: producer {pid} already wrote sequences up to "
                f"{entry.batches[-1].last_seq}; batch {header.base_sequence}-{last} is a replay")
        if entry.batches:
            expected = (entry.batches[-1].last_seq + 1) % (INT32_MAX + 1)
            if header.base_sequence != expected:
                raise OutOfOrderSequenceNumber(
                    f"{topic_partition}: producer {pid} sent sequence {header.base_sequence}, "
                    f"expected {expected}")
        return None

    def check_marker(self, header: BatchHeader, topic_partition: str,
                     coordinator_epoch: int = -1) -> None:
        """A transaction marker must not come from a producer epoch older than the
        producer's, nor from an older coordinator than the last marker's."""
        entry = self._producers.get(header.producer_id)
        if entry is None:
            return
        if header.producer_epoch < entry.epoch:
            raise ProducerFenced(f"{topic_partition}: marker for producer {header.producer_id} "
                                 f"epoch {header.producer_epoch} is older than the current "
                                 f"epoch {entry.epoch}")
        if coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFenced(
                f"{topic_partition}: marker for producer {header.producer_id} from coordinator "
                f"epoch {coordinator_epoch}, older than {entry.coordinator_epoch}")

    def update(self, header: BatchHeader, coordinator_epoch: int = -1) -> None:
        """Record an appended batch (its offsets already assigned; for a marker, the
        coordinator epoch it carries)."""
        pid = header.producer_id
        if header.is_control and pid >= 0:  # a marker may carry a newer epoch (a fence)
            entry = self._producers.get(pid)
            if entry is None or header.producer_epoch > entry.epoch:
                entry = self._producers[pid] = _ProducerEntry(header.producer_epoch)
            entry.coordinator_epoch = max(entry.coordinator_epoch, coordinator_epoch)
            return
        if pid < 0 or header.base_sequence < 0:
            return
        entry = self._producers.get(pid)
        if entry is None or header.producer_epoch > entry.epoch:
            entry = _ProducerEntry(header.producer_epoch)
            self._producers[pid] = entry
        elif header.producer_epoch < entry.epoch:
            return
        entry.batches.append(_Batch(header.base_sequence, _last_seq(header),
                                    header.base_offset, header.last_offset))
        entry.last_timestamp = header.max_timestamp

    def active(self) -> list[ActiveProducer]:
        """Every producer this partition keeps state for, by producer id."""
        return [ActiveProducer(pid, e.epoch, e.batches[-1].last_seq if e.batches else -1,
                               e.last_timestamp, e.coordinator_epoch)
                for pid, e in sorted(self._producers.items())]

    def last_records(self) -> dict[int, tuple[int | None, int]]:
        """Producer id -> (last offset of its last data batch, or None when only a marker
        of its epoch is known; its epoch): the batches the log cleaner keeps, if only as
        empty headers, so the producer's sequence and epoch stay in the log."""
        return {pid: (e.batches[-1].last_offset if e.batches else None, e.epoch)
                for pid, e in self._producers.items()}

    def truncate_from(self, offset: int) -> None:
        """Forget batches at or after ``offset`` (the log was truncated there)."""
        for pid in list(self._producers):
            entry = self._producers[pid]
            kept = [b for b in entry.batches if b.last_offset < offset]
            entry.batches = deque(kept, maxlen=CACHED_BATCHES)
            if not kept:
                del self._producers[pid]

    def clear(self) -> None:
        self._producers.clear()
