"""The Spark side of the sink: batch and streaming Arrow writers over :mod:`.writer`."""

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


def _write(batches: Iterator[Any], options: SinkOptions) -> WriterCommitMessage:
    partition, batch = _task()
    message = write_batches(batches, options, partition, batch)
    return _Commit(message.rows, message.duplicates_skipped)


class _Commit(SinkCommitMessage, WriterCommitMessage):
    pass


def _summary(messages: list[Any]) -> str:
    done = [m for m in messages if m is not None]
    return (f"{sum(m.rows for m in done)} rows from {len(done)} task(s), "
            f"{sum(m.duplicates_skipped for m in done)} replayed batch(es) dropped by the broker")


class PyqBatchWriter(DataSourceArrowWriter):
    """``df.write.format("pyq")`` (append)."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _write(iterator, self.options)

    def commit(self, messages: list[Any]) -> None:
        log.info("pyq sink: wrote %s", _summary(messages))

    def abort(self, messages: list[Any]) -> None:
        log.warning("pyq sink: write aborted after %s were acknowledged", _summary(messages))


class PyqStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("pyq")``."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _write(iterator, self.options)

    def commit(self, messages: list[Any], batchId: int) -> None:  # noqa: N803 - Spark's name
        log.info("pyq sink: batch %d wrote %s", batchId, _summary(messages))

    def abort(self, messages: list[Any], batchId: int) -> None:  # noqa: N803
        log.warning("pyq sink: batch %d aborted after %s were acknowledged", batchId, _summary(messages))
