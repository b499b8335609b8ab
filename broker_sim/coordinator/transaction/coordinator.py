"""The transaction coordinator: Kafka's transactions for producers with a ``transactional.id``.

A transactional producer finds its coordinator (the leader of its id's partition of
``__transaction_state``) and then:

1. **InitProducerId** — gets its producer id and a new epoch. The epoch bump fences every
   older instance with the same transactional id (their requests now fail PRODUCER_FENCED);
   a transaction such an instance left open is aborted first (the new instance is told
   CONCURRENT_TRANSACTIONS and retries until the abort is complete).
2. **AddPartitionsToTxn** — names each partition before its first write to it; the
   transaction is Ongoing from the first one, and ``transaction.timeout.ms`` starts.
3. **EndTxn** — commit or abort. The decision (PrepareCommit/PrepareAbort, with the
   partitions) is written to ``__transaction_state`` and the producer is answered; then
   the marker channel has every partition leader write a marker, and once
   all have, CompleteCommit/CompleteAbort is written. A coordinator that takes over a
   partition in the middle resends the markers of every prepared transaction it loads.

A transaction still Ongoing when its timeout passes is aborted by the coordinator, with
the epoch bumped so the late producer is fenced: one :class:`TransactionTimeout` on the
timing wheel per open transaction, never a scan. Every state change is written with acks=all
before it takes effect (:mod:`.metadata` has the states); one change is in flight per
transactional id at a time.

Offsets committed inside a transaction (AddOffsetsToTxn adds the group's partition of
``__consumer_offsets``; the group coordinator keeps TxnOffsetCommit's offsets pending until
the marker) complete with it. :meth:`describe` and :meth:`list` serve DescribeTransactions
and ListTransactions.

Threading: request handlers call in concurrently; a transaction's state is guarded by its
lock; callbacks run on whatever thread completes a write (they only queue responses or
start markers).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from ...common import SYSTEM_CLOCK, Clock
from ...protocol.errors import (
    ConcurrentTransactions,
    CoordinatorLoadInProgress,
    InvalidProducerEpoch,
    InvalidProducerIdMapping,
    InvalidRequest,
    InvalidTransactionTimeout,
    InvalidTxnState,
    KafkaError,
    ProducerFenced,
    TransactionalIdNotFound,
)
from ...purgatory import DelayedOperation, DelayedOperationPurgatory
from ...timer import SystemTimer
from .config import TransactionConfig
from .metadata import COMPLETE, PREPARED, TransactionMetadata, TxnState
from .store import TransactionStore

log = logging.getLogger(__name__)

MAX_EPOCH = 32767
#: how long a request may wait for its transaction to settle before it is answered
#: CONCURRENT_TRANSACTIONS (and the client asks again).
HOLD_MS = 1000
Answer = Callable[[int], None]


class MarkerChannel(Protocol):
    """Has every partition leader write a transaction's marker (the server's
    :class:`~broker_sim.server.txn_marker_sender.MarkerSender`), then calls ``done``."""

    def send(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
             partitions: set[tuple[str, int]], still_owned: Callable[[], bool],
             done: Callable[[], None]) -> None: ...

    def retry_later(self, action: Callable[[], None]) -> None: ...

    def shutdown(self) -> None: ...


def _code(e: KafkaError | None) -> int:
    return 0 if e is None else e.code


class TransactionTimeout(DelayedOperation):
    """Completes when *this* transaction leaves Ongoing; expiring aborts it. A transaction
    is known by its epoch and its start time: a producer's transactions share an epoch, so a
    timer armed by an earlier one must not abort a later one that happens to be open when
    it fires (it did: the live producer's transaction aborted with an epoch bump, fencing
    it)."""

    def __init__(self, coordinator: TransactionCoordinator, txn: TransactionMetadata,
                 timeout_ms: int) -> None:
        super().__init__(timeout_ms, txn.lock)
        self.coordinator = coordinator
        self.txn = txn
        self.epoch = txn.producer_epoch
        self.start_ms = txn.start_ms

    def try_complete(self) -> bool:
        if self.txn.state is not TxnState.ONGOING or self.txn.producer_epoch != self.epoch \
                or self.txn.start_ms != self.start_ms:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.coordinator.expire(self.txn, self.epoch, self.start_ms)


class AwaitSettled(DelayedOperation):
    """A request that found its transaction completing (the previous transaction's markers
    and completion being written): run again as soon as the transaction settles — so the
    producer's next AddPartitionsToTxn is answered the moment it can be, not after a
    CONCURRENT_TRANSACTIONS and a client backoff — or, after ``hold_ms``, run again and
    answered CONCURRENT_TRANSACTIONS if it still has to wait."""

    def __init__(self, txn: TransactionMetadata, again: Callable[[], None], hold_ms: int) -> None:
        super().__init__(hold_ms, txn.lock)
        self.txn = txn
        self.again = again

    def try_complete(self) -> bool:
        if _settled(self.txn):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.again()


def _settled(txn: TransactionMetadata) -> bool:
    """No state change is being written and no markers are out (the caller holds the lock)."""
    return not txn.pending and txn.state not in PREPARED


class TransactionCoordinator:
    def __init__(self, config: TransactionConfig, store: TransactionStore,
                 next_producer_id: Callable[[], int], markers: MarkerChannel,
                 clock: Clock = SYSTEM_CLOCK, timer: SystemTimer | None = None,
                 reaper_enabled: bool = True) -> None:
        self.config = config
        self.store = store
        self.next_producer_id = next_producer_id
        self.markers = markers
        self.clock = clock
        self.timeouts: DelayedOperationPurgatory[TransactionTimeout] = DelayedOperationPurgatory(
            "TransactionTimeout", timer=timer, clock=clock, reaper_enabled=reaper_enabled)
        #: requests waiting for their transaction to settle (on the same timer, whose
        #: reaper the timeouts' purgatory runs).
        self.waiting: DelayedOperationPurgatory[AwaitSettled] = DelayedOperationPurgatory(
            "AwaitSettled", timer=self.timeouts.timer, clock=clock, reaper_enabled=False)
        store.on_loaded = self._on_loaded

    # ---- InitProducerId -----------------------------------------------------------------
    def init_producer_id(self, txn_id: str, timeout_ms: int,
                         callback: Callable[[int, int, int], None],
                         expected: tuple[int, int] | None = None,
                         fenced_code: int = ProducerFenced.code) -> None:
        """``callback(error, producer id, epoch)``. ``expected`` (InitProducerId v3+,
        KIP-360): the id and epoch the producer has; only that instance may bump the epoch
        (a retry naming the epoch before the last bump gets the current one back), any other
        is fenced."""
        def fail(e: KafkaError) -> None:
            callback(e.code, -1, -1)

        if not txn_id:
            return fail(InvalidRequest("the transactional id must not be empty"))
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return fail(InvalidTransactionTimeout(
                f"transaction.timeout.ms={timeout_ms} is not allowed: the broker allows at most "
                f"transaction.max.timeout.ms={self.config.max_timeout_ms}"))
        error = self.store.ownership_error(txn_id)
        if error is not None:
            return fail(error)
        txn = self.store.get_or_create(txn_id)
        with txn.lock:
            if txn.pending or txn.state in PREPARED:
                return fail(ConcurrentTransactions(f"transaction {txn_id!r} is completing"))
            if expected is not None and txn.producer_id >= 0 \
                    and expected != (txn.producer_id, txn.producer_epoch):
                if expected == (txn.producer_id, txn.previous_epoch) \
                        and txn.state is not TxnState.ONGOING:
                    return callback(0, txn.producer_id, txn.producer_epoch)  # a lost answer
                return callback(fenced_code, -1, -1)
            if txn.state is TxnState.ONGOING:  # an older instance left it open: abort it
                log.info("transactional id %r: a new producer instance aborts the open "
                         "transaction of epoch %d", txn_id, txn.producer_epoch)
                self._decide(txn, commit=False, bump=True, answer=lambda code: None)
                return fail(ConcurrentTransactions(f"aborting the open transaction of {txn_id!r}"))
            if txn.producer_id < 0 or txn.producer_epoch >= MAX_EPOCH - 1:
                pid, epoch = self.next_producer_id(), 0
            else:
                pid, epoch = txn.producer_id, txn.producer_epoch + 1
            target = replace(txn, producer_id=pid, producer_epoch=epoch, timeout_ms=timeout_ms,
                             state=TxnState.EMPTY, partitions=set(), start_ms=-1,
                             last_update_ms=self.clock.wall_ms(),
                             previous_epoch=txn.producer_epoch if pid == txn.producer_id else -1)

            def stored(error: KafkaError | None) -> None:
                with txn.lock:
                    txn.pending = False
                    if error is None:
                        self._apply(txn, target)
                callback(_code(error), pid if error is None else -1,
                         epoch if error is None else -1)
                self._settle(txn)

            self._write(txn, target, stored)

    # ---- AddPartitionsToTxn -------------------------------------------------------------
    def add_partitions(self, txn_id: str, producer_id: int, epoch: int,
                       partitions: set[tuple[str, int]], answer: Answer,
                       fenced_code: int = ProducerFenced.code, may_wait: bool = True) -> None:
        """Partitions join the open transaction (which starts with the first ones). While
        the previous transaction completes, the request waits for it (``may_wait``, at most
        :data:`HOLD_MS`), then CONCURRENT_TRANSACTIONS."""
        txn, error = self._owned_txn(txn_id)
        if txn is None:
            return answer(error)
        with txn.lock:
            error = self._check(txn, producer_id, epoch, fenced_code)
            if error:
                return answer(error)
            if not _settled(txn):
                if may_wait:
                    return self._await_settled(txn, lambda: self.add_partitions(
                        txn_id, producer_id, epoch, partitions, answer, fenced_code, False))
                return answer(ConcurrentTransactions.code)
            if txn.state is TxnState.ONGOING and partitions <= txn.partitions:
                return answer(0)
            starting = txn.state is not TxnState.ONGOING
            now = self.clock.wall_ms()
            target = replace(txn, state=TxnState.ONGOING, last_update_ms=now,
                             partitions=set(partitions) | (set() if starting else txn.partitions),
                             start_ms=now if starting else txn.start_ms)

            def stored(error: KafkaError | None) -> None:
                with txn.lock:
                    txn.pending = False
                    if error is None:
                        self._apply(txn, target)
                        if starting:
                            self._arm_timeout(txn, txn.timeout_ms)
                answer(_code(error))
                self._settle(txn)

            self._write(txn, target, stored)

    # ---- EndTxn -------------------------------------------------------------------------
    def end_txn(self, txn_id: str, producer_id: int, epoch: int, commit: bool, answer: Answer,
                fenced_code: int = ProducerFenced.code) -> None:
        txn, error = self._owned_txn(txn_id)
        if txn is None:
            return answer(error)
        with txn.lock:
            error = self._check(txn, producer_id, epoch, fenced_code)
            if error:
                return answer(error)
            state = txn.state
            if txn.pending or state in PREPARED:
                wanted = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
                return answer(ConcurrentTransactions.code if state in (wanted, TxnState.ONGOING)
                              or txn.pending else InvalidTxnState.code)
            if state is TxnState.ONGOING:
                return self._decide(txn, commit, bump=False, answer=answer)
            if state in COMPLETE and (state is TxnState.COMPLETE_COMMIT) == commit:
                return answer(0)  # a retry of an EndTxn that went through
            answer(InvalidTxnState.code)

    # ---- deciding and completing --------------------------------------------------------
    def _decide(self, txn: TransactionMetadata, commit: bool, bump: bool, answer: Answer) -> None:
        """Write PrepareCommit/PrepareAbort (under ``txn.lock``), answer, send the markers."""
        epoch = txn.producer_epoch + 1 if bump else txn.producer_epoch
        target = replace(txn, state=TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
                         producer_epoch=epoch, last_update_ms=self.clock.wall_ms())

        def stored(error: KafkaError | None) -> None:
            with txn.lock:
                if error is not None:
                    txn.pending = False
                else:
                    self._apply(txn, target)  # pending stays set until complete
            answer(_code(error))
            if error is None:
                self._send_markers(txn)
            else:
                self._settle(txn)

        self._write(txn, target, stored)

    def _send_markers(self, txn: TransactionMetadata) -> None:
        with txn.lock:
            commit = txn.state is TxnState.PREPARE_COMMIT
            pid, epoch, partitions = txn.producer_id, txn.producer_epoch, set(txn.partitions)
        coordinator_epoch = self.store.epoch_of(txn.transactional_id)
        self.markers.send(pid, epoch, commit, coordinator_epoch, partitions,
                          still_owned=lambda: self.store.get(txn.transactional_id) is txn,
                          done=lambda: self._complete(txn))

    def _complete(self, txn: TransactionMetadata) -> None:
        with txn.lock:
            if txn.state not in PREPARED:
                return
            target = replace(txn, partitions=set(), last_update_ms=self.clock.wall_ms(),
                             state=TxnState.COMPLETE_COMMIT if txn.state is TxnState.PREPARE_COMMIT
                             else TxnState.COMPLETE_ABORT)

            def stored(error: KafkaError | None) -> None:
                if error is None:
                    with txn.lock:
                        txn.pending = False
                        self._apply(txn, target)
                    self._settle(txn)
                    return
                log.warning("transactional id %r: writing %s failed (%s); retrying",
                            txn.transactional_id, target.state.label, error)
                with txn.lock:
                    txn.pending = False  # _complete writes it again while still owned
                if self.store.get(txn.transactional_id) is txn:
                    self.markers.retry_later(lambda: self._complete(txn))

            self._write(txn, target, stored)

    def expire(self, txn: TransactionMetadata, epoch: int, start_ms: int) -> None:
        """transaction.timeout.ms passed with the transaction begun at ``start_ms`` still
        open: abort it."""
        with txn.lock:
            if txn.state is not TxnState.ONGOING or txn.producer_epoch != epoch or txn.pending \
                    or txn.start_ms != start_ms:
                return
            log.info("transactional id %r: transaction of epoch %d timed out after %d ms; "
                     "aborting", txn.transactional_id, epoch, txn.timeout_ms)
            self._decide(txn, commit=False, bump=True, answer=lambda code: None)

    # ---- looking at transactions -------------------------------------------------------
    def describe(self, txn_id: str) -> tuple[int, TransactionMetadata | None]:
        """(error, a snapshot of the transaction's state)."""
        error = self.store.ownership_error(txn_id)
        if error is not None:
            return error.code, None
        txn = self.store.get(txn_id)
        if txn is None:
            return TransactionalIdNotFound.code, None
        with txn.lock:
            return 0, replace(txn, partitions=set(txn.partitions))

    def list(self, states: set[str], producer_ids: set[int], min_duration_ms: int
             ) -> tuple[int, list[TransactionMetadata]]:
        """(error, snapshots) of the transactions here matching every filter given: state
        names, producer ids, open for longer than ``min_duration_ms`` (-1: any)."""
        now = self.clock.wall_ms()
        out = []
        for txn in self.store.entities():
            with txn.lock:
                if states and txn.state.label not in states:
                    continue
                if producer_ids and txn.producer_id not in producer_ids:
                    continue
                if min_duration_ms >= 0 and (txn.start_ms < 0 or now - txn.start_ms <= min_duration_ms):
                    continue
                out.append(replace(txn, partitions=set(txn.partitions)))
        error = CoordinatorLoadInProgress.code if self.store.any_loading() else 0
        return error, sorted(out, key=lambda t: t.transactional_id)

    # ---- helpers ------------------------------------------------------------------------
    def _owned_txn(self, txn_id: str) -> tuple[TransactionMetadata | None, int]:
        """(the transaction, 0) if this coordinator owns and knows ``txn_id``, else
        (None, the error to answer)."""
        error = self.store.ownership_error(txn_id)
        if error is not None:
            return None, error.code
        txn = self.store.get(txn_id)
        if txn is None:
            return None, InvalidProducerIdMapping.code
        return txn, 0

    @staticmethod
    def _check(txn: TransactionMetadata, producer_id: int, epoch: int, fenced_code: int) -> int:
        if txn.producer_id != producer_id:
            return InvalidProducerIdMapping.code
        if epoch != txn.producer_epoch:
            return fenced_code if epoch < txn.producer_epoch else InvalidProducerEpoch.code
        return 0

    def _write(self, txn: TransactionMetadata, target: TransactionMetadata,
               stored: Callable[[KafkaError | None], None]) -> None:
        """Write ``target`` as ``txn``'s next state (the caller holds ``txn.lock``)."""
        txn.pending = True
        self.store.append(txn.transactional_id, [self.store.record(target)], stored)

    @staticmethod
    def _apply(txn: TransactionMetadata, target: TransactionMetadata) -> None:
        txn.producer_id, txn.producer_epoch = target.producer_id, target.producer_epoch
        txn.timeout_ms, txn.state = target.timeout_ms, target.state
        txn.partitions, txn.start_ms = set(target.partitions), target.start_ms
        txn.last_update_ms, txn.previous_epoch = target.last_update_ms, target.previous_epoch

    def _await_settled(self, txn: TransactionMetadata, again: Callable[[], None]) -> None:
        """Run ``again`` once ``txn`` settles, or after :data:`HOLD_MS` (under ``txn.lock``)."""
        self.waiting.try_complete_else_watch(AwaitSettled(txn, again, HOLD_MS),
                                             [txn.transactional_id])

    def _settle(self, txn: TransactionMetadata) -> None:
        """``txn`` may have settled: run the requests waiting for it, drop its timer."""
        self.waiting.check_and_complete(txn.transactional_id)
        self.timeouts.check_and_complete(txn.transactional_id)

    def _arm_timeout(self, txn: TransactionMetadata, timeout_ms: int) -> None:
        self.timeouts.try_complete_else_watch(TransactionTimeout(self, txn, max(timeout_ms, 0)),
                                              [txn.transactional_id])

    def _on_loaded(self, txn: TransactionMetadata) -> None:
        """A new coordinator finishes what the old one had decided and times what is open."""
        with txn.lock:
            if txn.state in PREPARED:
                txn.pending = True
                resend = True
            else:
                resend = False
                if txn.state is TxnState.ONGOING:
                    left = txn.start_ms + txn.timeout_ms - self.clock.wall_ms()
                    self._arm_timeout(txn, left)
        if resend:
            log.info("transactional id %r: resending the markers of %s", txn.transactional_id,
                     txn.state.label)
            self._send_markers(txn)

    def shutdown(self) -> None:
        self.store.shutdown()
        self.markers.shutdown()
        self.timeouts.shutdown()  # and the timer the waiting requests share
