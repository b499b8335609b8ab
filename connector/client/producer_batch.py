"""One producer batch: records for one partition that travel in one RecordBatch v2.

Life of a batch (all times in ms on the producer's monotonic clock)::

    created (open) --try_append()*--> drained: close() builds the bytes once
        --> in flight --response--> done(offset) | reenqueued() --> drained again ...
        \\--> expired / aborted: done(error)

* **Open**: records are appended into a
  :class:`~broker_sim.protocol.records.RecordBatchBuilder` (one bytearray, no per-record
  objects beyond the returned future). ``try_append`` refuses a record that would take
  the batch past ``size_limit`` (``batch.size``, or the size of a single record larger
  than that), except into an empty batch.
* **Closed**: ``close()`` stamps producer id, epoch and base sequence (idempotence) and
  builds the bytes, compressing if configured. A retried batch is sent again as the
  *same bytes*, so a broker that de-duplicates by (producer id, epoch, sequence) writes it
  once.
* **Done**: exactly once, with a base offset or an error; later attempts (a response
  arriving for a batch that already expired) are ignored and return False.

Threading: appends happen under the accumulator's lock (user threads); everything after
draining happens on the sender thread only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from broker_sim.protocol.records import RecordBatchBuilder

from .metadata import TopicPartition
from .record_future import ProduceRequestResult, RecordFuture, SendCallback
from .retry import delivery_expired

log = logging.getLogger(__name__)

# Upper bound of a record's varint overhead for everyday sizes: length (3), attributes (1),
# timestamp delta (5), offset delta (3), key and value lengths (3 + 3), header count (1).
RECORD_OVERHEAD = 19


def headers_size(headers: Sequence[tuple[str, bytes | None]]) -> int:
    return sum(len(k) * 3 + (len(v) if v is not None else 0) + 10 for k, v in headers)


def estimate_record_size(key: bytes | None, value: bytes | None,
                         headers: Sequence[tuple[str, bytes | None]] | None) -> int:
    size = RECORD_OVERHEAD + (len(key) if key is not None else 0) + (
        len(value) if value is not None else 0)
    return size + headers_size(headers) if headers else size


class ProducerBatch:
    __slots__ = ("tp", "builder", "result", "created_ms", "last_attempt_ms", "last_append_ms",
                 "drained_ms", "attempts", "in_retry", "size_limit", "reserved_bytes",
                 "record_count", "used_bytes", "base_sequence", "_records", "_final")

    def __init__(self, tp: TopicPartition, builder: RecordBatchBuilder, now: float,
                 size_limit: int, reserved_bytes: int) -> None:
        self.tp = tp
        self.builder: RecordBatchBuilder | None = builder
        self.result = ProduceRequestResult(tp.topic, tp.partition)
        self.created_ms = now
        self.last_attempt_ms = now
        self.last_append_ms = now
        self.drained_ms = -1.0
        self.attempts = 0
        self.in_retry = False
        self.size_limit = size_limit
        self.reserved_bytes = reserved_bytes
        self.record_count = 0
        self.used_bytes = builder.estimated_size()
        self.base_sequence = -1
        self._records: bytes | None = None
        self._final: str | None = None

    def __repr__(self) -> str:
        return (f"<ProducerBatch {self.tp} records={self.record_count} attempts={self.attempts}"
                f"{' seq=' + str(self.base_sequence) if self.base_sequence >= 0 else ''}>")

    # ---- appending (under the accumulator lock) -------------------------------------
    def try_append(self, timestamp: int, key: bytes | None, value: bytes | None,
                   headers: Sequence[tuple[str, bytes | None]] | None,
                   callback: SendCallback | None, now: float,
                   size: int = 0) -> RecordFuture | None:
        """Append a record and return its future, or None if it does not fit.

        ``size`` is the caller's :func:`estimate_record_size` of the record (computed here
        when 0); the hot path passes it in so it is computed once per record.
        """
        builder = self.builder
        if builder is None:
            return None  # closed
        if self.record_count:
            if not size:
                size = estimate_record_size(key, value, headers)
            if self.used_bytes + size > self.size_limit:
                return None
        relative = builder.append(timestamp, key, value, headers or ())
        self.used_bytes = builder.estimated_size()
        self.record_count = relative + 1
        self.last_append_ms = now
        future = RecordFuture(self.result, relative, timestamp)
        if callback is not None:
            future.add_send_callback(callback)
        return future

    @property
    def is_full(self) -> bool:
        return self.builder is None or self.used_bytes + RECORD_OVERHEAD >= self.size_limit

    @property
    def is_closed(self) -> bool:
        return self.builder is None

    def estimated_size(self) -> int:
        return len(self._records) if self.builder is None else self.builder.estimated_size()  # type: ignore[arg-type]  # closed (builder None) means _records was built

    # ---- sending (sender thread) ----------------------------------------------------
    def close(self, producer_id: int = -1, producer_epoch: int = -1,
              base_sequence: int = -1, transactional: bool = False) -> bytes:
        """Build the batch bytes (once); later calls return the same bytes."""
        builder = self.builder
        if builder is not None:
            builder.is_transactional = transactional
            builder.producer_id = producer_id
            builder.producer_epoch = producer_epoch
            builder.base_sequence = base_sequence
            self.base_sequence = base_sequence
            self._records = builder.build()
            self.builder = None
        assert self._records is not None
        return self._records

    @property
    def records(self) -> bytes:
        if self._records is None:
            raise RuntimeError(f"{self!r} is still open")
        return self._records

    @property
    def has_sequence(self) -> bool:
        return self.base_sequence >= 0

    def reenqueued(self, now: float) -> None:
        self.attempts += 1
        self.last_attempt_ms = now
        self.last_append_ms = now
        self.in_retry = True

    def has_reached_delivery_timeout(self, delivery_timeout_ms: float, now: float) -> bool:
        return delivery_expired(self.created_ms, delivery_timeout_ms, now)

    def is_done(self) -> bool:
        return self._final is not None

    def done(self, base_offset: int, log_append_time: int, error: BaseException | None) -> bool:
        """Complete every record's future; False if the batch was already completed."""
        final = "failed" if error is not None else "succeeded"
        if self._final is not None:
            log.debug("%r already %s; ignoring a later %s outcome", self, self._final, final)
            return False
        self._final = final
        self.result.done(base_offset, log_append_time, error)
        return True
