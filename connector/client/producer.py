"""The producer: ``send()`` appends to the accumulator; a sender thread does the I/O.

>>> producer = Producer(bootstrap_servers="127.0.0.1:9092", acks="all")   # doctest: +SKIP
>>> future = producer.send("events", b"value", key=b"user-1",
...                        headers=[("source", b"web")])                    # doctest: +SKIP
>>> future.result(timeout=10)                                             # doctest: +SKIP
RecordMetadata(topic='events', partition=1, offset=0, timestamp=1700000000000)
>>> producer.close()                                                      # doctest: +SKIP

Options are Kafka's (see :mod:`connector.client.config`), as dotted names
(``Producer(**{"linger.ms": "10"})``, as Spark options arrive) or keywords
(``Producer(linger_ms=10)``). Keys, values and header values are bytes (or None);
serialisation is the caller's business.

What ``send()`` does, on the calling thread:

1. find the topic's partition count in the metadata, waiting up to ``max.block.ms`` for
   the sender thread to fetch it the first time a topic is used;
2. pick the partition: the one given, else murmur2 of the key, else the topic's current
   sticky partition (:mod:`connector.client.partitioner`);
3. append to the accumulator (which may block up to the rest of ``max.block.ms`` when
   ``buffer.memory`` is used up), and wake the sender when a batch fills or a new one
   opens; return the record's future.

Durations of the Python API (``flush``, ``close``, ``future.result``) are in seconds, as
in kafka-python and :mod:`concurrent.futures`; the options stay in Kafka's milliseconds.

With ``transactional.id`` the producer is transactional (Kafka's API)::

    producer.init_transactions()          # once: producer id and epoch; older instances fenced
    producer.begin_transaction()
    producer.send("out", b"v")            # a partition joins the transaction on first use
    producer.send_offsets_to_transaction({TopicPartition("in", 0): 42}, "my-group")
    producer.commit_transaction()         # or abort_transaction(): all or nothing

(:mod:`connector.client.transaction_manager` does the talking to the coordinator.)

Threading: ``send`` and ``flush`` may be called from any number of threads. Callbacks
(``callback(metadata, exception)`` and ``add_done_callback``) run on the sender thread.
``close`` waits for everything sent before it to be acknowledged or to fail (up to
``timeout``, then the rest fails with ProducerClosedError).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from broker_sim.common import SYSTEM_CLOCK, Clock
from broker_sim.protocol.errors import InvalidTopic

from .accumulator import RecordAccumulator
from .buffer_pool import BufferPool
from .config import ProducerConfig
from .errors import KafkaTimeoutError, ProducerClosedError, RecordTooLargeError
from .idempotence import IdempotenceManager
from .metadata import Cluster, Metadata, TopicPartition
from .network_client import NetworkClient
from .partitioner import DefaultPartitioner
from .producer_batch import RECORD_OVERHEAD, headers_size
from .record_future import ProduceRequestResult, RecordFuture, SendCallback
from .sender import Sender
from .transaction_manager import TransactionError, TransactionManager

log = logging.getLogger(__name__)

_BYTES = (bytes, bytearray, memoryview)
_TopicEntry = tuple[Cluster, int, list[int], list[TopicPartition]]


class Producer:
    def __init__(self, config: ProducerConfig | Mapping[str, Any] | None = None, *,
                 clock: Clock = SYSTEM_CLOCK, partitioner: DefaultPartitioner | None = None,
                 **options: Any) -> None:
        self.config = cfg = ProducerConfig.coerce(config, **options)
        self.clock = clock
        self.metadata = Metadata(cfg, allow_auto_topic_creation=True)
        self.idempotence = (IdempotenceManager(cfg.transactional_id is not None)
                            if cfg.enable_idempotence else None)
        #: set with ``transactional.id``: Kafka transactions (see :mod:`.transaction_manager`).
        self.transactions: TransactionManager | None = None
        self.accumulator = RecordAccumulator(cfg, BufferPool(cfg.buffer_memory, clock),
                                             self.idempotence)
        self.client = NetworkClient(cfg, self.metadata, clock)
        self.sender = Sender(cfg, self.client, self.metadata, self.accumulator,
                             self.idempotence, clock)
        if cfg.transactional_id is not None and self.idempotence is not None:
            self.transactions = TransactionManager(cfg, self.idempotence, self.flush, clock,
                                                   wake=self.sender.wake,
                                                   on_fatal=self._transaction_failed)
            txn = self.transactions
            self.sender.before_send = lambda now: txn.send_adds(self.client, now)
        self.partitioner = partitioner or DefaultPartitioner(cfg.batch_size)
        self._topics: dict[str, _TopicEntry] = {}
        self._max_record_size = min(cfg.max_request_size, cfg.buffer_memory)
        self._max_block_ms = float(cfg.max_block_ms)
        self._wall_ms = clock.wall_ms
        self._monotonic_ms = clock.monotonic_ms
        self._closed = False
        self._close_lock = threading.Lock()
        self.sender.start()
        log.debug("producer started: %s", cfg.to_options())

    # ---- sending --------------------------------------------------------------------
    def send(self, topic: str, value: bytes | None = None, key: bytes | None = None,
             partition: int | None = None,
             headers: Sequence[tuple[str, bytes | None]] | None = None,
             timestamp: int | None = None, callback: SendCallback | None = None) -> RecordFuture:
        """Queue a record; returns a future resolving to RecordMetadata.

        ``timestamp`` is epoch milliseconds (now if None). ``callback(metadata, exception)``
        runs on the sender thread when the record is acknowledged or fails.
        Once the broker has refused InitProducerId for good (an idempotent producer's fatal
        error, e.g. not authorized), the returned future has already failed with that
        error (and the callback is called at once, on this thread); records queued before
        fail with it too. An authentication failure is raised here instead.
        """
        # The hot path: a few attribute reads, one partitioner call, one accumulator call.
        if self._closed:
            raise ProducerClosedError("cannot send after the producer is closed")
        if self.client.fatal_error is not None:  # authentication failed: nothing can be sent
            raise self.client.fatal_error
        if self.sender.fatal_error is not None:  # producer id refused: the record fails at once
            return self._failed(topic, partition, timestamp, callback, self.sender.fatal_error)
        if (value is not None and value.__class__ is not bytes and not isinstance(value, _BYTES)) \
                or (key is not None and key.__class__ is not bytes and not isinstance(key, _BYTES)):
            raise TypeError("key and value must be bytes-like or None, not "
                            f"{type(key).__name__} and {type(value).__name__}")
        entry = self._topics.get(topic)
        waited = 0.0
        if entry is None or entry[0] is not self.metadata.cluster or (
                partition is not None and partition >= entry[1]):
            entry, waited = self._topic_entry(topic, partition)
        _, count, available, tps = entry
        size = RECORD_OVERHEAD + (len(value) if value is not None else 0) + (
            len(key) if key is not None else 0)
        if headers:
            size += headers_size(headers)
        if size > self._max_record_size:
            raise RecordTooLargeError(
                f"the record is about {size} bytes, larger than max.request.size "
                f"({self.config.max_request_size}) or buffer.memory ({self.config.buffer_memory})")
        if partition is None:
            partition = self.partitioner.partition(topic, key, count, available, size)
        elif partition < 0:
            raise ValueError(f"invalid partition {partition} for topic {topic!r}: "
                             f"not in [0, {count})")
        if self.transactions is not None:  # the partition joins the transaction first
            self.transactions.ensure_partition(tps[partition])
        try:
            result = self.accumulator.append(
                tps[partition], self._wall_ms() if timestamp is None else timestamp, key, value,
                headers, callback, self._max_block_ms - waited, self._monotonic_ms(), size)
        except ProducerClosedError:
            if self.sender.fatal_error is None:
                raise
            # The producer id was refused while this record waited (the sender then closes
            # the accumulator): fail it with that error, not as "closed".
            return self._failed(topic, partition, timestamp, callback, self.sender.fatal_error)
        if result[1] or result[2]:  # batch_is_full, new_batch_created
            self.sender.wake()
        return result[0]

    def _failed(self, topic: str, partition: int | None, timestamp: int | None,
                callback: SendCallback | None, error: BaseException) -> RecordFuture:
        """A future already failed with ``error`` (its callback, if any, called now)."""
        result = ProduceRequestResult(topic, -1 if partition is None else partition)
        result.done(-1, -1, error)
        future = RecordFuture(result, 0, self._wall_ms() if timestamp is None else timestamp)
        if callback is not None:
            future.add_send_callback(callback)
        return future

    def _topic_entry(self, topic: str, partition: int | None) -> tuple[_TopicEntry, float]:
        """(cluster, partition count, available partitions, TopicPartitions) of ``topic``,
        waiting for metadata if needed; and the milliseconds spent waiting."""
        cluster, waited = self._wait_on_metadata(topic, partition, self._max_block_ms)
        count = cluster.partition_count(topic) or 0
        entry = (cluster, count, cluster.available_partitions(topic),
                 [TopicPartition(topic, p) for p in range(count)])
        self._topics[topic] = entry
        return entry, waited

    def _wait_on_metadata(self, topic: str, partition: int | None,
                          max_block_ms: float) -> tuple[Cluster, float]:
        start = self.clock.monotonic_ms()
        self.metadata.add_topics(topic)
        while True:
            cluster = self.metadata.cluster
            count = cluster.partition_count(topic)
            if count is not None and (partition is None or partition < count):
                return cluster, self.clock.monotonic_ms() - start
            error = cluster.topic_error(topic)
            if isinstance(error, InvalidTopic) or (error is not None and not error.retriable):
                raise error  # e.g. TopicAuthorizationFailed: waiting would not change it
            if count is not None and partition is not None:
                raise ValueError(f"invalid partition {partition} for topic {topic!r}: "
                                 f"not in [0, {count})")
            remaining = max_block_ms - (self.clock.monotonic_ms() - start)
            if remaining <= 0:
                raise KafkaTimeoutError(f"topic {topic!r} not present in metadata after "
                                        f"{max_block_ms:g} ms" + (f" ({error})" if error else ""))
            version = self.metadata.request_update()
            self.sender.wake()
            self.metadata.await_update(version, remaining / 1000.0)

    def partitions_for(self, topic: str) -> list[int]:
        """The partitions of ``topic`` (waits for metadata up to ``max.block.ms``)."""
        cluster, _ = self._wait_on_metadata(topic, None, self.config.max_block_ms)
        return [p.partition for p in cluster.partitions_for_topic(topic)]

    # ---- transactions (with transactional.id) ---------------------------------------
    def _txn(self) -> TransactionManager:
        if self.transactions is None:
            raise TransactionError("transactions need a transactional.id")
        return self.transactions

    def _transaction_failed(self, error: BaseException) -> None:
        """Fenced (or a partition refused): every queued record fails, and so do later ones."""
        self.sender.fatal_error = error
        self.sender.wake()

    def init_transactions(self, timeout: float | None = None) -> None:
        """Get the producer id and epoch from the transaction coordinator (fencing any
        older instance with the same transactional id). Once, before the first transaction."""
        self._txn().init_transactions(timeout)

    def begin_transaction(self) -> None:
        self._txn().begin_transaction()

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, int], group_id: str,
                                    timeout: float | None = None) -> None:
        """Commit ``group_id``'s offsets inside the transaction (consume-transform-produce)."""
        self._txn().send_offsets_to_transaction(offsets, group_id, timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit: everything sent in the transaction becomes visible to
        read_committed readers at once."""
        self._txn().end_transaction(True, timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Flush, then abort: nothing sent in the transaction is ever visible to
        read_committed readers."""
        self._txn().end_transaction(False, timeout)

    # ---- flush and close ------------------------------------------------------------
    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait for it (KafkaTimeoutError after ``timeout`` s).

        A record that failed does not make flush raise: its future holds the error. The
        exception is the producer's fatal error (InitProducerId refused, e.g. not
        authorized): no record can be sent, and flush raises it.
        Not from a send callback: those run on the sender thread, which flush waits for.
        """
        if threading.current_thread() is self.sender:
            raise RuntimeError("flush() called from a producer callback would wait forever")
        self.accumulator.begin_flush()
        self.sender.wake()
        try:
            self.accumulator.await_flush_completion(
                None if timeout is None else timeout * 1000.0, self.clock)
        finally:
            self.accumulator.end_flush()
        if self.sender.fatal_error is not None:
            raise self.sender.fatal_error

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued, wait up to ``timeout`` s, then fail whatever is left."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        if timeout is not None and timeout <= 0:
            self.sender.force_close()
        else:
            self.sender.request_stop()
        if threading.current_thread() is self.sender:
            log.warning("close() called from a producer callback: not waiting for the sender")
            return
        self.sender.join(timeout)
        if self.sender.is_alive():
            log.warning("producer did not finish sending within %s s; failing the rest", timeout)
            self.sender.force_close()
            self.sender.join()
        if self.transactions is not None:
            self.transactions.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
