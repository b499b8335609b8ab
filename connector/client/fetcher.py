"""Read offset ranges ``[start, until)`` of partitions from their leaders.

This is exactly what a Spark source's executor does with a planned partition range:

>>> with Fetcher(bootstrap_servers="127.0.0.1:9092") as fetcher:          # doctest: +SKIP
...     for batch in fetcher.iter_arrow("events", 0, 1000, 2000):
...         ...                                   # pyarrow.RecordBatch, Spark's Kafka schema

Three ways to consume the same range, all over :meth:`Fetcher.fetch_record_sets`:

* :meth:`Fetcher.iter_records` — one :class:`~broker_sim.protocol.records.Record` per record;
* :meth:`Fetcher.iter_columns` — :class:`~connector.client.columnar.RecordColumns` per
  fetch response (numpy offsets/timestamps, Arrow binary keys/values), decoded without
  per-record objects (:mod:`connector.client.columnar`);
* :meth:`Fetcher.iter_arrow` — the same as ``pyarrow.RecordBatch``.

Many small ranges (a Spark task packing many partitions' few records each) are read
together with :meth:`Fetcher.fetch_ranges`: one Fetch per leader names every unfinished
range, so 256 ranges of 20 records cost a few round trips, not 256. The single-range
methods are that loop with one range.

The fetch loop, per response:

* **long poll**: each Fetch asks for ``fetch.min.bytes`` and lets the broker wait up to
  ``fetch.max.wait.ms``, so a range that ends beyond what has been written waits for the
  records instead of spinning; if no progress is made for ``default.api.timeout.ms``
  (or ``timeout_ms``), :class:`~connector.client.errors.KafkaTimeoutError` says how far it got.
* **follow the leader**: NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, other
  ``invalid_metadata`` errors and disconnects refresh the metadata and retry at the same
  offset, after ``retry.backoff.ms`` (the other ranges of the response keep what it
  brought them).
* **out of range**: OFFSET_OUT_OF_RANGE raises
  :class:`~connector.client.errors.OffsetOutOfRangeError` carrying the partition's current
  log start and end offsets (from ListOffsets), so the caller can apply its reset policy
  and report how many offsets were lost.
* **range edges**: a fetch returns whole batches, and the first may start before
  ``start`` (the broker returns the batch that *contains* the offset); records outside
  ``[start, until)`` are dropped, and the next fetch starts after the last whole batch.
* **pipelining**: the next Fetch is sent before the current response is handed to the
  caller, so the broker reads the next chunk while this one is decoded.

Threading: a Fetcher is used by one thread at a time (its network client runs on the
caller's thread, see :mod:`connector.client.sync_client`). Use one per executor task.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from broker_sim.common import SYSTEM_CLOCK, Clock
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import OffsetOutOfRange, error_for_code, is_retriable
from broker_sim.protocol.messages.fetch import FetchResponseView, PartitionDataView
from broker_sim.protocol.records import BatchHeader, Record, decode_records
from broker_sim.protocol.records.batch_header import peek_batch_size

from .aborted import AbortedTransactions
from .columnar import (
    KAFKA_SCHEMA,
    KAFKA_SCHEMA_WITH_HEADERS,
    RecordColumns,
    decode_columns,
    iter_batch_headers,
)
from .config import FetcherConfig
from .errors import KafkaTimeoutError, OffsetOutOfRangeError
from .metadata import Metadata, TopicPartition
from .offsets import EARLIEST, LATEST, list_offsets
from .request_future import RequestFuture
from .sync_client import SyncClient

log = logging.getLogger(__name__)


def next_fetch_offset(record_set: Any, offset: int) -> int:
    """The offset after the last whole batch of ``record_set`` (``offset`` if none)."""
    pos, n, last = 0, len(record_set), -1
    while True:
        size = peek_batch_size(record_set, pos)
        if size is None or pos + size > n:
            break
        last, pos = pos, pos + size
    return offset if last < 0 else max(offset, BatchHeader.parse(record_set, last).next_offset)


@dataclass(frozen=True)
class FetchRange:
    """Offsets ``[start, until)`` of one partition, for :meth:`Fetcher.fetch_ranges`."""

    topic: str
    partition: int
    start: int
    until: int


class Fetcher:
    def __init__(self, config: FetcherConfig | Mapping[str, Any] | None = None, *,
                 clock: Clock = SYSTEM_CLOCK, **options: Any) -> None:
        self.config = FetcherConfig.coerce(config, **options)
        self._sync = SyncClient(self.config, Metadata(self.config), clock)

    # ---- raw record sets ------------------------------------------------------------
    def fetch_record_sets(self, topic: str, partition: int, start: int, until: int,
                          timeout_ms: float | None = None) -> Iterator[memoryview | bytes]:
        """Yield the record sets (whole batches) of successive fetches covering the range.

        Batches may extend beyond the range on either side; callers filter by offset.
        With ``isolation.level=read_committed`` the fetches stop at the last stable offset
        and aborted batches are still in the sets: :meth:`fetches` says which.
        """
        for records, _aborted in self.fetches(topic, partition, start, until, timeout_ms):
            yield records

    def fetches(self, topic: str, partition: int, start: int, until: int,
                timeout_ms: float | None = None
                ) -> Iterator[tuple[memoryview | bytes, AbortedTransactions | None]]:
        """Each fetch's record set with, under read_committed, its aborted transactions."""
        for answered in self.fetch_ranges([FetchRange(topic, partition, start, until)], timeout_ms):
            for _index, _offset, records, aborted in answered:
                yield records, aborted

    def fetch_ranges(self, ranges: Sequence[FetchRange], timeout_ms: float | None = None,
                     on_out_of_range: Callable[[int, OffsetOutOfRangeError], int | None] | None = None,
                     ) -> Iterator[list[tuple[int, int, memoryview | bytes, AbortedTransactions | None]]]:
        """Read several partitions' ranges at once: per response, ``(index in ranges, offset
        fetched from, record set, aborted transactions)`` of each range it advanced. Records
        of the set below the offset fetched from are not the range's: drop them.

        Every unfinished range is named in one Fetch per leader (a range appears in one
        request at a time, each partition at most once in ``ranges``), so many small ranges
        cost a round trip per leader, not one each; the broker's ``fetch.max.bytes`` and
        ``max.partition.fetch.bytes`` rules (KIP-74) apply per request, and a range the
        response left out is asked for again in the next one. ``on_out_of_range(index,
        error)`` answers OFFSET_OUT_OF_RANGE for one range with the offset to go on from
        (None: that range is finished) or raises; without it the error is raised.
        """
        tps = [TopicPartition(r.topic, r.partition) for r in ranges]
        if len(set(tps)) != len(tps):
            raise ValueError("each partition may appear in only one range of a fetch")
        sync = self._sync
        stall_ms = self.config.default_api_timeout_ms if timeout_ms is None else timeout_ms
        deadline = sync.now() + stall_ms
        position = [r.start for r in ranges]
        unfinished = {i for i, r in enumerate(ranges) if r.start < r.until}
        high_watermark = [-1] * len(ranges)
        in_flight: dict[int, tuple[RequestFuture, dict[int, int]]] = {}  # node -> (future, asked)
        while unfinished:
            self._send_fetches(tps, position, unfinished, in_flight, deadline)
            i = min(unfinished)
            sync.poll_until(lambda: any(f.is_done for f, _ in in_flight.values()), deadline,
                            f"records of {tps[i]} from offset {position[i]} (high watermark "
                            f"{high_watermark[i]}, range end {ranges[i].until})"
                            + (f" and {len(unfinished) - 1} other range(s)" if len(unfinished) > 1 else ""))
            node, (future, asked) = next((n, f) for n, f in in_flight.items() if f[0].is_done)
            del in_flight[node]
            if future.exception is not None:
                error = future.exception
                if not is_retriable(error):
                    raise error
                self._backoff(tps[min(asked)], error, deadline)
                continue
            answered: list[tuple[int, int, memoryview | bytes, AbortedTransactions | None]] = []
            retry: tuple[int, BaseException] | None = None
            for index, data in self._partition_data(future.value, tps, asked):
                offset = asked[index]
                tp = tps[index]
                if data.error_code:
                    error = error_for_code(data.error_code)(f"fetch of {tp} at offset {offset}")
                    if isinstance(error, OffsetOutOfRange):
                        lost = self._out_of_range(tp, offset, data, deadline)
                        if on_out_of_range is None:
                            raise lost from error
                        resume = on_out_of_range(index, lost)
                        if resume is None or resume >= ranges[index].until:
                            unfinished.discard(index)
                        else:
                            position[index] = resume
                        continue
                    if not error.retriable:
                        raise error
                    retry = (index, error)
                    continue
                high_watermark[index] = data.high_watermark
                records = data.records
                next_offset = next_fetch_offset(records, offset) if records is not None else offset
                if records is None or next_offset <= offset:
                    continue  # nothing new yet: the broker already waited fetch.max.wait.ms
                position[index] = next_offset
                if next_offset >= ranges[index].until:
                    unfinished.discard(index)
                answered.append((index, offset, records,
                                 AbortedTransactions(data.aborted_transactions)
                                 if self.config.read_committed else None))
            if retry is not None:
                self._backoff(tps[retry[0]], retry[1], deadline)
            if answered:
                deadline = sync.now() + stall_ms
                if unfinished and retry is None:  # pipeline: the broker reads on while we decode
                    self._send_fetches(tps, position, unfinished, in_flight, deadline)
                yield answered

    def _send_fetches(self, tps: list[TopicPartition], position: list[int], unfinished: set[int],
                      in_flight: dict[int, tuple[RequestFuture, dict[int, int]]],
                      deadline: float) -> None:
        """One Fetch to each leader with no Fetch in flight, naming its unfinished ranges
        that are in no request yet."""
        sync = self._sync
        cfg = self.config
        while True:
            asked = {i for _, a in in_flight.values() for i in a}
            by_node: dict[int, list[int]] = {}
            for i in sorted(unfinished - asked):
                by_node.setdefault(sync.leader_for(tps[i], deadline), []).append(i)
            try:
                for node, indexes in by_node.items():
                    if node in in_flight:
                        continue  # asked for in that node's next request
                    sync.await_ready(node, deadline)
                    topics: dict[str, list[dict[str, int]]] = {}
                    for i in indexes:
                        topics.setdefault(tps[i].topic, []).append({
                            "partition": tps[i].partition, "current_leader_epoch": -1,
                            "fetch_offset": position[i], "log_start_offset": -1,
                            "partition_max_bytes": cfg.max_partition_fetch_bytes})
                    body = {"replica_id": -1, "max_wait_ms": cfg.fetch_max_wait_ms,
                            "min_bytes": cfg.fetch_min_bytes, "max_bytes": cfg.fetch_max_bytes,
                            "isolation_level": 1 if cfg.read_committed else 0,
                            "session_id": 0, "session_epoch": -1,
                            "topics": [{"topic": t, "partitions": p} for t, p in topics.items()],
                            "forgotten_topics_data": [], "rack_id": ""}
                    future = sync.client.send(node, ApiKey.FETCH, body, sync.now(),
                                              timeout_ms=cfg.request_timeout_ms + cfg.fetch_max_wait_ms)
                    in_flight[node] = (future, {i: position[i] for i in indexes})
                return
            except KafkaTimeoutError:
                raise
            except Exception as e:
                if not is_retriable(e):
                    raise
                self._backoff(tps[min(unfinished - asked)], e, deadline)

    @staticmethod
    def _partition_data(body: FetchResponseView, tps: list[TopicPartition],
                        asked: dict[int, int]) -> Iterator[tuple[int, PartitionDataView]]:
        """(range index, partition data) of every partition ``asked`` in the request."""
        index = {(tps[i].topic, tps[i].partition): i for i in asked}
        seen: set[int] = set()
        for t in body.responses:
            for p in t.partitions:
                i = index.get((t.topic, p.partition_index))
                if i is not None:
                    seen.add(i)
                    yield i, p
        if len(seen) < len(asked):
            missing = ", ".join(str(tps[i]) for i in sorted(asked) if i not in seen)
            raise error_for_code(3)(f"fetch response has no data for {missing}")

    def _backoff(self, tp: TopicPartition, error: BaseException, deadline: float) -> None:
        sync = self._sync
        log.info("fetch of %s failed (%s); refreshing metadata and retrying", tp, error)
        if sync.now() + self.config.retry_backoff_ms >= deadline:
            raise KafkaTimeoutError(f"fetch of {tp} kept failing: {error}") from error
        sync.metadata.request_update()
        sync.client.poll(self.config.retry_backoff_ms, sync.now())

    def _out_of_range(self, tp: TopicPartition, offset: int, data: PartitionDataView,
                      deadline: float) -> OffsetOutOfRangeError:
        start, end = data.log_start_offset, data.high_watermark
        try:
            found = list_offsets(self._sync, {tp: EARLIEST}, deadline, self.config.read_committed)
            start = found[tp].offset
            found = list_offsets(self._sync, {tp: LATEST}, deadline, self.config.read_committed)
            end = found[tp].offset
        except Exception as e:  # keep what the fetch response said
            log.warning("could not list the offsets of %s after OFFSET_OUT_OF_RANGE: %s", tp, e)
        return OffsetOutOfRangeError(tp.topic, tp.partition, offset, start, end)

    # ---- decoded forms --------------------------------------------------------------
    def iter_records(self, topic: str, partition: int, start: int, until: int,
                     timeout_ms: float | None = None) -> Iterator[Record]:
        """Every record with ``start <= offset < until``, in offset order."""
        for record_set, aborted in self.fetches(topic, partition, start, until, timeout_ms):
            for pos, header in iter_batch_headers(record_set, self.config.check_crcs):
                if aborted is not None and not aborted.keeps(header):
                    continue
                if header.is_control or header.next_offset <= start or header.base_offset >= until:
                    continue
                for record in decode_records(record_set, pos, header):
                    if start <= record.offset < until:
                        yield record

    def iter_columns(self, topic: str, partition: int, start: int, until: int, *,
                     with_headers: bool = False,
                     timeout_ms: float | None = None) -> Iterator[RecordColumns]:
        """The range as :class:`RecordColumns`, one per fetch response."""
        for record_set, aborted in self.fetches(topic, partition, start, until, timeout_ms):
            columns = decode_columns(topic, partition, record_set, start, until, with_headers,
                                     self.config.check_crcs,
                                     None if aborted is None else aborted.keeps)
            if columns is not None and len(columns):
                yield columns

    def iter_arrow(self, topic: str, partition: int, start: int, until: int, *,
                   include_headers: bool = False,
                   timeout_ms: float | None = None) -> Iterator[pa.RecordBatch]:
        """The range as ``pyarrow.RecordBatch``es with Spark's Kafka source schema."""
        for columns in self.iter_columns(topic, partition, start, until,
                                         with_headers=include_headers, timeout_ms=timeout_ms):
            yield columns.to_arrow(include_headers)

    def read_arrow(self, topic: str, partition: int, start: int, until: int, *,
                   include_headers: bool = False, timeout_ms: float | None = None) -> pa.Table:
        batches = list(self.iter_arrow(topic, partition, start, until,
                                       include_headers=include_headers, timeout_ms=timeout_ms))
        schema = KAFKA_SCHEMA_WITH_HEADERS if include_headers else KAFKA_SCHEMA
        return pa.Table.from_batches(batches, schema=schema)

    def offset_bounds(self, topic: str, partition: int,
                      timeout_ms: float | None = None) -> tuple[int, int]:
        """(log start offset, high watermark) of a partition."""
        tp = TopicPartition(topic, partition)
        deadline = self._sync.deadline(timeout_ms)
        start = list_offsets(self._sync, {tp: EARLIEST}, deadline, self.config.read_committed)[tp].offset
        end = list_offsets(self._sync, {tp: LATEST}, deadline, self.config.read_committed)[tp].offset
        return start, end

    # ---- lifecycle ------------------------------------------------------------------
    def close(self) -> None:
        self._sync.close()

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
