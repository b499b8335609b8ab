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

That rejection needs the broker to know the producer. A broker that holds no state for
it in a partition (the first write of this producer id and epoch there, or after its
state was removed) accepts *any* sequence: Apache Kafka does, so that a producer whose
records were all deleted can go on. So until the partition has acknowledged one batch of
this producer id and epoch, a batch goes alone: had B been sent while A was in flight, A
could fail with NOT_LEADER (a topic created a moment ago), B reach the leader a moment
later and be written at sequence 3 first, and A's retry be refused as out of order for
good. After the first acknowledgement up to five go at once.

InitProducerId outcomes (:func:`init_producer_id_retriable`, :func:`init_producer_id_error`):
COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
CONCURRENT_TRANSACTIONS, REQUEST_TIMED_OUT and the client's own retriable errors (a
disconnect, a request timeout, a node not ready) are worth another try; any other error
will not change by asking again, so it becomes the producer's fatal error, named with its
Kafka name, code and what it usually means.

Threading: sender thread only (the accumulator calls it from ``drain``, which only the
sender thread calls).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from typing import NamedTuple

from broker_sim.protocol.errors import (
    ClusterAuthorizationFailed,
    ConcurrentTransactions,
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    InvalidProducerEpoch,
    InvalidRequest,
    InvalidTransactionTimeout,
    KafkaError,
    NotCoordinator,
    ProducerFenced,
    RequestTimedOut,
    TransactionalIdAuthorizationFailed,
    UnknownServerError,
    UnsupportedVersion,
    error_for_code,
)

from .errors import ClientError
from .metadata import TopicPartition
from .producer_batch import ProducerBatch

MAX_IN_FLIGHT_PER_PARTITION = 5
_SEQUENCE_MODULUS = 2**31


class ProducerIdAndEpoch(NamedTuple):
    producer_id: int
    epoch: int


NO_PRODUCER_ID = ProducerIdAndEpoch(-1, -1)

#: InitProducerId error codes that another try may cure (the coordinator is loading or
#: moving, a previous transaction is completing, the broker timed out).
_RETRIABLE_INIT_PID_ERRORS = (CoordinatorLoadInProgress, NotCoordinator, CoordinatorNotAvailable,
                              ConcurrentTransactions, RequestTimedOut)

_INIT_PID_HINTS: dict[type[KafkaError], str] = {
    ClusterAuthorizationFailed: "an idempotent producer needs IdempotentWrite on the cluster "
                                "or Write on some topic",
    TransactionalIdAuthorizationFailed: "the principal may not use this transactional.id "
                                        "(Write on the transactional id is needed)",
    UnsupportedVersion: "the broker does not accept this version of InitProducerId",
    InvalidRequest: "the broker refused the request as invalid",
    InvalidTransactionTimeout: "transaction.timeout.ms is outside what the broker allows "
                               "(transaction.max.timeout.ms)",
    ProducerFenced: "a newer producer instance has taken over this producer id",
    InvalidProducerEpoch: "the producer's epoch is not the broker's current one",
}


def kafka_error_name(error: type[KafkaError]) -> str:
    """Kafka's name for an error class, e.g. ``CLUSTER_AUTHORIZATION_FAILED``."""
    found = re.search(r"``([A-Z_]+)``", error.__doc__ or "")
    if found:
        return found.group(1)
    return re.sub(r"(?<!^)(?=[A-Z])", "_", error.__name__).upper()


def init_producer_id_retriable(error: BaseException) -> bool:
    """Whether a failed InitProducerId is worth sending again (see the module docstring)."""
    if isinstance(error, ClientError):
        return error.retriable
    return isinstance(error, _RETRIABLE_INIT_PID_ERRORS)


def init_producer_id_error(code: int, version: int | None = None,
                           node: int | None = None) -> KafkaError:
    """The error for an InitProducerId response with ``code``: Kafka's class for it, with a
    message naming the API, the request's version and broker, the error and its meaning."""
    cls = error_for_code(code)
    request = "InitProducerId" + (f" v{version}" if version is not None else "") + (
        f" to broker {node}" if node is not None else "")
    if cls is UnknownServerError and code != UnknownServerError.code:
        return cls(f"{request} failed with error code {code}, which this client does not know")
    hint = _INIT_PID_HINTS.get(cls)
    if hint is None:
        hint = "retriable" if init_producer_id_retriable(cls()) else "not retriable"
    return cls(f"{request} failed with {kafka_error_name(cls)} (error {code}): {hint}")


class IdempotenceManager:
    def __init__(self, transactional: bool = False) -> None:
        self.producer_id_and_epoch = NO_PRODUCER_ID
        #: batches are written inside transactions; the producer id comes from the
        #: transaction coordinator (the transaction manager sets it), not the sender.
        self.transactional = transactional
        #: transactional: whether a partition has joined the current transaction (its
        #: batches wait in the accumulator until it has).
        self.partition_added: Callable[[TopicPartition], bool] | None = None
        self._next_sequence: dict[TopicPartition, int] = {}
        # Partitions that acknowledged a batch of this producer id and epoch: the broker
        # knows the producer there (see the module docstring).
        self._known_to_broker: set[TopicPartition] = set()
        # Unacknowledged batches per partition, sorted by base sequence.
        self._in_flight: dict[TopicPartition, list[tuple[int, int, ProducerBatch]]] = {}

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id_and_epoch.producer_id >= 0

    def set_producer_id(self, producer_id: int, epoch: int) -> None:
        self.producer_id_and_epoch = ProducerIdAndEpoch(producer_id, epoch)
        self._next_sequence.clear()
        self._known_to_broker.clear()

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
        a new one only while fewer than five of its partition are unacknowledged, and
        none before the partition has acknowledged one of this producer's batches."""
        if batch.has_sequence:
            return self.first_in_flight_sequence(batch.tp) == batch.base_sequence
        if self.partition_added is not None and not self.partition_added(batch.tp):
            return False
        return self.in_flight_count(batch.tp) < self.in_flight_limit(batch.tp)

    def in_flight_limit(self, tp: TopicPartition, most: int = MAX_IN_FLIGHT_PER_PARTITION) -> int:
        """How many batches of ``tp`` may be unacknowledged at once: ``most`` once the broker
        knows this producer id and epoch there, else one (see the module docstring)."""
        return most if tp in self._known_to_broker else 1

    def acknowledged(self, tp: TopicPartition) -> None:
        """The broker wrote a batch of this producer id and epoch to ``tp``: it knows the
        producer there from now on."""
        self._known_to_broker.add(tp)

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
