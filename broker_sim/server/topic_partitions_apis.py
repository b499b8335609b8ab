"""DescribeTopicPartitions (KIP-966): topics and their partitions a page at a time.

Kafka 4's ``Admin.describeTopics`` by name (``kafka-topics --describe``) sends it when the
broker advertises it and Metadata otherwise; pages let it describe topics with more
partitions than one response should hold.

* **Which topics.** The request's topics, or every topic when it names none, from the
  cursor's topic on (names at or after it, in name order; ``cursor`` null: from the
  first). A cursor whose topic is not among the named ones, or whose partition is
  negative, is INVALID_REQUEST for every topic named.
* **Authorization** as Metadata's: Describe on each topic. Asked for every topic, those
  the principal may not describe are left out; named, each comes back
  TOPIC_AUTHORIZATION_FAILED with the zero topic id, after the page, whether it exists or
  not. Each topic answered carries the principal's authorized operations on it.
* **Pages.** At most ``response_partition_limit`` partitions (capped at
  :data:`MAX_PARTITIONS_PER_RESPONSE`, at least 1) per response, the cursor's topic from
  the cursor's partition, every other from partition 0. When the limit cuts a topic, the
  page ends with it and ``next_cursor`` names its first partition left out; when the
  limit is reached exactly at a topic's end and topics remain, ``next_cursor`` names the
  next one at partition 0; otherwise it is null. Named topics that do not exist are
  UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC when the name cannot be a topic's), in their
  place. Each request reads one image, and the cursor names a topic and partition, not a
  position in a list: following the cursors gives no partition twice, and every
  partition of each topic that exists from the first page to the last, even when other
  topics are created or deleted between pages.
* Partitions answer as Kafka's do: error 0, leader -1 when there is none, every replica
  and the ISR as the image has them, offline the replicas on brokers not alive; no
  eligible leader replicas (pyq has no ELR: empty lists).

Threading: request-handler threads, several at once; each request reads one image.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..controller.image import ClusterImage
from ..coordinator.placement import INTERNAL_TOPICS
from ..log.log_manager import validate_topic_name
from ..network.request_channel import Request
from ..protocol.api import ApiKey
from ..protocol.errors import (
    InvalidRequest,
    InvalidTopic,
    KafkaError,
    TopicAuthorizationFailed,
    UnknownTopicOrPartition,
)
from ..protocol.schema import Data
from ..security.acl import Operation as Op
from ..security.acl import ResourceType as RT
from .metadata_cache import ZERO_UUID

if TYPE_CHECKING:
    from .api_context import ApiContext

#: The most partitions one response holds, whatever the request asks (Kafka's
#: ``max.request.partition.size.limit`` default).
MAX_PARTITIONS_PER_RESPONSE = 2000
UNKNOWN_OPERATIONS = -(2 ** 31)


def topic_error(code: int, name: str) -> Data:
    return Data(error_code=code, name=name, topic_id=ZERO_UUID, is_internal=name in INTERNAL_TOPICS,
                partitions=[], topic_authorized_operations=UNKNOWN_OPERATIONS)


def missing_topic_code(name: str) -> int:
    try:
        validate_topic_name(name)
    except (ValueError, KafkaError):
        return InvalidTopic.code
    return UnknownTopicOrPartition.code


class TopicPartitionsApis:
    def __init__(self, apis: ApiContext) -> None:
        self.apis = apis
        self.handlers: dict[int, Callable[[Request], None]] = {
            ApiKey.DESCRIBE_TOPIC_PARTITIONS: self.handle_describe_topic_partitions,
        }

    def handle_describe_topic_partitions(self, request: Request) -> None:
        body: Any = request.body
        image = self.apis.metadata.image
        cursor = body.cursor
        first = cursor.topic_name if cursor is not None else ""
        every_topic = not body.topics
        names = {n for n in (image.topics if every_topic else (t.name for t in body.topics)) if n >= first}
        problem = None
        if cursor is not None and not every_topic and cursor.topic_name not in names:
            problem = f"the cursor's topic {cursor.topic_name!r} is not among the topics asked for"
        elif cursor is not None and cursor.partition_index < 0:
            problem = f"the cursor's partition {cursor.partition_index} is negative"
        if problem is not None:
            self.apis.respond(request, Data(throttle_time_ms=0, next_cursor=None, topics=[
                topic_error(InvalidRequest.code, t.name) for t in body.topics]))
            return
        allowed: list[str] = []
        denied: list[str] = []
        for name in sorted(names):
            (allowed if self.apis.authorized(request, Op.DESCRIBE, RT.TOPIC, name) else denied).append(name)
        limit = max(min(MAX_PARTITIONS_PER_RESPONSE, body.response_partition_limit), 1)
        start = {first: cursor.partition_index} if cursor is not None else {}
        topics, next_cursor = self.page(request, image, allowed, start, limit, every_topic)
        if not every_topic:
            topics += [topic_error(TopicAuthorizationFailed.code, name) for name in denied]
        self.apis.respond(request, Data(throttle_time_ms=0, topics=topics, next_cursor=next_cursor))

    def page(self, request: Request, image: ClusterImage, names: list[str], start: dict[str, int],
             limit: int, skip_missing: bool) -> tuple[list[Data], Data | None]:
        """The topics of one response and the cursor to the rest (None: nothing left)."""
        alive = {b for b, info in image.brokers.items() if info.alive}
        topics: list[Data] = []
        left = limit
        for name in names:
            if left == 0:
                return topics, Data(topic_name=name, partition_index=0)
            info = image.topics.get(name)
            if info is None:
                if not skip_missing:
                    topics.append(topic_error(missing_topic_code(name), name))
                continue
            low = start.get(name, 0)
            high = min(len(info.partitions), low + left)
            topics.append(Data(
                error_code=0, name=name, topic_id=self.apis.metadata.topic_id(name, image),
                is_internal=name in INTERNAL_TOPICS,
                topic_authorized_operations=self.apis.authorized_operations(request, RT.TOPIC, name),
                partitions=[Data(error_code=0, partition_index=i, leader_id=p.leader,
                                 leader_epoch=p.leader_epoch, replica_nodes=list(p.replicas),
                                 isr_nodes=list(p.isr), eligible_leader_replicas=[], last_known_elr=[],
                                 offline_replicas=[r for r in p.replicas if r not in alive])
                            for i in range(low, high) for p in [info.partitions[i]]]))
            if high < len(info.partitions):
                return topics, Data(topic_name=name, partition_index=high)
            left -= max(high - low, 0)
        return topics, None
