"""What a broker holds of its replicas: DescribeLogDirs and DescribeProducers.

* **DescribeLogDirs** (``kafka-log-dirs --describe``) needs Describe on the cluster (else
  CLUSTER_AUTHORIZATION_FAILED from v3, an empty answer before). A pyq broker has one log
  directory (``log.dirs``); it is answered with the disk's total and usable bytes and, for
  each replica hosted here that the request names (null: all), the bytes of its segments
  and its offset lag, ``max(high watermark - log end offset, 0)`` as Kafka computes it for
  a current log (0 unless a follower's log was cut below what it knew committed). Asked
  partitions this broker does not host are left out, as Kafka leaves them out.
* **DescribeProducers** (``kafka-transactions describe-producers`` / ``find-hanging``)
  answers, per partition, the producers its replica here keeps state for, leader or
  follower (``find-hanging --broker-id`` asks a broker about every replica it hosts):
  epoch, last sequence and timestamp, the coordinator epoch of the last marker, and where
  a transaction still open here began. Read on the topic is needed
  (TOPIC_AUTHORIZATION_FAILED); a partition not hosted here is
  UNKNOWN_TOPIC_OR_PARTITION.

Threading: request-handler threads, several at once; no state of its own (each log is read
under its own lock).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..network.request_channel import Request
from ..protocol.api import ApiKey
from ..protocol.errors import ClusterAuthorizationFailed, KafkaError, TopicAuthorizationFailed
from ..protocol.schema import Data
from ..security.acl import Operation as Op
from ..security.acl import ResourceType as RT

if TYPE_CHECKING:
    from .api_context import ApiContext


class ReplicaStateApis:
    def __init__(self, apis: ApiContext) -> None:
        self.apis = apis
        self.handlers: dict[int, Callable[[Request], None]] = {
            ApiKey.DESCRIBE_LOG_DIRS: self.handle_describe_log_dirs,
            ApiKey.DESCRIBE_PRODUCERS: self.handle_describe_producers,
        }

    def handle_describe_log_dirs(self, request: Request) -> None:
        if not self.apis.authorized(request, Op.DESCRIBE, RT.CLUSTER):
            self.apis.respond(request, Data(throttle_time_ms=0, results=[],
                                            error_code=ClusterAuthorizationFailed.code))
            return
        wanted = request.body.topics
        named = None if wanted is None else {(t.topic, i) for t in wanted for i in t.partitions}
        by_topic: dict[str, list[Data]] = {}
        for p in sorted(self.apis.replica_manager.partitions(), key=lambda p: (p.topic, p.index)):
            if named is not None and (p.topic, p.index) not in named:
                continue
            log = p.log
            by_topic.setdefault(p.topic, []).append(Data(
                partition_index=p.index, partition_size=sum(s.size for s in log.segments),
                offset_lag=max(log.high_watermark - log.log_end_offset, 0), is_future_key=False))
        log_dir = self.apis.replica_manager.log_manager.data_dir.absolute()
        disk = os.statvfs(log_dir)
        self.apis.respond(request, Data(throttle_time_ms=0, error_code=0, results=[Data(
            error_code=0, log_dir=str(log_dir),
            topics=[Data(name=t, partitions=ps) for t, ps in by_topic.items()],
            total_bytes=disk.f_blocks * disk.f_frsize, usable_bytes=disk.f_bavail * disk.f_frsize)]))

    def handle_describe_producers(self, request: Request) -> None:
        topics = []
        for t in request.body.topics:
            allowed = self.apis.authorized(request, Op.READ, RT.TOPIC, t.name)
            partitions = []
            for index in t.partition_indexes:
                out = Data(partition_index=index, error_code=0, error_message=None, active_producers=[])
                try:
                    if not allowed:
                        raise TopicAuthorizationFailed(f"Read on topic {t.name!r} is needed")
                    partition = self.apis.replica_manager.partition(t.name, index)
                    out.active_producers = [Data(
                        producer_id=s.producer_id, producer_epoch=s.epoch,
                        last_sequence=s.last_sequence, last_timestamp=s.last_timestamp,
                        coordinator_epoch=s.coordinator_epoch,
                        current_txn_start_offset=s.current_txn_start_offset)
                        for s in partition.log.active_producers()]
                except KafkaError as e:
                    out.error_code = e.code
                    out.error_message = e.message or None
                partitions.append(out)
            topics.append(Data(name=t.name, partitions=partitions))
        self.apis.respond(request, Data(throttle_time_ms=0, topics=topics))
