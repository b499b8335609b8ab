"""Executor side of the sink: write one task's rows with acks=all, or fail the task.

Two ways to write, both acknowledged by every in-sync replica before the task reports
success (a row not acknowledged fails the task, and Spark retries it):

* **at least once** (default): our idempotent :class:`~connector.client.Producer`; retries
  inside one attempt are de-duplicated by the broker, but a *retried task* writes its rows
  again.
* **exactly once** (``exactlyOnce=true``): the task writes with a *deterministic producer
  identity*: producer id = hash(queryName, Spark partition id), epoch = the micro-batch id,
  sequence numbers counted from 0 over the task's rows, and batches cut at fixed row
  counts. A retried attempt of the task, or the same batch replayed after a query restart,
  produces byte-for-byte the same batches with the same (producer id, epoch, sequence), and
  the broker drops every batch it has already written (DUPLICATE_SEQUENCE_NUMBER, or the
  cached original offsets) — including the prefix written by an attempt that died
  half-way (a batch that straddles what was written is re-sent record by record, so the
  broker keeps the part it has and takes the rest). Guarantee and limits: the batch's input must be deterministic (same rows, same
  order, same Spark partitioning when replayed — true for the pyq source), the topic's
  partition count must not change between the attempts, and ``queryName`` must be stable
  and unique per pipeline.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .options import SinkOptions

log = logging.getLogger(__name__)

ROWS_PER_BATCH = 500
ATTEMPT_MS = 5_000  # how long one produce attempt waits for its leader to be reachable
PRODUCE_VERSION = 8


@dataclass
class SinkCommitMessage:
    """What one task wrote (the driver logs the totals)."""

    rows: int
    duplicates_skipped: int = 0


def _bytes(v: Any) -> bytes | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v.encode("utf-8")
    return bytes(v)


def _records(rows: Iterable[Any], options: SinkOptions) -> Iterator[tuple]:
    for row in rows:
        d = row.asDict() if hasattr(row, "asDict") else dict(row)
        topic = options.topic or d.get("topic")
        if not topic:
            raise ValueError("pyq sink: a row has no topic (null 'topic' column and no 'topic' option)")
        headers = [(h["key"], _bytes(h["value"])) for h in (d.get("headers") or [])]
        yield topic, _bytes(d.get("key")), _bytes(d.get("value")), d.get("partition"), headers


def write_at_least_once(rows: Iterable[Any], options: SinkOptions) -> SinkCommitMessage:
    from connector.client import Producer

    config = {"bootstrap.servers": options.bootstrap_servers, "acks": "all",
              "enable.idempotence": True, "compression.type": options.compression}
    count = 0
    with Producer(config) as producer:
        futures = []
        for topic, key, value, partition, headers in _records(rows, options):
            futures.append(producer.send(topic, value, key=key, partition=partition, headers=headers))
            count += 1
        producer.flush()
        for f in futures:
            f.result(120)  # raises if the record was not acknowledged: the task fails
    return SinkCommitMessage(count)


def producer_identity(query_name: str, spark_partition: int, batch_id: int) -> tuple[int, int]:
    """(producer id, epoch): stable for the same query, task partition and batch."""
    digest = hashlib.sha256(f"{query_name}/{spark_partition}/{batch_id // 32768}".encode()).digest()
    pid = (1 << 60) + int.from_bytes(digest[:7], "big")  # above every broker-allocated id
    return pid, batch_id % 32768


def write_exactly_once(rows: Iterable[Any], options: SinkOptions, spark_partition: int,
                       batch_id: int) -> SinkCommitMessage:
    from broker_sim.protocol.api import ApiKey
    from broker_sim.protocol.errors import (
        DuplicateSequenceNumber,
        OutOfOrderSequenceNumber,
        error_for_code,
    )
    from broker_sim.protocol.records import RecordBatchBuilder
    from broker_sim.protocol.records.compression import codec_id
    from connector.client.config import AdminConfig
    from connector.client.errors import PyqError
    from connector.client.metadata import TopicPartition
    from connector.client.partitioner import murmur2, to_positive
    from connector.client.sync_client import SyncClient

    assert options.query_name is not None
    pid, epoch = producer_identity(options.query_name, spark_partition, batch_id)
    sync = SyncClient(AdminConfig.coerce({"bootstrap.servers": options.bootstrap_servers}))
    codec = codec_id(options.compression)
    pending: dict[tuple[str, int], list[tuple]] = {}  # records of the batch being filled
    sequences: dict[tuple[str, int], int] = {}
    counts = {"rows": 0, "duplicates": 0, "index": 0}

    def partitions(topic: str) -> int:
        n = sync.metadata.cluster.partition_count(topic)
        if n is None:
            sync.refresh_metadata([topic], sync.deadline(30_000))
            n = sync.metadata.cluster.partition_count(topic)
        if n is None:
            raise ValueError(f"pyq sink: topic {topic!r} does not exist")
        return n

    def send(key: tuple[str, int], records: list[tuple], base_sequence: int) -> None:
        builder = RecordBatchBuilder(compression=codec, producer_id=pid, producer_epoch=epoch,
                                     base_sequence=base_sequence)
        for record in records:
            builder.append(*record)
        data = builder.build()
        deadline = sync.deadline(120_000)
        while True:
            try:
                # one attempt may not wait for a dead leader longer than ATTEMPT_MS
                attempt = min(deadline, sync.now() + ATTEMPT_MS)
                node = sync.leader_for(TopicPartition(*key), attempt)
                body = {"transactional_id": None, "acks": -1, "timeout_ms": 30_000, "topic_data": [
                    {"name": key[0], "partition_data": [{"index": key[1], "records": data}]}]}
                sync.await_ready(node, attempt)
                future = sync.client.send(node, ApiKey.PRODUCE, body, sync.now())
                resp = sync.wait(future, sync.now() + 35_000)  # acks=all, timeout_ms 30 s
            except PyqError as e:  # a client error, or a broker error raised on the way
                # The leader died or moved: the same batch (same producer id, epoch and
                # sequence) goes to whoever leads now, which drops it if it was written.
                if not e.retriable or sync.now() >= deadline:
                    raise
                log.warning("produce to %s-%d: %s; retrying after a metadata refresh", *key, e)
                sync.client.poll(200, sync.now())
                sync.refresh_metadata([key[0]], deadline)
                continue
            code = resp.responses[0].partition_responses[0].error_code
            if code == 0:
                return
            if code == DuplicateSequenceNumber.code:
                counts["duplicates"] += 1
                return
            if code == OutOfOrderSequenceNumber.code and len(records) > 1:
                # Part of this batch was written by an earlier attempt (its batches were cut
                # elsewhere): one record at a time, the broker drops the written part.
                for i, record in enumerate(records):
                    send(key, [record], base_sequence + i)
                return
            error = error_for_code(code)(f"produce to {key[0]}-{key[1]}")
            if not error.retriable or sync.now() >= deadline:
                raise error
            if error.invalid_metadata:
                sync.refresh_metadata([key[0]], deadline)
            sync.client.poll(200, sync.now())

    try:
        for topic, k, value, partition, headers in _records(rows, options):
            n = partitions(topic)
            if partition is None:
                partition = to_positive(murmur2(k)) % n if k is not None else counts["index"] % n
            key = (topic, int(partition))
            records = pending.setdefault(key, [])
            records.append((int(time.time() * 1000), k, value, headers))
            sequences[key] = sequences.get(key, 0) + 1
            counts["rows"] += 1
            counts["index"] += 1
            if len(records) >= ROWS_PER_BATCH:
                send(key, pending.pop(key), sequences[key] - len(records))
        for key, records in list(pending.items()):
            send(key, records, sequences[key] - len(records))
    finally:
        sync.close()
    return SinkCommitMessage(counts["rows"], counts["duplicates"])
