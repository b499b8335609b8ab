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


def _task() -> tuple[int, int]:
    """(Spark partition id, micro-batch id) of the running task (batch id 0 outside streams)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return 0, 0
    batch = ctx.getLocalProperty("streaming.sql.batchId")
    return ctx.partitionId(), int(batch) if batch is not None else 0


def _write(batches: Iterator[Any], options: SinkOptions, decided: Decision | None = None
           ) -> WriterCommitMessage:
    partition, batch = _task()
    message = write_batches(batches, options, partition, batch, decided)
    return _Commit(message.rows, message.topics, message.transaction)


class _Commit(SinkCommitMessage, WriterCommitMessage):
    pass


def _done(messages: list[Any]) -> list[SinkCommitMessage]:
    return [m for m in messages if m is not None]


def _summary(messages: list[Any]) -> str:
    done = _done(messages)
    txns = [m.transaction for m in done if m.transaction is not None]
    return (f"{sum(m.rows for m in done)} rows from {len(done)} task(s)"
            + (f" in {len(txns)} transaction(s)" if txns else ""))


def _end(options: SinkOptions, messages: list[Any], commit: bool) -> None:
    txns = [m.transaction for m in _done(messages) if m.transaction is not None]
    if txns:
        end_transactions(options.client(), txns, commit)


class PyqBatchWriter(DataSourceArrowWriter):
    """``df.write.format("pyq")`` (append)."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _write(iterator, self.options)

    def commit(self, messages: list[Any]) -> None:
        _end(self.options, messages, commit=True)
        log.info("pyq sink: wrote %s", _summary(messages))

    def abort(self, messages: list[Any]) -> None:
        _end(self.options, messages, commit=False)
        log.warning("pyq sink: write aborted after %s", _summary(messages))


class PyqStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("pyq")``."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options
        self.decided: Decision | None = None
        if options.exactly_once:
            assert options.query_name is not None
            self.decided = read_decision(options.client(), options.query_name)

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _write(iterator, self.options, self.decided)

    def commit(self, messages: list[Any], batchId: int) -> None:  # noqa: N803 - Spark's name
        done = _done(messages)
        txns = [m.transaction for m in done if m.transaction is not None]
        if any(not t.committed for t in txns):  # (all committed: its decision is recorded)
            assert self.options.query_name is not None
            topic = self.options.topic or min(t for m in done for t in m.topics)
            decision = Decision(batchId, frozenset(t.spark_partition for t in txns))
            record_decision(self.options.client(), self.options.query_name, decision, topic)
            end_transactions(self.options.client(), txns, commit=True)
        log.info("pyq sink: batch %d wrote %s", batchId, _summary(messages))

    def abort(self, messages: list[Any], batchId: int) -> None:  # noqa: N803
        _end(self.options, messages, commit=False)
        log.warning("pyq sink: batch %d aborted after %s", batchId, _summary(messages))
