"""A transactional producer's side of Kafka transactions (``transactional.id``).

The :class:`~connector.client.producer.Producer` delegates to one
:class:`TransactionManager`, which talks to the transaction coordinator over connections
of its own (a :class:`~connector.client.sync_client.SyncClient` driven by the calling
thread, so the sender thread never waits on it):

1. ``init_transactions`` finds the coordinator (FindCoordinator, key type transaction) and
   gets the producer id and epoch (InitProducerId with the transactional id), which every
   batch then carries; an older instance with the same id is fenced by the new epoch.
2. ``begin_transaction`` is local. The first record for a partition in a transaction puts
   the partition on a pending list; the manager's ``txn-partitions`` thread adds everything
   pending in one AddPartitionsToTxn (so the coordinator knows where to write markers), and
   until a partition is added its batches wait in the accumulator (the sender does not
   drain them). ``send()`` never waits for the coordinator.
3. ``send_offsets_to_transaction`` adds the group (AddOffsetsToTxn) and commits its offsets
   at the group's coordinator inside the transaction (TxnOffsetCommit).
4. ``commit_transaction`` / ``abort_transaction`` flush what was sent, then EndTxn.

Retriable answers (the coordinator moving or loading, CONCURRENT_TRANSACTIONS while the
previous transaction completes) are retried after ``retry.backoff.ms`` until the call's
deadline (``max.block.ms``); PRODUCER_FENCED (or INVALID_PRODUCER_EPOCH) means another
instance took over: the producer is fenced for good and says so.

States: UNINITIALIZED → READY (after init) → IN_TRANSACTION (begin) → READY (commit or
abort); FENCED is final, and fails every queued record (``on_fatal``). Threading: the
control calls may come from any thread; ``_lock`` serialises use of the connections (the
adder thread takes it too, so a call never holds it across a flush); ``_cond`` guards the
pending and added partition sets.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from broker_sim.common import SYSTEM_CLOCK, Clock
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    ConcurrentTransactions,
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    InvalidProducerEpoch,
    KafkaError,
    NotCoordinator,
    ProducerFenced,
    UnknownTopicOrPartition,
    error_for_code,
)

from .config import ProducerConfig
from .errors import KafkaTimeoutError
from .idempotence import IdempotenceManager
from .metadata import Metadata, TopicPartition
from .sync_client import SyncClient

log = logging.getLogger(__name__)

GROUP_KEY, TRANSACTION_KEY = 0, 1
#: answers that mean "ask again (maybe another coordinator), a little later".
RETRY = frozenset({ConcurrentTransactions.code, CoordinatorLoadInProgress.code,
                   CoordinatorNotAvailable.code, NotCoordinator.code,
                   UnknownTopicOrPartition.code})
FENCED = frozenset({ProducerFenced.code, InvalidProducerEpoch.code})
CONCURRENT_BACKOFF_MS = 10


class TransactionState(enum.Enum):
    UNINITIALIZED = "uninitialized"
    READY = "ready"
    IN_TRANSACTION = "in transaction"
    FENCED = "fenced"


class TransactionError(KafkaError):
    """A transactional call made in the wrong state (e.g. send outside a transaction)."""


class TransactionManager:
    def __init__(self, config: ProducerConfig, idempotence: IdempotenceManager,
                 flush: Callable[[float | None], None], clock: Clock = SYSTEM_CLOCK,
                 wake: Callable[[], None] = lambda: None,
                 on_fatal: Callable[[BaseException], None] = lambda e: None) -> None:
        assert config.transactional_id is not None
        self.config = config
        self.transactional_id = config.transactional_id
        self.idempotence = idempotence
        self._flush = flush
        self._sync = SyncClient(config, Metadata(config), clock)
        self._lock = threading.RLock()
        self.state = TransactionState.UNINITIALIZED
        self._coordinator: int | None = None
        self._wake = wake
        self._on_fatal = on_fatal
        self._cond = threading.Condition()
        self._partitions: set[TopicPartition] = set()  # added to the transaction
        self._pending: set[TopicPartition] = set()  # waiting for the adder thread
        self._error: BaseException | None = None
        self._closed = False
        idempotence.partition_added = self._partitions.__contains__
        self._adder = threading.Thread(target=self._add_pending, name="txn-partitions",
                                       daemon=True)
        self._adder.start()

    # ---- the calls the producer exposes -------------------------------------------------
    def init_transactions(self, timeout: float | None = None) -> None:
        with self._lock:
            self._check_not_fenced()
            if self.state is TransactionState.IN_TRANSACTION:
                raise TransactionError("init_transactions inside a transaction")
            body = {"transactional_id": self.transactional_id,
                    "transaction_timeout_ms": self.config.transaction_timeout_ms,
                    "producer_id": -1, "producer_epoch": -1}
            response = self._to_coordinator(ApiKey.INIT_PRODUCER_ID, body,
                                             lambda r: r.error_code, timeout, "InitProducerId")
            self.idempotence.set_producer_id(response.producer_id, response.producer_epoch)
            self.state = TransactionState.READY
            log.info("transactional id %r: producer id %d, epoch %d", self.transactional_id,
                     response.producer_id, response.producer_epoch)

    def begin_transaction(self) -> None:
        with self._lock:
            self._check_not_fenced()
            if self.state is not TransactionState.READY:
                raise TransactionError(f"begin_transaction while {self.state.value} "
                                       "(call init_transactions first, and end a transaction "
                                       "before the next)")
            with self._cond:
                self._partitions.clear()
                self._pending.clear()
            self.state = TransactionState.IN_TRANSACTION

    def ensure_partition(self, tp: TopicPartition) -> None:
        """The first record for ``tp`` in this transaction: ``tp`` joins it (soon, on the
        adder thread; its batches wait until then)."""
        if tp in self._partitions or tp in self._pending:
            return
        self._check_not_fenced()
        if self.state is not TransactionState.IN_TRANSACTION:
            raise TransactionError("a transactional producer sends inside a transaction "
                                   "only (call begin_transaction first)")
        with self._cond:
            if tp not in self._partitions:
                self._pending.add(tp)
                self._cond.notify()

    def _add_pending(self) -> None:
        """The adder thread: one AddPartitionsToTxn for everything pending, then wake the
        sender, whose batches for those partitions may go now."""
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                batch = set(self._pending)
            try:
                with self._lock:
                    self._add(batch)
            except BaseException as e:  # noqa: BLE001 - fenced, refused, timed out
                log.error("transactional id %r: adding %s to the transaction failed: %s",
                          self.transactional_id, sorted(batch), e)
                with self._cond:
                    self._error = e
                    self._pending.clear()
                    self._cond.notify_all()
                self._on_fatal(e)
                continue
            with self._cond:
                self._partitions.update(batch)
                self._pending -= batch
                self._cond.notify_all()
            self._wake()

    def _add(self, partitions: set[TopicPartition]) -> None:
        pid, epoch = self.idempotence.producer_id_and_epoch
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        body = {"v3_and_below_transactional_id": self.transactional_id,
                "v3_and_below_producer_id": pid, "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
        self._to_coordinator(
            ApiKey.ADD_PARTITIONS_TO_TXN, body,
            lambda r: next((p.partition_error_code for t in r.results_by_topic_v3_and_below
                            for p in t.results_by_partition if p.partition_error_code), 0),
            None, f"AddPartitionsToTxn of {len(partitions)} partition(s)")

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, int], group_id: str,
                                    timeout: float | None = None) -> None:
        """Commit ``group_id``'s ``offsets`` (the next offsets to read) inside the
        transaction: they count only if it commits."""
        with self._lock:
            self._check_not_fenced()
            if self.state is not TransactionState.IN_TRANSACTION:
                raise TransactionError("send_offsets_to_transaction outside a transaction")
            pid, epoch = self.idempotence.producer_id_and_epoch
            self._to_coordinator(ApiKey.ADD_OFFSETS_TO_TXN, {
                "transactional_id": self.transactional_id, "producer_id": pid,
                "producer_epoch": epoch, "group_id": group_id}, lambda r: r.error_code, timeout,
                f"AddOffsetsToTxn of group {group_id!r}")
            by_topic: dict[str, list[dict[str, Any]]] = {}
            for tp, offset in offsets.items():
                by_topic.setdefault(tp.topic, []).append({
                    "partition_index": tp.partition, "committed_offset": offset,
                    "committed_leader_epoch": -1, "committed_metadata": ""})
            self._to_coordinator(ApiKey.TXN_OFFSET_COMMIT, {
                "transactional_id": self.transactional_id, "group_id": group_id,
                "producer_id": pid, "producer_epoch": epoch, "generation_id": -1,
                "member_id": "", "group_instance_id": None,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]},
                lambda r: next((p.error_code for t in r.topics for p in t.partitions
                                if p.error_code), 0), timeout,
                f"TxnOffsetCommit of group {group_id!r}", key=group_id, key_type=GROUP_KEY)

    def end_transaction(self, commit: bool, timeout: float | None = None) -> None:
        self._check_not_fenced()
        if self.state is not TransactionState.IN_TRANSACTION:
            raise TransactionError(f"{'commit' if commit else 'abort'}_transaction "
                                   "outside a transaction")
        self._flush(timeout)  # everything sent in it is written (the adder let it through)
        with self._cond:
            if self._error is not None:
                raise self._error
        with self._lock:
            self._check_not_fenced()
            if self._partitions or commit:
                pid, epoch = self.idempotence.producer_id_and_epoch
                self._to_coordinator(ApiKey.END_TXN, {
                    "transactional_id": self.transactional_id, "producer_id": pid,
                    "producer_epoch": epoch, "committed": commit}, lambda r: r.error_code,
                    timeout, "EndTxn")
            with self._cond:
                self._partitions.clear()
            self.state = TransactionState.READY

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._adder.join(5)
        self._sync.close()

    # ---- plumbing -----------------------------------------------------------------------
    def _check_not_fenced(self) -> None:
        if self.state is TransactionState.FENCED:
            raise ProducerFenced(f"transactional id {self.transactional_id!r}: this producer "
                                 "was fenced by a newer instance; close it")

    def _find(self, key: str, key_type: int, deadline: float) -> int:
        while True:
            response = self._sync.request_any(ApiKey.FIND_COORDINATOR, {
                "key": key, "key_type": key_type, "coordinator_keys": [key]}, deadline)
            if response.coordinators:
                response = response.coordinators[0]
            if response.error_code == 0:
                self._sync.client.add_node(response.node_id, response.host, response.port)
                return int(response.node_id)
            self._retry_or_raise(response.error_code, f"FindCoordinator for {key!r}", deadline)

    def _to_coordinator(self, api_key: int, body: Any, error_of: Callable[[Any], int],
                        timeout: float | None, what: str, key: str | None = None,
                        key_type: int = TRANSACTION_KEY) -> Any:
        """Send to the coordinator of ``key`` (default: the transactional id) until an
        answer that is not retriable; raise its error, if any."""
        deadline = self._sync.deadline(self.config.max_block_ms if timeout is None
                                       else timeout * 1000)
        key = self.transactional_id if key is None else key
        node = self._coordinator if key_type == TRANSACTION_KEY else None
        while True:
            if node is None:
                node = self._find(key, key_type, deadline)
                if key_type == TRANSACTION_KEY:
                    self._coordinator = node
            try:
                response = self._sync.request(node, api_key, body, deadline, fail_fast=True)
            except KafkaTimeoutError:
                raise
            except Exception as e:  # noqa: BLE001 - a connection failure: find it again
                if not getattr(e, "retriable", True):
                    raise
                node = None
                self._backoff(deadline, what)
                continue
            code = error_of(response)
            if code == 0:
                return response
            if code in (NotCoordinator.code, CoordinatorNotAvailable.code):
                node = None
            self._retry_or_raise(code, what, deadline)

    def _retry_or_raise(self, code: int, what: str, deadline: float) -> None:
        if code in FENCED:
            self.state = TransactionState.FENCED
            raise ProducerFenced(f"{what} for transactional id {self.transactional_id!r}: "
                                 "fenced by a newer producer instance with the same id")
        if code not in RETRY:
            raise error_for_code(code)(f"{what} for transactional id {self.transactional_id!r}")
        # the previous transaction is completing (its markers): that takes milliseconds,
        # so ask again soon rather than after the full retry.backoff.ms
        self._backoff(deadline, what, CONCURRENT_BACKOFF_MS
                      if code == ConcurrentTransactions.code else None)

    def _backoff(self, deadline: float, what: str, backoff_ms: float | None = None) -> None:
        backoff = self.config.retry_backoff_ms if backoff_ms is None else backoff_ms
        if self._sync.now() + backoff >= deadline:
            raise KafkaTimeoutError(f"timed out retrying {what} for transactional id "
                                    f"{self.transactional_id!r}")
        self._sync.client.poll(backoff, self._sync.now())
