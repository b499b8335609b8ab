"""Read an offset range ``[start, until)`` of one partition from its leader.

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

The fetch loop, per response:

* **long poll**: each Fetch asks for ``fetch.min.bytes`` and lets the broker wait up to
  ``fetch.max.wait.ms``, so a range that ends beyond what has been written waits for the
  records instead of spinning; if no progress is made for ``default.api.timeout.ms``
  (or ``timeout_ms``), :class:`~connector.client.errors.KafkaTimeoutError` says how far it got.
* **follow the leader**: NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, other
  ``invalid_metadata`` errors and disconnects refresh the metadata and retry at the same
  offset, after ``retry.backoff.ms``.
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
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from broker_sim.common import SYSTEM_CLOCK, Clock
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import OffsetOutOfRange, error_for_code
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
        if start >= until:
            return
        tp = TopicPartition(topic, partition)
        sync = self._sync
        stall_ms = self.config.default_api_timeout_ms if timeout_ms is None else timeout_ms
        deadline = sync.now() + stall_ms
        offset = start
        pending: tuple[int, RequestFuture] | None = None
        high_watermark = -1
        while offset < until:
            if pending is None or pending[0] != offset:
                pending = (offset, self._send_fetch(tp, offset, deadline))
            future = pending[1]
            pending = None
            try:
                body = sync.wait(future, deadline, f"records of {tp} from offset {offset} "
                                 f"(high watermark {high_watermark}, range end {until})")
            except KafkaTimeoutError:
                raise
            except Exception as e:
                if not getattr(e, "retriable", False):
                    raise
                self._backoff(tp, e, deadline)
                continue
            data = self._partition_data(body, tp)
            if data.error_code:
                error = error_for_code(data.error_code)(f"fetch of {tp} at offset {offset}")
                if isinstance(error, OffsetOutOfRange):
                    raise self._out_of_range(tp, offset, data, deadline) from error
                if not error.retriable:
                    raise error
                self._backoff(tp, error, deadline)
                continue
            high_watermark = data.high_watermark
            records = data.records
            next_offset = next_fetch_offset(records, offset) if records is not None else offset
            if records is None or next_offset <= offset:
                continue  # nothing new yet: the broker already waited fetch.max.wait.ms
            deadline = sync.now() + stall_ms
            if next_offset < until:  # pipeline: the broker reads on while we decode
                pending = (next_offset, self._send_fetch(tp, next_offset, deadline))
            offset = next_offset
            yield records, (AbortedTransactions(data.aborted_transactions)
                            if self.config.read_committed else None)

    def _send_fetch(self, tp: TopicPartition, offset: int, deadline: float) -> RequestFuture:
        sync = self._sync
        cfg = self.config
        while True:
            node = sync.leader_for(tp, deadline)
            try:
                sync.await_ready(node, deadline)
            except KafkaTimeoutError:
                raise
            except Exception as e:
                if not getattr(e, "retriable", False):
                    raise
                self._backoff(tp, e, deadline)
                continue
            body = {"replica_id": -1, "max_wait_ms": cfg.fetch_max_wait_ms,
                    "min_bytes": cfg.fetch_min_bytes, "max_bytes": cfg.fetch_max_bytes,
                    "isolation_level": 1 if cfg.read_committed else 0,
                    "session_id": 0, "session_epoch": -1,
                    "topics": [{"topic": tp.topic, "partitions": [{
                        "partition": tp.partition, "current_leader_epoch": -1,
                        "fetch_offset": offset, "log_start_offset": -1,
                        "partition_max_bytes": cfg.max_partition_fetch_bytes}]}],
                    "forgotten_topics_data": [], "rack_id": ""}
            return sync.client.send(node, ApiKey.FETCH, body, sync.now(),
                                    timeout_ms=cfg.request_timeout_ms + cfg.fetch_max_wait_ms)

    @staticmethod
    def _partition_data(body: FetchResponseView, tp: TopicPartition) -> PartitionDataView:
        for t in body.responses:
            if t.topic == tp.topic:
                for p in t.partitions:
                    if p.partition_index == tp.partition:
                        return p
        raise error_for_code(3)(f"fetch response has no data for {tp}")

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
