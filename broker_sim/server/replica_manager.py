"""The partitions this broker hosts, and the append and read paths over them.

The replica manager owns the map of :class:`Partition` objects (guarded by a lock;
lookups copy nothing) and implements the parts of Produce and Fetch that do not depend on
the request version: appending record sets to leaders and reading byte ranges of logs,
bounded by the high watermark for consumers and by the log end offset for followers.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from ..log import LogConfig, LogManager
from ..protocol.errors import KafkaError, OffsetOutOfRange, UnknownTopicOrPartition
from .partition import AppendResult, Partition
from .topics import TopicInfo

log = logging.getLogger(__name__)

EMPTY = b""


@dataclass
class FetchSpec:
    topic: str
    partition: int
    fetch_offset: int
    max_bytes: int


@dataclass
class FetchResult:
    spec: FetchSpec
    error: KafkaError | None = None
    records: bytes = EMPTY
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager: LogManager) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self._partitions: dict[tuple[str, int], Partition] = {}
        self._lock = threading.Lock()

    def create_partitions(self, topic: TopicInfo) -> None:
        config = None
        if topic.configs:
            config = LogConfig.from_properties(topic.configs, self.log_manager.default_config)
        with self._lock:
            for i in range(topic.partitions):
                if (topic.name, i) not in self._partitions:
                    log_ = self.log_manager.get_or_create(topic.name, i, config)
                    self._partitions[(topic.name, i)] = Partition(topic.name, i, log_, self.broker_id)

    def delete_topic(self, name: str) -> None:
        with self._lock:
            for key in [k for k in self._partitions if k[0] == name]:
                del self._partitions[key]
        self.log_manager.delete_topic(name)

    def partition(self, topic: str, index: int) -> Partition:
        p = self._partitions.get((topic, index))
        if p is None:
            raise UnknownTopicOrPartition(f"this broker does not host {topic}-{index}")
        return p

    def partitions(self) -> list[Partition]:
        with self._lock:
            return list(self._partitions.values())

    def append(self, topic: str, index: int, records: bytes | memoryview) -> AppendResult:
        return self.partition(topic, index).append_records_to_leader(records)

    def read(self, specs: list[FetchSpec], max_bytes: int, is_follower: bool,
             min_one_batch: bool = True) -> list[FetchResult]:
        """Read each partition in order, sharing ``max_bytes`` across them.

        Like Kafka from Fetch v3 on, the first partition that has data returns at least
        one whole batch even when it is larger than the limits, so a consumer can always
        make progress; later partitions get only what still fits.
        """
        results = []
        remaining = max_bytes
        for spec in specs:
            result = FetchResult(spec)
            try:
                p = self.partition(spec.topic, spec.partition)
                result.high_watermark = p.high_watermark
                result.log_start_offset = p.log_start_offset
                result.log_end_offset = p.log_end_offset
                limit = min(spec.max_bytes, remaining)
                upper = None if is_follower else result.high_watermark
                if limit > 0 or min_one_batch:
                    data = p.log.read(spec.fetch_offset, max(limit, 0), max_offset=upper,
                                      min_one_batch=min_one_batch)
                    result.records = data.records
            except OffsetOutOfRange as e:
                result.error = e
            except KafkaError as e:
                result.error = e
            if result.records:
                remaining -= len(result.records)
                min_one_batch = False
            results.append(result)
        return results
