"""Requests to the coordinator of one transactional id, with Kafka's retry rules.

A :class:`TransactionChannel` is what every client-side user of a transaction shares: the
transactional producer's :class:`~connector.client.transaction_manager.TransactionManager`,
the sink's per-task transactions and the sink driver's commit
(:mod:`connector.sink.transactions`). It finds the coordinator (FindCoordinator, key type
transaction, cached until it moves), sends one request until an answer that is not
retriable, and raises that answer's error:

* retriable answers (the coordinator moving or loading, CONCURRENT_TRANSACTIONS while the
  previous transaction's markers are written, a lost connection) are asked again after
  ``retry.backoff.ms`` — after 10 ms for CONCURRENT_TRANSACTIONS, which clears in
  milliseconds — until the call's deadline (then :class:`KafkaTimeoutError`);
* PRODUCER_FENCED / INVALID_PRODUCER_EPOCH raise :class:`ProducerFenced`: a newer instance
  with the same transactional id took over, and no retry can change that.

The calls (``init_producer_id``, ``add_partitions``, ``end_transaction``) build Kafka's
bodies; EndTxn may be sent by anyone who knows the id, producer id and epoch, which is what
lets the sink's driver complete transactions its tasks opened.

Threading: one thread at a time (it drives its :class:`SyncClient` on the caller's thread).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    ConcurrentTransactions,
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    InvalidProducerEpoch,
    NotCoordinator,
    ProducerFenced,
    UnknownTopicOrPartition,
    error_for_code,
    is_retriable,
)

from .errors import KafkaTimeoutError
from .metadata import TopicPartition
from .sync_client import SyncClient

log = logging.getLogger(__name__)

GROUP_KEY, TRANSACTION_KEY = 0, 1
#: answers that mean "ask again (maybe another coordinator), a little later".
RETRY = frozenset({ConcurrentTransactions.code, CoordinatorLoadInProgress.code,
                   CoordinatorNotAvailable.code, NotCoordinator.code,
                   UnknownTopicOrPartition.code})
FENCED = frozenset({ProducerFenced.code, InvalidProducerEpoch.code})
CONCURRENT_BACKOFF_MS = 10


def add_partitions_error(response: Any) -> int:
    """The first partition error of an AddPartitionsToTxn answer (0: every one was added)."""
    return next((p.partition_error_code for t in response.results_by_topic_v3_and_below
                 for p in t.results_by_partition if p.partition_error_code), 0)


class TransactionChannel:
    def __init__(self, sync: SyncClient, transactional_id: str, retry_backoff_ms: float) -> None:
        self.sync = sync
        self.transactional_id = transactional_id
        self.retry_backoff_ms = retry_backoff_ms
        self.coordinator: int | None = None

    # ---- Kafka's transaction requests -----------------------------------------------------
    def init_producer_id(self, timeout_ms: int, deadline: float,
                         current: tuple[int, int] = (-1, -1)) -> tuple[int, int]:
        """(producer id, epoch) for the id: a new epoch, which fences (and aborts the open
        transaction of) every older instance."""
        response = self.request(ApiKey.INIT_PRODUCER_ID, {
            "transactional_id": self.transactional_id, "transaction_timeout_ms": timeout_ms,
            "producer_id": current[0], "producer_epoch": current[1]},
            lambda r: r.error_code, deadline, "InitProducerId")
        return int(response.producer_id), int(response.producer_epoch)

    def add_partitions(self, producer_id: int, epoch: int, partitions: Iterable[TopicPartition],
                       deadline: float) -> None:
        """AddPartitionsToTxn: the coordinator will write markers to these partitions."""
        body = self.add_partitions_body(producer_id, epoch, partitions)
        self.request(ApiKey.ADD_PARTITIONS_TO_TXN, body, add_partitions_error, deadline,
                     f"AddPartitionsToTxn of "
                     f"{sum(len(t['partitions']) for t in body['v3_and_below_topics'])} "
                     "partition(s)")

    def add_partitions_body(self, producer_id: int, epoch: int,
                            partitions: Iterable[TopicPartition]) -> dict[str, Any]:
        """AddPartitionsToTxn's body (for a caller that sends it on its own connection, as
        the transactional producer's sender thread does; :func:`add_partitions_error` reads
        the answer)."""
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        return {"v3_and_below_transactional_id": self.transactional_id,
                "v3_and_below_producer_id": producer_id, "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": [{"name": t, "partitions": ps}
                                        for t, ps in by_topic.items()]}

    def end_transaction(self, producer_id: int, epoch: int, commit: bool, deadline: float) -> None:
        """EndTxn: commit or abort the open transaction of (producer id, epoch)."""
        self.request(ApiKey.END_TXN, {
            "transactional_id": self.transactional_id, "producer_id": producer_id,
            "producer_epoch": epoch, "committed": commit}, lambda r: r.error_code, deadline,
            "EndTxn")

    # ---- plumbing ---------------------------------------------------------------------------
    def find(self, key: str, key_type: int, deadline: float) -> int:
        while True:
            response = self.sync.request_any(ApiKey.FIND_COORDINATOR, {
                "key": key, "key_type": key_type, "coordinator_keys": [key]}, deadline)
            if response.coordinators:
                response = response.coordinators[0]
            if response.error_code == 0:
                self.sync.client.add_node(response.node_id, response.host, response.port)
                return int(response.node_id)
            self.retry_or_raise(response.error_code, f"FindCoordinator for {key!r}", deadline)

    def request(self, api_key: int, body: Any, error_of: Callable[[Any], int], deadline: float,
                what: str, key: str | None = None, key_type: int = TRANSACTION_KEY) -> Any:
        """Send to the coordinator of ``key`` (default: the transactional id) until an
        answer that is not retriable; raise its error, if any."""
        key = self.transactional_id if key is None else key
        node = self.coordinator if key_type == TRANSACTION_KEY else None
        while True:
            if node is None:
                node = self.find(key, key_type, deadline)
                if key_type == TRANSACTION_KEY:
                    self.coordinator = node
            try:
                response = self.sync.request(node, api_key, body, deadline, fail_fast=True)
            except KafkaTimeoutError:
                raise
            except Exception as e:  # a connection failure: find it again
                if not is_retriable(e):
                    raise
                node = self.coordinator = None
                self.backoff(deadline, what)
                continue
            code = error_of(response)
            if code == 0:
                return response
            if code in (NotCoordinator.code, CoordinatorNotAvailable.code):
                node = None
                if key_type == TRANSACTION_KEY:
                    self.coordinator = None
            self.retry_or_raise(code, what, deadline)

    def retry_or_raise(self, code: int, what: str, deadline: float) -> None:
        if code in FENCED:
            raise ProducerFenced(f"{what} for transactional id {self.transactional_id!r}: "
                                 "fenced by a newer producer instance with the same id")
        if code not in RETRY:
            raise error_for_code(code)(f"{what} for transactional id {self.transactional_id!r}")
        self.backoff(deadline, what, CONCURRENT_BACKOFF_MS
                     if code == ConcurrentTransactions.code else None)

    def backoff(self, deadline: float, what: str, backoff_ms: float | None = None) -> None:
        backoff = self.retry_backoff_ms if backoff_ms is None else backoff_ms
        if self.sync.now() + backoff >= deadline:
            raise KafkaTimeoutError(f"timed out retrying {what} for transactional id "
                                    f"{self.transactional_id!r}")
        self.sync.client.poll(backoff, self.sync.now())
