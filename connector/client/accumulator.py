"""The RecordAccumulator: per-partition queues of batches between ``send()`` and the sender.

``send()`` appends a record to the last open batch of its partition's deque (a new batch
when it does not fit, reserving memory from the :class:`BufferPool`); the sender thread
asks which nodes have something worth sending (:meth:`ready`), takes those batches out
(:meth:`drain`), fails those waiting too long (:meth:`expired_batches`) and puts back
those to retry (:meth:`reenqueue`). Nothing here reads the clock: every method that
depends on time takes ``now`` (ms, monotonic).

When is a partition's head batch **ready**? (Kafka's ``RecordAccumulator.ready``)::

    waited    = now - batch.last_attempt_ms      (creation, or the last retry)
    backoff   = batch is a retry and waited < retry.backoff.ms
    sendable  = full (the deque holds a second batch, or this one has no room)
                or waited >= linger.ms (retry.backoff.ms for a retry)
                or memory is exhausted (a send() is blocked in the pool)
                or a flush is in progress or the producer is closing
    ready     = sendable and not backoff and partition not muted and leader known

Worked example, linger.ms 5, batch.size 100, one partition led by node 0: a 40-byte record
at t=0 -> not ready, next check in 5 ms; at t=5 -> ready({0}). Three more 40-byte records
at t=6 fill one batch and open a second -> ready at once (full). A retry at t=20 with
retry.backoff.ms 100 -> not ready until t=120, even if full.

:meth:`drain` takes at most one batch per partition per request (the head of its deque),
rotating the starting partition per node so no partition starves, and stops adding to a
node's request before it would exceed ``max.request.size`` (one batch always goes). With
``max.in.flight.requests.per.connection == 1`` the sender mutes a partition while its
batch is in flight so records stay in order; muted partitions are neither ready nor
drained. With idempotence, drained batches get their producer id and sequence here.

Threading: ``append`` runs on any thread that calls ``send()``; everything else on the
sender thread, except ``begin_flush``/``await_flush_completion`` (the flushing thread).
One lock guards the deques and the set of incomplete batches; ``append`` releases it
while waiting for memory, then re-checks the deque (another thread may have opened a
batch meanwhile, in which case the memory is given back).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Sequence
from typing import NamedTuple

from broker_sim.common import SYSTEM_CLOCK, Clock
from broker_sim.protocol.records import HEADER_SIZE, RecordBatchBuilder

from .buffer_pool import BufferPool
from .config import ProducerConfig
from .errors import KafkaTimeoutError, ProducerClosedError
from .idempotence import IdempotenceManager
from .metadata import Cluster, TopicPartition
from .producer_batch import ProducerBatch, estimate_record_size
from .record_future import RecordFuture, SendCallback

log = logging.getLogger(__name__)


_new_tuple = tuple.__new__  # builds a NamedTuple without a Python-level __new__ call


class AppendResult(NamedTuple):
    future: RecordFuture
    batch_is_full: bool
    new_batch_created: bool


class ReadyCheckResult(NamedTuple):
    ready_nodes: set[int]
    next_ready_check_delay_ms: float
    unknown_leader_topics: set[str]


class RecordAccumulator:
    def __init__(self, config: ProducerConfig, pool: BufferPool | None = None,
                 idempotence: IdempotenceManager | None = None) -> None:
        self.batch_size = config.batch_size
        self.linger_ms = config.linger_ms
        self.retry_backoff_ms = config.retry_backoff_ms
        self.delivery_timeout_ms = config.delivery_timeout_ms
        self.codec = config.compression_codec
        self.pool = pool or BufferPool(config.buffer_memory)
        self.idempotence = idempotence
        self._lock = threading.Lock()
        self._batches: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._incomplete: dict[int, ProducerBatch] = {}  # id(batch) -> batch
        self._muted: set[TopicPartition] = set()
        self._drain_index: dict[int, int] = {}
        self._flushes_in_progress = 0
        self._closed = False

    # ---- appending (any thread) -----------------------------------------------------
    def append(self, tp: TopicPartition, timestamp: int, key: bytes | None,
               value: bytes | None, headers: Sequence[tuple[str, bytes | None]] | None,
               callback: SendCallback | None, max_block_ms: float, now: float,
               size: int = 0) -> AppendResult:
        """Add a record to ``tp``'s last batch, or to a new one (may block for memory).

        ``size``: the record's :func:`estimate_record_size`, if the caller has it already.
        """
        with self._lock:
            if self._closed:
                raise _closed_error()
            dq = self._batches.get(tp)
            if dq:
                last = dq[-1]
                future = last.try_append(timestamp, key, value, headers, callback, now, size)
                if future is not None:  # the common case: room in the open batch
                    return _new_tuple(AppendResult, (future, len(dq) > 1 or last.is_full, False))
            elif dq is None:
                dq = self._batches[tp] = deque()
        return self._append_to_new_batch(dq, tp, timestamp, key, value, headers, callback,
                                         max_block_ms, now, size)

    def _append_to_new_batch(self, dq: deque[ProducerBatch], tp: TopicPartition, timestamp: int,
                             key: bytes | None, value: bytes | None,
                             headers: Sequence[tuple[str, bytes | None]] | None,
                             callback: SendCallback | None, max_block_ms: float, now: float,
                             size: int) -> AppendResult:
        reserved = max(self.batch_size,
                       (size or estimate_record_size(key, value, headers)) + HEADER_SIZE)
        self.pool.allocate(reserved, max_block_ms)  # may block, without the lock
        with self._lock:
            if self._closed:
                self.pool.deallocate(reserved)
                raise _closed_error()
            if dq:  # another thread opened a batch while we waited for memory
                last = dq[-1]
                future = last.try_append(timestamp, key, value, headers, callback, now, size)
                if future is not None:
                    self.pool.deallocate(reserved)
                    return AppendResult(future, len(dq) > 1 or last.is_full, False)
            batch = ProducerBatch(tp, RecordBatchBuilder(self.codec), now, reserved, reserved)
            future = batch.try_append(timestamp, key, value, headers, callback, now, size)
            assert future is not None  # an empty batch takes any record
            dq.append(batch)
            self._incomplete[id(batch)] = batch
            return AppendResult(future, len(dq) > 1 or batch.is_full, True)

    # ---- the sender thread ----------------------------------------------------------
    def ready(self, cluster: Cluster, now: float) -> ReadyCheckResult:
        ready_nodes: set[int] = set()
        unknown: set[str] = set()
        next_delay = float("inf")
        exhausted = self.pool.queued > 0
        with self._lock:
            force = exhausted or self._closed or self._flushes_in_progress > 0
            for tp, dq in self._batches.items():
                if not dq or tp in self._muted:
                    continue
                leader = cluster.leader_for(tp)
                if leader is None:
                    unknown.add(tp.topic)
                    continue
                if leader in ready_nodes:
                    continue
                batch = dq[0]
                waited = now - batch.last_attempt_ms
                backing_off = batch.attempts > 0 and waited < self.retry_backoff_ms
                time_to_wait = self.retry_backoff_ms if batch.attempts > 0 else self.linger_ms
                full = len(dq) > 1 or batch.is_full
                sendable = full or waited >= time_to_wait or force
                if sendable and not backing_off:
                    ready_nodes.add(leader)
                else:
                    next_delay = min(next_delay, max(0.0, time_to_wait - waited))
        return ReadyCheckResult(ready_nodes, next_delay, unknown)

    def drain(self, cluster: Cluster, nodes: set[int] | list[int], max_size: int,
              now: float) -> dict[int, list[ProducerBatch]]:
        """Take ready batches for ``nodes``: at most one per partition, per node at most
        ``max_size`` bytes (one batch always)."""
        out: dict[int, list[ProducerBatch]] = {}
        idem = self.idempotence
        if idem is not None and not idem.has_producer_id:
            return out
        with self._lock:
            for node in nodes:
                parts = cluster.partitions_for_node(node)
                if not parts:
                    continue
                ready: list[ProducerBatch] = []
                size = 0
                start = self._drain_index.get(node, 0) % len(parts)
                for k in range(len(parts)):
                    i = (start + k) % len(parts)
                    # Remember where we are: a partition that does not fit this time
                    # is the first one served by the next drain.
                    self._drain_index[node] = i
                    tp = parts[i]
                    dq = self._batches.get(tp)
                    if not dq or tp in self._muted:
                        continue
                    batch = dq[0]
                    if batch.attempts > 0 and now - batch.last_attempt_ms < self.retry_backoff_ms:
                        continue
                    if idem is not None and not idem.can_drain(batch):
                        continue
                    if ready and size + batch.estimated_size() > max_size:
                        break  # the rest waits for the next request
                    dq.popleft()
                    self._close_for_send(batch)
                    size += len(batch.records)
                    batch.drained_ms = now
                    ready.append(batch)
                else:
                    self._drain_index[node] = start + 1
                if ready:
                    out[node] = ready
        return out

    def _close_for_send(self, batch: ProducerBatch) -> None:
        idem = self.idempotence
        if idem is None or batch.has_sequence:
            batch.close()
            return
        pid, epoch = idem.producer_id_and_epoch
        batch.close(pid, epoch, idem.assign(batch), idem.transactional)

    def expired_batches(self, now: float) -> list[ProducerBatch]:
        """Remove and return undrained batches older than ``delivery.timeout.ms``.

        The caller fails them (their futures get a KafkaTimeoutError) and deallocates them.
        """
        expired = []
        with self._lock:
            for dq in self._batches.values():
                while dq and dq[0].has_reached_delivery_timeout(self.delivery_timeout_ms, now):
                    expired.append(dq.popleft())
        return expired

    def next_expiry_delay(self, now: float) -> float:
        with self._lock:
            oldest = min((dq[0].created_ms for dq in self._batches.values() if dq),
                         default=None)
        return float("inf") if oldest is None else max(
            0.0, oldest + self.delivery_timeout_ms - now)

    def reenqueue(self, batch: ProducerBatch, now: float) -> None:
        """Put a batch to retry back at the head of its deque (in sequence order among
        retried batches when it has a sequence); it backs off ``retry.backoff.ms``."""
        batch.reenqueued(now)
        with self._lock:
            dq = self._batches.setdefault(batch.tp, deque())
            if not batch.has_sequence:
                dq.appendleft(batch)
                return
            i = 0
            while i < len(dq) and dq[i].has_sequence and dq[i].base_sequence < batch.base_sequence:
                i += 1
            dq.insert(i, batch)

    def mute_partition(self, tp: TopicPartition) -> None:
        self._muted.add(tp)

    def unmute_partition(self, tp: TopicPartition) -> None:
        self._muted.discard(tp)

    def is_muted(self, tp: TopicPartition) -> bool:
        return tp in self._muted

    def deallocate(self, batch: ProducerBatch) -> None:
        """The batch is done (acknowledged, failed or expired): release its memory."""
        with self._lock:
            if self._incomplete.pop(id(batch), None) is None:
                return
        self.pool.deallocate(batch.reserved_bytes)

    # ---- state ----------------------------------------------------------------------
    def has_undrained(self) -> bool:
        with self._lock:
            return any(self._batches.values())

    def has_incomplete(self) -> bool:
        with self._lock:
            return bool(self._incomplete)

    def undrained_count(self) -> int:
        with self._lock:
            return sum(len(dq) for dq in self._batches.values())

    def batches(self, tp: TopicPartition) -> list[ProducerBatch]:
        """A copy of ``tp``'s deque, head first (for tests and diagnostics)."""
        with self._lock:
            return list(self._batches.get(tp, ()))

    # ---- flush and close ------------------------------------------------------------
    def begin_flush(self) -> None:
        """Make every batch ready now, until :meth:`end_flush`."""
        with self._lock:
            self._flushes_in_progress += 1

    def end_flush(self) -> None:
        with self._lock:
            self._flushes_in_progress -= 1

    def await_flush_completion(self, timeout_ms: float | None,
                               clock: Clock = SYSTEM_CLOCK) -> None:
        """Block the flushing thread until every batch that exists now is done;
        KafkaTimeoutError after ``timeout_ms``."""
        with self._lock:
            pending = list(self._incomplete.values())
        deadline = None if timeout_ms is None else clock.monotonic_ms() + timeout_ms
        for batch in pending:
            remaining = None if deadline is None else max(
                0.0, (deadline - clock.monotonic_ms()) / 1000.0)
            if not batch.result.wait(remaining):
                raise KafkaTimeoutError(f"flush did not complete within {timeout_ms} ms "
                                        f"({self.undrained_count()} batch(es) not yet sent)")

    def close(self) -> None:
        """No more appends; every remaining batch becomes ready."""
        with self._lock:
            self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

    def abort_incomplete_batches(self, error: BaseException) -> list[ProducerBatch]:
        """Fail every batch not yet done (forced close). Returns the aborted batches."""
        with self._lock:
            self._closed = True
            for dq in self._batches.values():
                dq.clear()
            batches = list(self._incomplete.values())
            self._incomplete.clear()
        for batch in batches:
            batch.done(-1, -1, error)
            self.pool.deallocate(batch.reserved_bytes)
        return batches


def _closed_error() -> ProducerClosedError:
    return ProducerClosedError("cannot send after the producer is closed")
