"""The ``_schemas`` topic as a :class:`~.store.RecordLog`, over the Kafka protocol.

The registry inside a broker is a client of its own cluster: it speaks Metadata,
CreateTopics, Produce and Fetch through :class:`~broker_sim.network.blocking_client.
BlockingConnection` (the broker's own outgoing wire client), bootstrapping from the
broker's inter-broker listener and then talking to the partition's leader, wherever it
is. Nothing here reaches into the broker's replica manager, so the registry of any broker
-- a replica of ``_schemas`` or not -- reads the topic the same way.

- The topic is created on first use: 1 partition, replication factor -1 (the cluster's
  default: 3, at most the live brokers), ``cleanup.policy=compact``,
  ``min.insync.replicas`` left to the cluster's default, ``max.message.bytes`` large
  enough for the largest schema the registry takes.
- :meth:`KafkaRecordLog.append` produces one record with acks=all (-1).
- :meth:`KafkaRecordLog.read` fetches from an offset (no waiting: ``max_wait_ms=0``) and
  returns the records with the partition's high watermark.

Failures (the leader gone, not yet elected, too few in-sync replicas, a connection
refused or cut) are retried against fresh metadata until ``timeout_s`` passes, then raised
as 50001. A produce whose answer was lost may be written twice: the records' keys carry
the request's id and the state applies a request once (see :mod:`.state`).

Threading: one request at a time (``_lock``); any thread may call.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from ..network.blocking_client import BlockingConnection
from ..protocol.api import ApiKey
from ..protocol.errors import KafkaError, NetworkException, error_for_code
from ..protocol.records.builder import RecordBatchBuilder
from ..protocol.records.reader import iter_records
from .errors import store_error
from .store import Entry

log = logging.getLogger(__name__)

TOPIC = "_schemas"
METADATA_VERSION = 8
CREATE_TOPICS_VERSION = 4
PRODUCE_VERSION = 8
FETCH_VERSION = 11
FETCH_MAX_BYTES = 16 * 1024 * 1024
TOPIC_MAX_MESSAGE_BYTES = 8 * 1024 * 1024
_UNKNOWN_TOPIC = 3
_TOPIC_EXISTS = 36


class _Retry(Exception):
    """A failure worth another attempt with fresh metadata."""


class KafkaRecordLog:
    """See the module docstring."""

    def __init__(self, bootstrap: tuple[str, int], client_id: str = "schema-registry",
                 topic: str = TOPIC, timeout_s: float = 30.0) -> None:
        self.topic = topic
        self.timeout_s = timeout_s
        self.client_id = client_id
        self._bootstrap = BlockingConnection(bootstrap[0], bootstrap[1], client_id, timeout_s=10.0)
        self._leader: BlockingConnection | None = None
        self._lock = threading.Lock()

    # ---- the partition's leader -------------------------------------------------------
    def _leader_connection(self) -> BlockingConnection:
        if self._leader is not None:
            return self._leader
        resp = self._bootstrap.request(ApiKey.METADATA, METADATA_VERSION, {
            "topics": [{"name": self.topic}], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False})
        topic = next((t for t in resp.topics if t.name == self.topic), None)
        if topic is None or topic.error_code == _UNKNOWN_TOPIC:
            self._create_topic()
            raise _Retry(f"{self.topic} created")
        if topic.error_code or not topic.partitions or topic.partitions[0].leader_id < 0:
            raise _Retry(f"{self.topic} has no leader yet")
        leader = topic.partitions[0].leader_id
        broker = next((b for b in resp.brokers if b.node_id == leader), None)
        if broker is None:
            raise _Retry(f"leader {leader} of {self.topic} is not in the metadata")
        self._leader = BlockingConnection(broker.host, broker.port, self.client_id, timeout_s=15.0)
        return self._leader

    def _create_topic(self) -> None:
        resp = self._bootstrap.request(ApiKey.CREATE_TOPICS, CREATE_TOPICS_VERSION, {
            "topics": [{"name": self.topic, "num_partitions": 1, "replication_factor": -1,
                        "assignments": [],
                        "configs": [{"name": "cleanup.policy", "value": "compact"},
                                    {"name": "max.message.bytes",
                                     "value": str(TOPIC_MAX_MESSAGE_BYTES)}]}],
            "timeout_ms": 30_000, "validate_only": False})
        code = resp.topics[0].error_code
        if code and code != _TOPIC_EXISTS:
            raise _Retry(f"creating {self.topic}: {error_for_code(code).__name__} "
                         f"{resp.topics[0].error_message or ''}")
        log.info("schema registry: topic %s %s", self.topic,
                 "exists" if code else "created (compacted, 1 partition)")

    def _drop_leader(self) -> None:
        if self._leader is not None:
            self._leader.close()
            self._leader = None

    def _with_retries(self, what: str, attempt: Any) -> Any:
        deadline = time.monotonic() + self.timeout_s
        backoff = 0.05
        with self._lock:
            while True:
                try:
                    return attempt(self._leader_connection())
                except (_Retry, NetworkException, KafkaError) as e:
                    if isinstance(e, KafkaError) and not isinstance(e, NetworkException) \
                            and not e.retriable:
                        raise store_error(f"{what}: {type(e).__name__} {e}") from e
                    self._drop_leader()
                    if isinstance(e, NetworkException):
                        self._bootstrap.close()
                    if time.monotonic() + backoff > deadline:
                        raise store_error(f"{what} failed for {self.timeout_s:.0f} s: {e}") from e
                    log.debug("schema registry: %s: %s; retrying", what, e)
                    time.sleep(backoff)  # the leader being elected, or created
                    backoff = min(backoff * 2, 0.5)

    # ---- RecordLog --------------------------------------------------------------------
    def append(self, key: bytes, value: bytes | None) -> int:
        builder = RecordBatchBuilder()
        builder.append(int(time.time() * 1000), key, value)
        batch = builder.build()

        def produce(conn: BlockingConnection) -> int:
            resp = conn.request(ApiKey.PRODUCE, PRODUCE_VERSION, {
                "transactional_id": None, "acks": -1, "timeout_ms": 10_000,
                "topic_data": [{"name": self.topic,
                                "partition_data": [{"index": 0, "records": batch}]}]})
            part = resp.responses[0].partition_responses[0]
            if part.error_code:
                raise error_for_code(part.error_code)(part.error_message or "")
            return int(part.base_offset)

        return int(self._with_retries(f"writing to {self.topic}", produce))

    def read(self, start: int) -> tuple[list[Entry], int]:
        def fetch(conn: BlockingConnection) -> tuple[list[Entry], int]:
            resp = conn.request(ApiKey.FETCH, FETCH_VERSION, {
                "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": FETCH_MAX_BYTES,
                "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": self.topic, "partitions": [{
                    "partition": 0, "current_leader_epoch": -1, "fetch_offset": start,
                    "log_start_offset": -1, "partition_max_bytes": FETCH_MAX_BYTES}]}],
                "forgotten_topics_data": [], "rack_id": ""})
            if resp.error_code:
                raise error_for_code(resp.error_code)("fetch")
            part = resp.responses[0].partitions[0]
            if part.error_code:
                raise error_for_code(part.error_code)(f"fetch of {self.topic} from {start}")
            entries: list[Entry] = []
            if part.records is not None and len(part.records):
                entries = [(r.offset, r.key, r.value) for r in iter_records(part.records)
                           if r.offset >= start]
            return entries, int(part.high_watermark)

        entries, end = self._with_retries(f"reading {self.topic}", fetch)
        return entries, end

    def close(self) -> None:
        with self._lock:
            self._drop_leader()
            self._bootstrap.close()
