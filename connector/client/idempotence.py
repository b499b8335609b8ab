"""Producer id, epoch and per-partition sequence numbers of an idempotent producer.

With ``enable.idempotence`` the sender first obtains a producer id and epoch
(InitProducerId), then numbers every batch per partition: a batch of ``n`` records gets
``base_sequence = next``, and ``next += n``. The numbers are fixed when a batch is first
drained and never change, so a retry carries the same (producer id, epoch, sequence) and
a broker that de-duplicates writes it once (DUPLICATE_SEQUENCE_NUMBER answers a copy it
already has: the producer counts that as success).

Ordering with several batches of one partition in flight (at most five, the number of
batch sequences a Kafka broker remembers per producer): if batch ``s`` fails retriably,
later batches ``s+k`` already in flight are rejected by the broker as
OUT_OF_ORDER_SEQUENCE_NUMBER and retried too. Retried batches go back into the deque in
sequence order, and a retried batch is drained only when it is the lowest unacknowledged
sequence of its partition (:meth:`first_in_flight_sequence`), so the log receives them
in their original order.

Worked example: batches A (3 records) and B (2) of p0 get sequences 0 and 3; both in
flight; A fails with NOT_LEADER -> A and then B (out of order) go back as [A, B]; A is
drained (0 is the first unacknowledged), B waits until A is acknowledged, then goes.

Threading: sender thread only (the accumulator calls it from ``drain``, which only the
sender thread calls).
"""

from __future__ import annotations

import bisect
from typing import NamedTuple

from .metadata import TopicPartition
from .producer_batch import ProducerBatch

MAX_IN_FLIGHT_PER_PARTITION = 5
_SEQUENCE_MODULUS = 2**31


class ProducerIdAndEpoch(NamedTuple):
    producer_id: int
    epoch: int


NO_PRODUCER_ID = ProducerIdAndEpoch(-1, -1)


class IdempotenceManager:
    def __init__(self) -> None:
        self.producer_id_and_epoch = NO_PRODUCER_ID
        self._next_sequence: dict[TopicPartition, int] = {}
        # Unacknowledged batches per partition, sorted by base sequence.
        self._in_flight: dict[TopicPartition, list[tuple[int, int, ProducerBatch]]] = {}

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id_and_epoch.producer_id >= 0

    def set_producer_id(self, producer_id: int, epoch: int) -> None:
        self.producer_id_and_epoch = ProducerIdAndEpoch(producer_id, epoch)
        self._next_sequence.clear()

    def next_sequence(self, tp: TopicPartition) -> int:
        return self._next_sequence.get(tp, 0)

    def reserve(self, tp: TopicPartition, count: int) -> int:
        """The base sequence for the next ``count`` records of ``tp``; moves past them."""
        seq = self._next_sequence.get(tp, 0)
        self._next_sequence[tp] = (seq + count) % _SEQUENCE_MODULUS
        return seq

    def assign(self, batch: ProducerBatch) -> int:
        """Give a new batch its base sequence and track it as unacknowledged."""
        seq = self.reserve(batch.tp, batch.record_count)
        bisect.insort(self._in_flight.setdefault(batch.tp, []), (seq, id(batch), batch))
        return seq

    def first_in_flight_sequence(self, tp: TopicPartition) -> int | None:
        batches = self._in_flight.get(tp)
        return batches[0][0] if batches else None

    def in_flight_count(self, tp: TopicPartition) -> int:
        return len(self._in_flight.get(tp, ()))

    def can_drain(self, batch: ProducerBatch) -> bool:
        """A retried batch goes only as the partition's lowest unacknowledged sequence;
        a new one only while fewer than five of its partition are unacknowledged."""
        if batch.has_sequence:
            return self.first_in_flight_sequence(batch.tp) == batch.base_sequence
        return self.in_flight_count(batch.tp) < MAX_IN_FLIGHT_PER_PARTITION

    def completed(self, batch: ProducerBatch) -> None:
        """The batch is acknowledged or failed for good: stop tracking it."""
        batches = self._in_flight.get(batch.tp)
        if not batches:
            return
        for i, (_, _, b) in enumerate(batches):
            if b is batch:
                del batches[i]
                break
        if not batches:
            del self._in_flight[batch.tp]
