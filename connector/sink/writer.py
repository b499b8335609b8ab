"""Executor side of the sink: write one task's rows with acks=all, or fail the task.

Spark hands a task its rows as Arrow record batches. Each batch is split by topic and
partition with array operations (:mod:`.arrow_records`: the ``partition`` column, else
Kafka's murmur2 of the key, else round robin over the task's row index), encoded
without a Python object per row, and sent by a :class:`~.batch_sender.BatchSender`: one
RecordBatch of up to ``kafka.batch.size`` bytes (default 900 KiB) per request, up to
:data:`~.batch_sender.MAX_IN_FLIGHT` requests in flight per partition (written in
sequence order), every partition of the task in flight at once. A partition's rows wait
for a full batch across Spark's Arrow batches until the task's rows end, or, with
``kafka.linger.ms``, until they have waited that long when the next Arrow batch arrives. ``write`` returns only when
every row is acknowledged by the in-sync replicas; otherwise it raises, the task fails
and Spark retries it.

Two guarantees:

* **at least once** (default): a fresh idempotent producer id from the cluster
  (InitProducerId). Retries inside one attempt are de-duplicated by the leader; a
  *retried task* writes its rows again.
* **exactly once** (``exactlyOnce=true``): the task writes inside a Kafka transaction that
  the driver commits with the whole micro-batch (:mod:`.transactions`); a retried task
  fences and aborts its predecessor's transaction, and a replayed batch is either
  resolved (its transactions were already decided) or written again after the old
  transactions are aborted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from broker_sim.common import SYSTEM_CLOCK, Clock
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.records.compression import codec_id
from connector.client.config import AdminConfig
from connector.client.idempotence import init_producer_id_error, init_producer_id_retriable
from connector.client.sync_client import SyncClient

from .arrow_records import binary_parts, indices, murmur2_partitions
from .batch_sender import BatchSender
from .options import SinkOptions
from .transactions import Decision, TaskTransaction, TaskTransactionWriter, resolve_decided

log = logging.getLogger(__name__)

#: Largest RecordBatch the sink builds: under the brokers' default message.max.bytes (1 MiB).
#: How long a write waits for a topic created a moment ago to reach the brokers' metadata
#: (as a producer waits up to max.block.ms).
TOPIC_WAIT_MS = 10_000
#: Per-row overhead of the record encoding, for sizing batches (varints, attributes, deltas).
ROW_OVERHEAD = 12


@dataclass
class SinkCommitMessage:
    """What one task wrote: rows, topics, and (exactly once) its open transaction."""

    rows: int
    topics: tuple[str, ...] = ()
    transaction: TaskTransaction | None = None
    batch_id: int | None = None  # the micro-batch (None: a plain batch write)


def _init_producer_id(sync: Any, timeout_ms: float = 60_000) -> tuple[int, int]:
    """A producer id for an at-least-once task. A retriable answer is asked again, after the
    client's ``retry.backoff.ms``, until ``timeout_ms``: Apache Kafka answers
    COORDINATOR_LOAD_IN_PROGRESS while it loads the transaction log (the first
    InitProducerId after a cluster starts)."""
    deadline = sync.deadline(timeout_ms)
    backoff_ms = sync.config.retry_backoff_ms
    while True:
        resp = sync.request_any(ApiKey.INIT_PRODUCER_ID,
                                {"transactional_id": None, "transaction_timeout_ms": 60_000,
                                 "producer_id": -1, "producer_epoch": -1}, deadline)
        if not resp.error_code:
            return resp.producer_id, resp.producer_epoch
        error = init_producer_id_error(resp.error_code)
        if not init_producer_id_retriable(error) or sync.now() + backoff_ms >= deadline:
            raise error
        log.info("%s; asking again in %.0f ms", error, backoff_ms)
        sync.client.poll(backoff_ms, sync.now())


def _column(batch: pa.RecordBatch, name: str) -> pa.Array | None:
    index = batch.schema.get_field_index(name)
    return batch.column(index) if index >= 0 else None


class TaskWriter:
    """Splits one task's Arrow batches by topic-partition and hands them to the sender.

    A partition's partial batch lingers (``kafka.linger.ms``) as read on ``clock``."""

    def __init__(self, options: SinkOptions, sender: BatchSender, sync: Any,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.options, self.sender, self.sync = options, sender, sync
        self._clock = clock
        self.rows = 0  # rows seen so far: the round-robin position of keyless rows
        self._partition_counts: dict[str, int] = {}
        # Rows of a partition not sent yet, so batches fill up across Spark's Arrow batches
        # (deterministic: it depends only on the rows).
        self._pending: dict[tuple[str, int], list[_Piece]] = {}
        self._pending_since: dict[tuple[str, int], float] = {}
        self._batch_bytes = options.batch_bytes
        self._linger_ms = options.linger_ms

    def partitions(self, topic: str) -> int:
        n = self._partition_counts.get(topic)
        if n is None:
            n = self.sync.metadata.cluster.partition_count(topic)
            if n is None:
                n = self.sync.await_topic(topic, self.sync.deadline(TOPIC_WAIT_MS))
            if n is None:
                raise ValueError(f"pyq sink: topic {topic!r} does not exist")
            self._partition_counts[topic] = n
        return n

    def write(self, batch: pa.RecordBatch) -> None:
        n = batch.num_rows
        if n == 0:
            return
        topics = _column(batch, "topic")
        if self.options.topic is not None or topics is None:
            groups = [(self.options.topic, np.arange(n))]
        else:
            if topics.null_count:
                raise ValueError("pyq sink: a row has no topic (null 'topic' column and no 'topic' option)")
            codes = pc.dictionary_encode(topics).combine_chunks() if isinstance(topics, pa.ChunkedArray) \
                else pc.dictionary_encode(topics)
            indices = np.asarray(codes.indices)
            groups = [(name, np.nonzero(indices == i)[0]) for i, name in enumerate(codes.dictionary.to_pylist())]
        for topic, rows in groups:
            self._write_topic(batch, str(topic), rows)
        self.rows += n
        if self._linger_ms is not None:
            self._send_lingered(self._clock.monotonic_ms())

    def _send_lingered(self, now_ms: float) -> None:
        """Send partial batches that have waited ``kafka.linger.ms`` for more rows."""
        linger = self._linger_ms
        assert linger is not None
        for key, since in list(self._pending_since.items()):
            pieces = self._pending.get(key)
            if pieces and now_ms - since >= linger:
                self._emit(key, _join(pieces))
                pieces.clear()
                del self._pending_since[key]

    def _write_topic(self, batch: pa.RecordBatch, topic: str, rows: np.ndarray) -> None:
        whole = len(rows) == batch.num_rows
        keys, values = _column(batch, "key"), batch.column("value")  # check_schema requires "value"
        headers, explicit = _column(batch, "headers"), _column(batch, "partition")
        if not whole:
            pick = indices(rows)
            keys = None if keys is None else keys.take(pick)
            values = values.take(pick)
            headers = None if headers is None else headers.take(pick)
            explicit = None if explicit is None else explicit.take(pick)
        if headers is not None and headers.null_count == len(headers):
            headers = None
        n_parts = self.partitions(topic)
        parts = (self.rows + rows).astype(np.int64) % n_parts  # round robin, deterministic
        if keys is not None and keys.null_count < len(keys):
            hashed = murmur2_partitions(keys, n_parts)
            with_key = np.asarray(keys.is_valid().to_numpy(zero_copy_only=False), bool)
            parts = np.where(with_key, hashed, parts)
        if explicit is not None and explicit.null_count < len(explicit):
            given = np.where(np.asarray(explicit.is_valid().to_numpy(zero_copy_only=False), bool),
                             np.nan_to_num(explicit.to_numpy(zero_copy_only=False), nan=-1), -1
                             ).astype(np.int64)
            bad = given[(given >= n_parts) | (given < -1)]
            if len(bad):
                raise ValueError(f"pyq sink: partition {int(bad[0])} does not exist in topic "
                                 f"{topic!r} ({n_parts} partitions)")
            parts = np.where(given >= 0, given, parts)
        rows_of = _Piece(keys, values, headers, _sizes(keys, values))
        # One stable sort groups the rows by partition, keeping their order within each.
        order = np.argsort(parts, kind="stable")
        parts = parts[order]
        if parts[0] != parts[-1]:
            rows_of = rows_of.take(order)
        cuts = np.flatnonzero(parts[1:] != parts[:-1]) + 1
        for start, stop in zip([0, *cuts.tolist()], [*cuts.tolist(), len(parts)], strict=True):
            self._send(topic, int(parts[start]), rows_of.slice(start, stop))

    def _send(self, topic: str, partition: int, rows: _Piece) -> None:
        """Add rows to the partition's pending piece; send every full batch in it."""
        key = (topic, partition)
        pieces = self._pending.setdefault(key, [])
        if not pieces:
            self._pending_since[key] = self._clock.monotonic_ms()
        pieces.append(rows)
        limit = self._batch_bytes
        if sum(int(p.sizes.sum()) for p in pieces) < limit:
            return  # not a full batch yet: wait for the next Arrow batch (or the final flush)
        piece = _join(pieces)
        ends = np.cumsum(piece.sizes)
        start = 0
        while start < len(piece.values):  # cut full batches (at least one row each)
            base = ends[start - 1] if start else 0
            stop = max(start + 1, int(np.searchsorted(ends, base + limit, "right")))
            if stop == len(piece.values) and ends[-1] - base < limit:
                pieces[:] = [piece.slice(start)]  # the rest waits for more rows
                return
            self._emit(key, piece.slice(start, stop))
            start = stop
        pieces.clear()
        self._pending_since.pop(key, None)

    def flush(self) -> None:
        """Send what is pending in every partition (the end of the task's rows)."""
        for key, pieces in sorted(self._pending.items()):
            if pieces:
                self._emit(key, _join(pieces))
        self._pending.clear()
        self._pending_since.clear()

    def _emit(self, key: tuple[str, int], piece: _Piece) -> None:
        self.sender.send(key[0], key[1], piece.keys, piece.values, piece.headers,
                         int(piece.sizes.sum()))


@dataclass
class _Piece:
    """Rows of one partition not sent yet (columns and the estimated size of each row)."""

    keys: pa.Array | None
    values: pa.Array
    headers: pa.Array | None
    sizes: np.ndarray

    def take(self, order: np.ndarray) -> _Piece:
        pick = indices(order)
        return _Piece(None if self.keys is None else self.keys.take(pick), self.values.take(pick),
                      None if self.headers is None else self.headers.take(pick), self.sizes[order])

    def slice(self, start: int, stop: int | None = None) -> _Piece:
        stop = len(self.values) if stop is None else stop
        return _Piece(_slice(self.keys, start, stop), self.values.slice(start, stop - start),
                      _slice(self.headers, start, stop), self.sizes[start:stop])


def _slice(array: pa.Array | None, start: int, stop: int) -> pa.Array | None:
    return None if array is None else array.slice(start, stop - start)


def _join(pieces: list[_Piece]) -> _Piece:
    """One piece of all the rows, in order (a single piece is returned as it is)."""
    if len(pieces) == 1:
        return pieces[0]
    lengths = [len(p.values) for p in pieces]
    typ = pieces[0].values.type
    return _Piece(_concat([p.keys for p in pieces], lengths),
                  pa.concat_arrays([p.values.cast(typ) for p in pieces]),
                  _concat([p.headers for p in pieces], lengths),
                  np.concatenate([p.sizes for p in pieces]))


def _concat(columns: list[pa.Array | None], lengths: list[int]) -> pa.Array | None:
    """Concatenate an optional column of several pieces (missing in a piece: nulls)."""
    present = [c for c in columns if c is not None]
    if not present:
        return None
    typ = present[0].type
    return pa.concat_arrays([pa.nulls(n, typ) if c is None else c.cast(typ)
                             for c, n in zip(columns, lengths, strict=True)])


def _sizes(keys: pa.Array | None, values: pa.Array) -> np.ndarray:
    voff, _, _ = binary_parts(values)
    size = np.diff(voff) + ROW_OVERHEAD
    if keys is not None:
        koff, _, _ = binary_parts(keys)
        size += np.diff(koff)
    return size


def write_batches(batches: Iterable[pa.RecordBatch], options: SinkOptions, spark_partition: int,
                  batch_id: int | None, decided: Decision | None = None) -> SinkCommitMessage:
    """Write one task's batches; returns once every row is acknowledged (acks=all).

    Exactly once: the rows are written in the task's transaction, left open for the
    driver; if ``decided`` (the driver's last decision) names this batch and partition,
    the old transaction is resolved instead, and the rows written again only if it was
    aborted.
    """
    client = options.client()
    if options.exactly_once and decided is not None and batch_id is not None \
            and decided.names(batch_id, spark_partition):
        assert options.query_name is not None
        resolved = resolve_decided(client, options.query_name, spark_partition)
        if resolved is not None:
            return SinkCommitMessage(0, (), resolved, batch_id)
    sync = SyncClient(AdminConfig.coerce(client))
    if options.topic is not None:
        # Asked for in the client's first metadata request (sent for InitProducerId): else
        # the first row waits for a second request, which the client holds back for
        # retry.backoff.ms (100 ms) after the first.
        sync.metadata.add_topics(options.topic)
    try:
        txn = None
        if options.exactly_once:
            assert options.query_name is not None
            txn = TaskTransactionWriter(sync, options.query_name, spark_partition,
                                        options.transaction_timeout_ms)
            pid, epoch = txn.begin()
        else:
            pid, epoch = _init_producer_id(sync)
        sender = BatchSender(sync, pid, epoch, codec_id(options.compression),
                             delivery_timeout_ms=options.delivery_timeout_ms,
                             join=None if txn is None else txn.add,
                             transactional_id=None if txn is None else txn.channel.transactional_id)
        writer = TaskWriter(options, sender, sync)
        for batch in batches:
            writer.write(batch)
        writer.flush()
        sender.flush()
        topics = tuple(sorted({t for t, _ in sender.queues}))
        opened = txn.opened() if txn is not None and sender.joined else None
        return SinkCommitMessage(writer.rows, topics, opened, batch_id)
    finally:
        sync.close()
