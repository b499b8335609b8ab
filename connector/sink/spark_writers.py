"""The Spark side of the sink: batch and streaming Arrow writers over :mod:`.writer`.

Executors run ``write`` (one task's rows, :func:`.writer.write_batches`); the driver runs
``commit`` / ``abort`` with every task's message. With ``exactlyOnce`` the messages name
the tasks' open transactions and the driver ends them (:mod:`.transactions`): the stream
writer records its decision for the micro-batch first, so a restarted query can tell a
decided batch from one to write again. Spark builds a fresh writer on the driver for each
commit, and the one its tasks use once per query run: the last decision is read when a
writer is built, which is before any task of a run's first (maybe replayed) batch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from .options import SinkOptions
from .transactions import Decision, end_transactions, read_decision, record_decision
from .writer import SinkCommitMessage, write_batches

log = logging.getLogger(__name__)


def _task() -> tuple[int, int | None]:
    """(Spark partition id, micro-batch id) of the running task. The batch id is Spark's
    ``streaming.sql.batchId`` local property: set in streaming writes, and in a batch
    write inside ``foreachBatch`` when the function sets it (None otherwise)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return 0, None
    batch = ctx.getLocalProperty("streaming.sql.batchId")
    return ctx.partitionId(), int(batch) if batch is not None else None


def _write(batches: Iterator[Any], options: SinkOptions, decided: Decision | None
           ) -> WriterCommitMessage:
    partition, batch = _task()
    if options.formats is not None:  # valueFormat/keyFormat=avro: encode struct columns
        batches = options.formats.encode(batches)
    message = write_batches(batches, options, partition, batch, decided)
    return _Commit(message.rows, message.topics, message.transaction, message.batch_id)


class _Commit(SinkCommitMessage, WriterCommitMessage):
    pass


def _done(messages: list[Any]) -> list[SinkCommitMessage]:
    return [m for m in messages if m is not None]


def _summary(messages: list[Any]) -> str:
    done = _done(messages)
    txns = [m.transaction for m in done if m.transaction is not None]
    return (f"{sum(m.rows for m in done)} rows from {len(done)} task(s)"
            + (f" in {len(txns)} transaction(s)" if txns else ""))


def _last_decision(options: SinkOptions) -> Decision | None:
    if not options.exactly_once:
        return None
    assert options.query_name is not None
    return read_decision(options.client(), options.query_name)


def _commit(options: SinkOptions, messages: list[Any], batch_id: int | None) -> None:
    """End every task's transaction; in a micro-batch, record the decision first."""
    done = _done(messages)
    txns = [m.transaction for m in done if m.transaction is not None]
    if not any(not t.committed for t in txns):
        return  # nothing open (a resolved replay's decision is recorded already)
    if batch_id is not None:
        assert options.query_name is not None
        topic = options.topic or min(t for m in done for t in m.topics)
        decision = Decision(batch_id, frozenset(t.spark_partition for t in txns))
        record_decision(options.client(), options.query_name, decision, topic)
    end_transactions(options.client(), txns, commit=True)


def _abort(options: SinkOptions, messages: list[Any]) -> None:
    txns = [m.transaction for m in _done(messages) if m.transaction is not None]
    if txns:
        end_transactions(options.client(), txns, commit=False)


class PyqBatchWriter(DataSourceArrowWriter):
    """``df.write.format("pyq")`` (append). Inside ``foreachBatch``, a write whose function
    sets the ``streaming.sql.batchId`` local property to the batch id gets the stream
    writer's exactly-once protocol (a replayed batch is resolved, not written twice)."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options
        self.decided = _last_decision(options)

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _write(iterator, self.options, self.decided)

    def commit(self, messages: list[Any]) -> None:
        batch_id = next((m.batch_id for m in _done(messages)), None)
        _commit(self.options, messages, batch_id)
        log.info("pyq sink: wrote %s", _summary(messages))

    def abort(self, messages: list[Any]) -> None:
        _abort(self.options, messages)
        log.warning("pyq sink: write aborted after %s", _summary(messages))


class PyqStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("pyq")``."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options
        self.decided = _last_decision(options)

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _write(iterator, self.options, self.decided)

    def commit(self, messages: list[Any], batchId: int) -> None:  # Spark's name
        _commit(self.options, messages, batchId)
        log.info("pyq sink: batch %d wrote %s", batchId, _summary(messages))

    def abort(self, messages: list[Any], batchId: int) -> None:
        _abort(self.options, messages)
        log.warning("pyq sink: batch %d aborted after %s", batchId, _summary(messages))
