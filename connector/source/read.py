"""Executor side: read one planned input partition into Arrow record batches.

An :class:`InputRange` names a topic-partition, a new-data range ``[start, end)`` and
single offsets to deliver again (retries, each with its attempt number). One Spark task
reads one range or several small ones packed together (see
:mod:`connector.source.planning`): :func:`read_ranges` runs on an executor and fetches
them all at once with our client's columnar path (no Python object per record) — one
Fetch per leader names every unfinished range, and each response is decoded in one pass
into one ``pyarrow.RecordBatch`` matching the Spark schema exactly, whatever the number
of partitions it holds. The same ``InputRange`` always yields the same rows, so a
re-executed task or a replayed micro-batch reads exactly what the first attempt read
(rows of different partitions may interleave differently; one partition's stay in order).

Out of range while reading (retention deleted part of the range after it was planned):
with ``failOnDataLoss`` the task fails with a message naming the topic, the partition and
the lost offsets; without it, the rows still in the log are returned and the loss logged.
The other ranges of the task are not disturbed either way.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from broker_sim.protocol.errors import PyqError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class InputRange:
    bootstrap_servers: str
    topic: str
    partition: int
    start: int
    end: int
    retries: tuple[tuple[int, int], ...] = ()  # (offset, attempt)
    include_headers: bool = False
    include_attempt: bool = False
    fail_on_data_loss: bool = True
    client_options: dict[str, str] = field(default_factory=dict)
    #: ``kafkaConsumer.pollTimeoutMs``: fail after this long without progress (None: the
    #: client's ``default.api.timeout.ms``)
    poll_timeout_ms: int | None = None
    #: valueFormat/keyFormat=avro: a :class:`~connector.source.formats.Formats`
    formats: Any = None

    @property
    def size(self) -> int:
        return max(0, self.end - self.start) + len(self.retries)


class DataLossDuringRead(PyqError, RuntimeError):
    """Records the query expected are gone (retention or a truncation passed them) and
    ``failOnDataLoss`` is true; not retriable: reading again finds them gone again."""


def _with_attempt(batch: Any, attempts: np.ndarray) -> Any:
    import pyarrow as pa

    column = pa.Array.from_buffers(pa.int32(), batch.num_rows,
                                   [None, pa.py_buffer(np.ascontiguousarray(attempts, np.int32))])
    return pa.RecordBatch.from_arrays(batch.columns + [column],
                                      schema=batch.schema.append(pa.field("attempt", pa.int32())))


def _runs(retries: tuple[tuple[int, int], ...]) -> list[tuple[int, int, int]]:
    """Consecutive offsets with the same attempt -> (start, end, attempt) runs."""
    runs: list[tuple[int, int, int]] = []
    for offset, attempt in sorted(retries):
        if runs and runs[-1][1] == offset and runs[-1][2] == attempt:
            runs[-1] = (runs[-1][0], offset + 1, attempt)
        else:
            runs.append((offset, offset + 1, attempt))
    return runs


#: Fetch size per partition for executor reads (Kafka's consumer default is 1 MiB). A task
#: reads a known, bounded range, so bigger responses only mean fewer round trips and fewer,
#: larger Arrow batches (less fixed cost per batch in the decoder and in Spark); measured
#: on 100-byte records, 4 MiB responses take about a third less decoding CPU per record
#: than 1 MiB ones. Client options in ``InputRange.client_options`` override it.
READ_FETCH_BYTES = 4 * 1024 * 1024


def _fetcher(r: InputRange) -> Any:
    from connector.client import Fetcher

    options: dict[str, Any] = {"max.partition.fetch.bytes": READ_FETCH_BYTES}
    options.update({k.removeprefix("kafka."): v for k, v in r.client_options.items()})
    options["bootstrap.servers"] = r.bootstrap_servers
    return Fetcher(options)


@dataclass
class _Piece:
    """Offsets ``[start, end)`` of one range delivered with one attempt number: a run of
    retries, or the new range (attempt 0)."""

    range: InputRange
    start: int
    end: int
    attempt: int
    recovered: bool = False  # went past lost offsets once already (failOnDataLoss=false)


def _pieces(r: InputRange) -> list[_Piece]:
    pieces = [_Piece(r, o0, o1, a) for o0, o1, a in _runs(r.retries)]
    if r.end > r.start:
        pieces.append(_Piece(r, r.start, r.end, 0))
    return pieces


def read_ranges(ranges: tuple[InputRange, ...]) -> Iterator[Any]:
    """One Spark task's ranges (packed small ones, or one) over one fetcher: yield their
    rows as Arrow record batches, one per fetch response, as they arrive.

    Batches are yielded while the next fetch is in flight (not collected first), so Spark
    consumes one while the broker serves the next, and memory stays at a few fetches. A
    partition's pieces (retry runs, then its new range; from one range or several) are
    read in rounds: the first piece of every partition together, then the second ones,
    and so on.
    """
    if not ranges:
        return
    first = ranges[0]  # a query's ranges share their client and row options
    if any((r.include_headers, r.include_attempt, r.poll_timeout_ms)
           != (first.include_headers, first.include_attempt, first.poll_timeout_ms) for r in ranges):
        raise ValueError("the ranges of one input partition must share their read options")
    # a partition may have several ranges in one task (retry runs packed beside its new
    # range): its pieces go in order, one per round, as a fetch names a partition once
    by_partition: dict[tuple[str, int], list[_Piece]] = {}
    for r in ranges:
        by_partition.setdefault((r.topic, r.partition), []).extend(_pieces(r))
    fetcher = _fetcher(first)
    decode = None if first.formats is None else _decoding(first)
    try:
        for round_ in range(max((len(p) for p in by_partition.values()), default=0)):
            pieces = [p[round_] for p in by_partition.values() if round_ < len(p)]
            for batch in _read_pieces(fetcher, pieces):
                yield batch if decode is None else decode(batch)
    finally:
        fetcher.close()


def _decoding(r: InputRange) -> Any:
    """batch -> batch with key/value decoded (see :mod:`connector.source.formats`); bad
    records reported to the failures topic when the query sends them that way."""
    formats = r.formats
    decoders = formats.decoders()

    def report(bad: list[dict[str, Any]]) -> None:
        """One report call (one producer) and one INFO line per reason in a fetched batch:
        the failures topic carries each record and its reason, and the driver warns where
        its policy drops one (no ``deadLetterTopic``), as Kafka Connect logs nothing per
        record that goes to its dead letter queue unless asked to."""
        from .failures import report_failed

        group, client = formats.report_to
        by_reason: dict[str, list[dict[str, Any]]] = {}
        for row in bad:
            by_reason.setdefault(row["reason"], []).append(row)
        for reason, rows in by_reason.items():
            first = rows[0]
            log.info("%d record(s) do not decode (%s), the first %s-%d@%d: reported as "
                     "failed", len(rows), reason, first["topic"], first["partition"],
                     first["offset"])
            report_failed(rows, reason, r.bootstrap_servers, group, dict(client))

    return lambda batch: formats.apply(batch, decoders, report)


def _read_pieces(fetcher: Any, pieces: list[_Piece]) -> Iterator[Any]:
    """Read pieces of different partitions together (see :func:`read_ranges`)."""
    from connector.client import FetchRange, OffsetOutOfRangeError
    from connector.client.columnar import RecordSetPart, decode_parts

    first = pieces[0].range

    def out_of_range(index: int, e: OffsetOutOfRangeError) -> int | None:
        """Where ``pieces[index]`` goes on after OFFSET_OUT_OF_RANGE at ``e.offset`` (every
        row below it was yielded), None if nowhere; raises under failOnDataLoss."""
        piece = pieces[index]
        r, done, end = piece.range, e.offset, piece.end
        if piece.recovered:
            raise e
        log_start, log_end = e.log_start_offset, e.log_end_offset
        lost_end = min(end, log_start) if log_start > done else end
        message = (f"{r.topic}-{r.partition}: offsets [{done}, {lost_end}) are no "
                   f"longer available (log start {log_start}, log end {log_end})")
        if piece.attempt:  # a retried record that is gone: nothing to deliver again
            log.warning("%s; the retry is dropped", message)
            return None
        if r.fail_on_data_loss or log_start < 0:
            raise DataLossDuringRead(message + "; set failOnDataLoss=false to continue") from e
        log.warning("%s; continuing from %d (failOnDataLoss=false)", message, log_start)
        piece.recovered = True
        return None if log_start >= end else max(done, log_start)

    wanted = [FetchRange(p.range.topic, p.range.partition, p.start, p.end) for p in pieces]
    attempts = np.array([p.attempt for p in pieces], np.int32)
    check_crcs = fetcher.config.check_crcs
    for answered in fetcher.fetch_ranges(wanted, first.poll_timeout_ms, out_of_range):
        parts = [RecordSetPart(wanted[i].topic, wanted[i].partition, records, offset,
                               wanted[i].until, None if aborted is None else aborted.keeps)
                 for i, offset, records, aborted in answered]
        columns = decode_parts(parts, first.include_headers, check_crcs)
        if columns is None or not len(columns):
            continue
        batch = columns.to_arrow(first.include_headers)
        if first.include_attempt:
            index = [i for i, _, _, _ in answered]
            rows = (np.full(len(columns), attempts[index[0]], np.int32)
                    if columns.part_of_row is None else attempts[index][columns.part_of_row])
            batch = _with_attempt(batch, rows)
        yield batch
