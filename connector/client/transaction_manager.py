"""A transactional producer's side of Kafka transactions (``transactional.id``).

The :class:`~connector.client.producer.Producer` delegates to one
:class:`TransactionManager`, which talks to the transaction coordinator over connections
of its own (a :class:`~connector.client.sync_client.SyncClient` driven by the calling
thread, so the sender thread never waits on it):

1. ``init_transactions`` finds the coordinator (FindCoordinator, key type transaction) and
   gets the producer id and epoch (InitProducerId with the transactional id), which every
   batch then carries; an older instance with the same id is fenced by the new epoch.
2. ``begin_transaction`` is local. The first record for a partition in a transaction puts
   the partition on a pending list, and everything pending joins the transaction in one
   AddPartitionsToTxn (so the coordinator knows where to write markers); until a partition
   is added its batches wait in the accumulator (the sender does not drain them).
   ``send()`` never waits for the coordinator. The producer's sender thread sends that
   request itself (:meth:`send_adds`), on its connection to the coordinator's broker when
   that is ready, and drains the partitions' batches in the same loop as the answer: no
   other thread has to wake up between a transaction's first record and its first produce
   request. Anything else — no connection yet, an error, a retry — goes to the manager's
   ``txn-partitions`` thread, which asks the coordinator with Kafka's retry rules.
   One AddPartitionsToTxn is out at a time.
3. ``send_offsets_to_transaction`` adds the group (AddOffsetsToTxn) and commits its offsets
   at the group's coordinator inside the transaction (TxnOffsetCommit).
4. ``commit_transaction`` / ``abort_transaction`` flush what was sent, then EndTxn.

Requests go through a :class:`~connector.client.transaction_channel.TransactionChannel`
(coordinator lookup, Kafka's retry rules) under each call's deadline (``max.block.ms``);
PRODUCER_FENCED (or INVALID_PRODUCER_EPOCH) means another instance took over: the producer
is fenced for good and says so.

States: UNINITIALIZED → READY (after init) → IN_TRANSACTION (begin) → READY (commit or
abort); FENCED is final, and fails every queued record (``on_fatal``). Threading: the
control calls may come from any thread; ``_lock`` serialises use of the manager's
connections (the adder thread, a :class:`_PartitionAdder`, takes it too, so a call never holds it across a flush);
``_cond`` guards the pending and added partition sets and the request in flight.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from broker_sim.common import SYSTEM_CLOCK, Clock, ShutdownableThread
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import KafkaError, ProducerFenced

from .config import ProducerConfig
from .idempotence import IdempotenceManager
from .metadata import Metadata, TopicPartition
from .network_client import NetworkClient
from .sync_client import SyncClient
from .transaction_channel import (
    GROUP_KEY,
    TRANSACTION_KEY,
    TransactionChannel,
    add_partitions_error,
)

log = logging.getLogger(__name__)


class TransactionState(enum.Enum):
    UNINITIALIZED = "uninitialized"
    READY = "ready"
    IN_TRANSACTION = "in transaction"
    FENCED = "fenced"


class TransactionError(KafkaError):
    """A transactional call made in the wrong state (e.g. send outside a transaction)."""


class _PartitionAdder(ShutdownableThread):
    """The ``txn-partitions`` thread: each round asks the coordinator for what the sender
    handed over (:meth:`TransactionManager._add_handed_over`); ``wake`` ends its wait."""

    def __init__(self, manager: TransactionManager) -> None:
        super().__init__("txn-partitions")
        self.manager = manager

    def run_once(self) -> None:
        self.manager._add_handed_over(self.stopping)

    def wake(self) -> None:
        with self.manager._cond:
            self.manager._cond.notify_all()


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
        self._channel = TransactionChannel(self._sync, self.transactional_id,
                                           config.retry_backoff_ms)
        self._lock = threading.RLock()
        self.state = TransactionState.UNINITIALIZED
        self._wake = wake
        self._on_fatal = on_fatal
        self._cond = threading.Condition()
        self._partitions: set[TopicPartition] = set()  # added to the transaction
        self._pending: set[TopicPartition] = set()  # not yet added
        self._adding = False  # an AddPartitionsToTxn is out (the sender's or the adder's)
        self._handoff: set[TopicPartition] | None = None  # for the adder thread to add
        self._error: BaseException | None = None
        idempotence.partition_added = self._partitions.__contains__
        self._adder = _PartitionAdder(self)
        self._adder.start()

    # ---- the calls the producer exposes -------------------------------------------------
    def init_transactions(self, timeout: float | None = None) -> None:
        with self._lock:
            self._check_not_fenced()
            if self.state is TransactionState.IN_TRANSACTION:
                raise TransactionError("init_transactions inside a transaction")
            with self._fencing():
                pid, epoch = self._channel.init_producer_id(self.config.transaction_timeout_ms,
                                                            self._deadline(timeout))
            self.idempotence.set_producer_id(pid, epoch)
            self.state = TransactionState.READY
            log.info("transactional id %r: producer id %d, epoch %d", self.transactional_id,
                     pid, epoch)

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
        """The first record for ``tp`` in this transaction: ``tp`` joins it (soon; its
        batches wait until then)."""
        if tp in self._partitions or tp in self._pending:
            return
        self._check_not_fenced()
        if self.state is not TransactionState.IN_TRANSACTION:
            raise TransactionError("a transactional producer sends inside a transaction "
                                   "only (call begin_transaction first)")
        with self._cond:
            if tp not in self._partitions:
                self._pending.add(tp)
        self._wake()  # the sender thread sends the AddPartitionsToTxn (send_adds)

    def send_adds(self, client: NetworkClient, now: float) -> None:
        """The sender thread, each round: send one AddPartitionsToTxn for everything
        pending, unless one is out. On ``client`` (the sender's own) when the coordinator's
        broker is ready there, answered on this thread (:meth:`_sent_answer`); else the
        adder thread sends it."""
        with self._cond:
            if self._adding or not self._pending or self._error is not None \
                    or self.state is not TransactionState.IN_TRANSACTION:
                return
            batch = set(self._pending)
            self._adding = True
        node = self._channel.coordinator
        if node is None or not client.ready(node, now):
            self._to_adder(batch)  # (ready() started connecting: next time, perhaps)
            return
        pid, epoch = self.idempotence.producer_id_and_epoch
        try:
            future = client.send(node, ApiKey.ADD_PARTITIONS_TO_TXN,
                                 self._channel.add_partitions_body(pid, epoch, batch), now)
        except Exception:  # the adder tries with the full rules
            self._to_adder(batch)
            return
        future.add_callback(lambda response: self._sent_answer(batch, response))
        future.add_errback(lambda e: self._to_adder(batch))

    def _sent_answer(self, batch: set[TopicPartition], response: Any) -> None:
        """The answer to the sender's AddPartitionsToTxn: added, or the adder thread
        asks again (it retries what may be retried and meets fencing as a final error)."""
        if add_partitions_error(response) == 0:
            self._added(batch)
        else:
            self._to_adder(batch)

    def _to_adder(self, batch: set[TopicPartition]) -> None:
        with self._cond:
            self._handoff = batch
            self._cond.notify_all()

    def _added(self, batch: set[TopicPartition]) -> None:
        with self._cond:
            self._partitions.update(batch)
            self._pending -= batch
            self._adding = False
            self._cond.notify_all()

    def _add_handed_over(self, stopping: threading.Event) -> None:
        """A round of the adder thread: the AddPartitionsToTxn the sender thread handed
        over, asked until answered; then wake the sender, whose batches for those partitions
        may go. Returns at once when ``stopping``."""
        with self._cond:
            while self._handoff is None and not stopping.is_set():
                self._cond.wait()
            if stopping.is_set() or self._handoff is None:
                return
            batch, self._handoff = self._handoff, None
        try:
            with self._lock:
                self._add(batch)
        except BaseException as e:  # fenced, refused, timed out
            log.error("transactional id %r: adding %s to the transaction failed: %s",
                      self.transactional_id, sorted(batch), e)
            with self._cond:
                self._error = e
                self._pending.clear()
                self._adding = False
                self._cond.notify_all()
            self._on_fatal(e)
            return
        self._added(batch)
        self._wake()

    def _add(self, partitions: set[TopicPartition]) -> None:
        pid, epoch = self.idempotence.producer_id_and_epoch
        with self._fencing():
            self._channel.add_partitions(pid, epoch, partitions, self._deadline(None))

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
                with self._fencing():
                    self._channel.end_transaction(pid, epoch, commit, self._deadline(timeout))
            with self._cond:
                self._partitions.clear()
            self.state = TransactionState.READY

    def close(self) -> None:
        self._adder.stop(5)
        self._sync.close()

    # ---- plumbing -----------------------------------------------------------------------
    def _check_not_fenced(self) -> None:
        if self.state is TransactionState.FENCED:
            raise ProducerFenced(f"transactional id {self.transactional_id!r}: this producer "
                                 "was fenced by a newer instance; close it")

    def _deadline(self, timeout: float | None) -> float:
        """A call's deadline: ``timeout`` seconds, else ``max.block.ms``."""
        return self._sync.deadline(self.config.max_block_ms if timeout is None
                                   else timeout * 1000)

    @contextmanager
    def _fencing(self) -> Iterator[None]:
        """Being fenced is final for this producer."""
        try:
            yield
        except ProducerFenced:
            self.state = TransactionState.FENCED
            raise

    def _to_coordinator(self, api_key: int, body: Any, error_of: Callable[[Any], int],
                        timeout: float | None, what: str, key: str | None = None,
                        key_type: int = TRANSACTION_KEY) -> Any:
        with self._fencing():
            return self._channel.request(api_key, body, error_of, self._deadline(timeout),
                                         what, key, key_type)
