"""The producer's background I/O thread: moves batches from the accumulator to brokers.

Each :meth:`Sender.run_once` is one iteration of the producer's send loop (the same steps
as the Java producer's sender; docs/architecture.md, "The client", puts it in context):

1. ask the accumulator which nodes lead partitions with a *ready* head batch; topics with
   an unknown leader trigger a metadata refresh;
2. drop nodes whose connection is not ready (this starts connecting to them);
3. drain ready batches grouped by node, up to ``max.request.size`` per request;
4. with ``max.in.flight.requests.per.connection == 1``, mute each drained partition until
   its response arrives, so a retry cannot overtake a later batch;
5. expire batches (queued or in flight) older than ``delivery.timeout.ms``: their
   futures fail with :class:`~connector.client.errors.KafkaTimeoutError`;
6. send one Produce request per node;
7. poll the network for at most the time until the next batch becomes ready (0 if
   something was just sent, so the loop comes straight back for more).

Responses are handled on this thread, inside ``poll``: success completes the batch's
futures with its base offset; a **retriable** error (NOT_LEADER_OR_FOLLOWER,
NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, a disconnect...) puts the batch back at the head
of its deque (``retry.backoff.ms``, at most ``retries`` times, never past the delivery
timeout), refreshing metadata first when the error says it is stale; any other error
fails the batch's futures. With acks=0 there is no response: a batch counts as sent
(offset -1) once its request is written.

With ``enable.idempotence`` the first iterations obtain a producer id (InitProducerId)
before any batch is drained; batches then carry (producer id, epoch, base sequence), see
:mod:`connector.client.idempotence`. DUPLICATE_SEQUENCE_NUMBER means the broker already
has the batch: success. OUT_OF_ORDER_SEQUENCE_NUMBER is retriable while an earlier batch
of the partition is still unacknowledged (it is being retried first), fatal otherwise;
after a fatal sequence error the producer id is reset once nothing is in flight (with
InitProducerId v3+ the broker bumps the epoch of the same id, KIP-360). InitProducerId
errors that may pass (a coordinator loading or moving, a disconnect, a timeout) are
retried every ``retry.backoff.ms``, logged with the error's name; any other — or a broker
without a usable InitProducerId version — becomes :attr:`Sender.fatal_error`: queued
records fail with it at once, and so do later ``send()`` and ``flush()`` calls.

A transactional producer's partitions join each transaction before their batches may be
drained: :attr:`Sender.before_send` (the transaction manager's ``send_adds``) runs at the
start of each iteration and sends the AddPartitionsToTxn on this thread's network client.

Threading: :class:`Sender` is the one sender thread (a
:class:`~broker_sim.common.ShutdownableThread`), which owns the network client, the
idempotence state and every drained batch. Other threads only call :meth:`Sender.wake`,
:meth:`Sender.request_stop` and :meth:`Sender.force_close` (which set flags and wake the
selector). The loop survives a failing iteration (logged), and on close keeps going until
every batch is sent or failed — or, forced, fails them all at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from broker_sim.common import SYSTEM_CLOCK, Clock, ShutdownableThread
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    DuplicateSequenceNumber,
    KafkaError,
    OutOfOrderSequenceNumber,
    PyqError,
    UnknownServerError,
    error_for_code,
)
from broker_sim.protocol.messages.produce import ProduceResponseView

from .accumulator import RecordAccumulator
from .config import ProducerConfig
from .errors import IncompatibleBrokerError, KafkaTimeoutError, ProducerClosedError
from .idempotence import (
    NO_PRODUCER_ID,
    IdempotenceManager,
    init_producer_id_error,
    init_producer_id_retriable,
    kafka_error_name,
)
from .metadata import Metadata, TopicPartition
from .network_client import NetworkClient
from .produce_request import produce_body
from .producer_batch import ProducerBatch
from .request_future import RequestFuture
from .retry import delivery_expired, may_retry

log = logging.getLogger(__name__)


class Sender(ShutdownableThread):
    """The producer's I/O thread (see the module docstring for one iteration).

    Owns the network client's connections and the in-flight map; the accumulator is shared
    with ``send()`` callers under its own lock. Stopping has two speeds:
    :meth:`request_stop` closes the accumulator to new records and lets the thread finish
    sending what it holds (in :meth:`on_stopped`), :meth:`force_close` fails it instead.
    Both return at once; ``join`` (or :meth:`stop`) waits.
    """

    def __init__(self, config: ProducerConfig, client: NetworkClient, metadata: Metadata,
                 accumulator: RecordAccumulator, idempotence: IdempotenceManager | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        super().__init__(f"pyq-producer-sender-{config.client_id}")
        self.config = config
        self.client = client
        self.metadata = metadata
        self.accumulator = accumulator
        self.idempotence = idempotence
        self.clock = clock
        self._forced = False
        self._in_flight: dict[int, ProducerBatch] = {}  # id(batch) -> batch awaiting a response
        self._pid_future: RequestFuture | None = None
        self._pid_retry_at = 0.0
        #: A non-retriable InitProducerId refusal: every record fails with it from then on.
        self.fatal_error: BaseException | None = None
        self._reset_producer_id = False
        self._pid_attempts = 0  # InitProducerId failures in a row (for the log)
        #: The id and epoch to ask a bump of (KIP-360); -1, -1 for a new producer id.
        self._bump_from = NO_PRODUCER_ID
        #: Called with ``now`` before each iteration's drain (transactions: partitions join).
        self.before_send: Callable[[float], None] | None = None

    # ---- the thread -----------------------------------------------------------------
    def on_stopped(self) -> None:
        """Closing: send what is left unless forced to stop, then close the connections."""
        while not self._forced and (self.accumulator.has_undrained() or self._in_flight
                                    or self.client.in_flight_count() > 0):
            try:
                self.run_once()
            except Exception:
                log.exception("uncaught error in the producer's sender loop; continuing")
        if self._forced:
            error = ProducerClosedError("producer closed forcefully before the record was sent")
            aborted = self.accumulator.abort_incomplete_batches(error)
            if aborted:
                log.warning("aborted %d incomplete batch(es) on forced close", len(aborted))
        self.client.close()

    def wake(self) -> None:
        self.client.wakeup()

    def request_stop(self) -> None:
        """Stop accepting records; the thread ends once everything is sent or failed."""
        self.accumulator.close()
        super().request_stop()

    def force_close(self) -> None:
        """Stop now, failing every unsent or unacknowledged record."""
        self._forced = True
        self.request_stop()

    # ---- one iteration --------------------------------------------------------------
    def run_once(self, now: float | None = None) -> None:
        if now is None:
            now = self.clock.monotonic_ms()
        fatal = self.client.fatal_error or self.fatal_error
        if fatal is not None:  # authentication or InitProducerId refused: fail every record
            aborted = self.accumulator.abort_incomplete_batches(fatal)
            if aborted:
                log.error("failed %d batch(es): %s", len(aborted), fatal)
            self.client.poll(self.config.retry_backoff_ms, now)
            return
        if self.idempotence is not None and not self._ensure_producer_id(now):
            self._expire(now)
            self.client.poll(self.config.retry_backoff_ms, now)
            return
        if self.before_send is not None:
            self.before_send(now)
        timeout = self.send_producer_data(now)
        self.client.poll(timeout, now)

    def send_producer_data(self, now: float) -> float:
        """Steps 1-6; returns the poll timeout of step 7."""
        cluster = self.metadata.cluster
        result = self.accumulator.ready(cluster, now)                                  # (1)
        if result.unknown_leader_topics:
            self.metadata.add_topics(*result.unknown_leader_topics)
            self.metadata.request_update()
        ready = set()
        not_ready_timeout = float("inf")
        for node in result.ready_nodes:                                               # (2)
            if self.client.ready(node, now):
                ready.add(node)
            else:
                not_ready_timeout = min(not_ready_timeout, self.client.connection_delay(node, now))
        batches = self.accumulator.drain(cluster, ready, self.config.max_request_size, now)  # (3)
        for node_batches in batches.values():
            for batch in node_batches:
                if self.config.guarantees_order:                                      # (4)
                    self.accumulator.mute_partition(batch.tp)
                self._in_flight[id(batch)] = batch
        self._expire(now)                                                             # (5)
        for node, node_batches in batches.items():                                    # (6)
            self._send_produce_request(node, node_batches, now)
        if batches:
            return 0.0
        return min(result.next_ready_check_delay_ms, not_ready_timeout,               # (7)
                   self.accumulator.next_expiry_delay(now), self.config.metadata_max_age_ms)

    def _expire(self, now: float) -> None:
        timeout = self.config.delivery_timeout_ms
        expired = self.accumulator.expired_batches(now)
        expired += [b for b in self._in_flight.values()
                    if b.has_reached_delivery_timeout(timeout, now)]
        for batch in expired:
            self._fail(batch, KafkaTimeoutError(
                f"Expiring {batch.record_count} record(s) for {batch.tp}: "
                f"{now - batch.created_ms:.0f} ms has passed since batch creation "
                f"(delivery.timeout.ms={timeout})"))

    # ---- produce requests -----------------------------------------------------------
    def _send_produce_request(self, node: int, batches: list[ProducerBatch], now: float) -> None:
        by_tp = {batch.tp: batch for batch in batches}
        body = produce_body(((b.tp.topic, b.tp.partition, b.records) for b in batches),
                            self.config.acks, self.config.request_timeout_ms,
                            self.config.transactional_id)
        acks = self.config.acks
        try:
            future = self.client.send(node, ApiKey.PRODUCE, body, now,
                                      expect_response=acks != 0)
        except Exception as e:  # not ready after all, or no usable Produce version
            self._handle_failure(by_tp, e)
            return
        if acks == 0:
            future.add_callback(lambda _: self._handle_unacknowledged(by_tp))
        else:
            future.add_callback(lambda body: self._handle_response(body, by_tp))
        future.add_errback(lambda e: self._handle_failure(by_tp, e))

    def _handle_unacknowledged(self, by_tp: dict[TopicPartition, ProducerBatch]) -> None:
        for batch in by_tp.values():
            self._succeed(batch, -1, -1)

    def _handle_response(self, body: ProduceResponseView, by_tp: dict[TopicPartition, ProducerBatch]) -> None:
        now = self.clock.monotonic_ms()
        pending = dict(by_tp)
        for topic in body.responses:
            for p in topic.partition_responses:
                batch = pending.pop(TopicPartition(topic.name, p.index), None)
                if batch is None:
                    log.warning("produce response for %s-%d, which was not in the request",
                                topic.name, p.index)
                    continue
                self._complete(batch, p.error_code, p.base_offset, p.log_append_time_ms,
                               p.error_message, now)
        for batch in pending.values():
            self._fail(batch, UnknownServerError(f"produce response has no result for {batch.tp}"))

    def _handle_failure(self, by_tp: dict[TopicPartition, ProducerBatch],
                        error: BaseException) -> None:
        now = self.clock.monotonic_ms()
        if isinstance(error, PyqError) and error.invalid_metadata:
            self.metadata.request_update()
        for batch in by_tp.values():
            self._retry_or_fail(batch, error, now)

    def _complete(self, batch: ProducerBatch, error_code: int, base_offset: int,
                  log_append_time: int, message: str | None, now: float) -> None:
        if error_code == 0:
            self._succeed(batch, base_offset, log_append_time)
            return
        error_cls = error_for_code(error_code)
        if error_cls is DuplicateSequenceNumber:
            log.debug("%r was already written (duplicate sequence): success", batch)
            self._succeed(batch, base_offset, log_append_time)
            return
        error = error_cls(message or f"{error_cls.__name__} for {batch.tp}")
        if error.invalid_metadata:
            self.metadata.request_update()
        self._retry_or_fail(batch, error, now)

    def _retry_or_fail(self, batch: ProducerBatch, error: BaseException, now: float) -> None:
        if batch.is_done():  # expired while in flight; its outcome is already final
            self._forget(batch)
            return
        if self._can_retry(batch, error, now):
            log.warning("retrying %r (attempt %d of %d) after: %s", batch, batch.attempts + 1,
                        self.config.retries, error)
            self._in_flight.pop(id(batch), None)
            if self.config.guarantees_order:
                self.accumulator.unmute_partition(batch.tp)
            self.accumulator.reenqueue(batch, now)
            return
        self._fail(batch, error)

    def _can_retry(self, batch: ProducerBatch, error: BaseException, now: float) -> bool:
        if batch.attempts >= self.config.retries or self.config.acks == 0:
            return False
        if isinstance(error, OutOfOrderSequenceNumber) and self.idempotence is not None:
            # Retriable only behind an earlier batch that is being retried.
            first = self.idempotence.first_in_flight_sequence(batch.tp)
            return (first is not None and first != batch.base_sequence
                    and not delivery_expired(batch.created_ms, self.config.delivery_timeout_ms, now))
        return may_retry(error, batch.created_ms, self.config.delivery_timeout_ms, now)

    def _succeed(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        batch.done(base_offset, log_append_time, None)
        if self.idempotence is not None:
            self.idempotence.acknowledged(batch.tp)
        self._forget(batch)

    def _fail(self, batch: ProducerBatch, error: BaseException) -> None:
        if batch.done(-1, -1, error):
            log.warning("failed to send %r: %s", batch, error)
            if self.idempotence is not None and batch.has_sequence:
                self._reset_producer_id = True  # a sequence gap: start a new producer id
        self._forget(batch)

    def _forget(self, batch: ProducerBatch) -> None:
        self._in_flight.pop(id(batch), None)
        if self.idempotence is not None:
            self.idempotence.completed(batch)
        if self.config.guarantees_order:
            self.accumulator.unmute_partition(batch.tp)
        self.accumulator.deallocate(batch)

    # ---- idempotence ----------------------------------------------------------------
    def _ensure_producer_id(self, now: float) -> bool:
        """True once a producer id is known; otherwise sends InitProducerId (one at a time).

        The request goes in the highest version both sides implement (up to v4). A fresh
        producer sends producer id and epoch -1; after a sequence error the producer sends
        its current id and epoch, and a v3+ broker bumps the epoch (KIP-360); an older
        broker (or a v3+ one past the last epoch) hands out a new id.
        """
        idem = self.idempotence
        assert idem is not None
        if self._reset_producer_id and not self._in_flight:
            log.info("resetting producer id %s after a sequence error",
                     idem.producer_id_and_epoch)
            self._bump_from = idem.producer_id_and_epoch
            idem.set_producer_id(*NO_PRODUCER_ID)
            self._reset_producer_id = False
        if idem.has_producer_id:
            return True
        if idem.transactional:  # the transaction manager asks the transaction coordinator
            return False
        if self._pid_future is not None or now < self._pid_retry_at:
            return False
        node = self.client.least_loaded_node(now)
        if node is None or not self.client.ready(node, now):
            return False
        try:
            version = self.client.api_version(node, ApiKey.INIT_PRODUCER_ID)
        except IncompatibleBrokerError as e:
            self._pid_failed(IncompatibleBrokerError(
                f"InitProducerId: {e}; an idempotent producer cannot start without it "
                "(enable.idempotence=false produces without a producer id)"), node, None)
            return False
        body = {"transactional_id": None, "transaction_timeout_ms": 60_000,
                "producer_id": self._bump_from.producer_id,
                "producer_epoch": self._bump_from.epoch}
        try:
            future = self.client.send(node, ApiKey.INIT_PRODUCER_ID, body, now, version=version)
        except Exception as e:  # the connection went away since ready(), or similar
            self._pid_failed(e, node, version)
            return False
        self._pid_future = future

        def done(body: Any) -> None:
            self._pid_future = None
            if body.error_code:
                self._pid_failed(init_producer_id_error(body.error_code, version, node),
                                 node, version)
                return
            self._pid_attempts = 0
            self._bump_from = NO_PRODUCER_ID
            idem.set_producer_id(body.producer_id, body.producer_epoch)
            log.info("producer id %d, epoch %d (InitProducerId v%d, broker %d)",
                     body.producer_id, body.producer_epoch, version, node)

        def failed(error: BaseException) -> None:
            self._pid_future = None
            self._pid_failed(error, node, version)

        future.add_callback(done)
        future.add_errback(failed)
        return False

    def _pid_failed(self, error: BaseException, node: int, version: int | None) -> None:
        """Retry a retriable InitProducerId failure after ``retry.backoff.ms``; any other
        becomes the producer's fatal error: queued records fail with it, and so do later
        ``send()`` and ``flush()`` calls."""
        if not (isinstance(error, PyqError) and "InitProducerId" in str(error)):
            name = kafka_error_name(type(error)) if isinstance(error, KafkaError) \
                else type(error).__name__
            request = "InitProducerId" + (f" v{version}" if version is not None else "")
            error = _with_message(error, f"{request} to broker {node} failed with {name}: "
                                         f"{error}")
        if not init_producer_id_retriable(error):
            log.error("%s; the producer cannot send: every record fails with this error",
                      error)
            self.fatal_error = error
            return
        self._pid_attempts += 1
        self._pid_retry_at = self.clock.monotonic_ms() + self.config.retry_backoff_ms
        log.warning("%s (attempt %d); retrying in %d ms", error, self._pid_attempts,
                    self.config.retry_backoff_ms)

def _with_message(error: BaseException, message: str) -> BaseException:
    """The same kind of error with a clearer message (the original kept as its cause)."""
    try:
        clearer = type(error)(message)
    except Exception:  # a constructor that takes something else: keep the original
        return error
    clearer.__cause__ = error
    return clearer
