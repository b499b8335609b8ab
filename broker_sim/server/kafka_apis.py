"""Request dispatch: one handler per API key, answering in the version the client used.

Each ``handle_*`` method takes a :class:`Request` (header + decoded body) and eventually
calls :meth:`KafkaApis.respond` exactly once: at once for most APIs, later for requests
parked in a purgatory. Errors for one partition are answered in that partition's slot with
Kafka's error code; an unexpected exception fails only that request (logged, connection
closed), never the handler thread.

Called from request-handler threads, several at a time: handlers keep no state of their
own; shared state lives in the stores they call, each with its own lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..log import LogConfig
from ..network.request_channel import Request, RequestChannel, Response
from ..protocol import api
from ..protocol.api import ApiKey
from ..protocol.errors import (
    InvalidReplicationFactor,
    InvalidRequest,
    InvalidRequiredAcks,
    InvalidTopic,
    KafkaError,
    OffsetMetadataTooLarge,
    UnknownServerError,
    UnknownTopicOrPartition,
)
from ..protocol.schema import Data
from .config import BrokerConfig
from .group_offsets import GroupOffsetStore
from .producer_ids import ProducerIdManager
from .replica_manager import FetchSpec, ReplicaManager
from .topics import TopicStore, validate_topic_name

log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_METADATA_SIZE = 4096


def _code(e: BaseException | None) -> int:
    if e is None:
        return 0
    return e.code if isinstance(e, KafkaError) else UnknownServerError.code


class KafkaApis:
    def __init__(self, config: BrokerConfig, channel: RequestChannel, replica_manager: ReplicaManager,
                 topics: TopicStore, group_offsets: GroupOffsetStore, producer_ids: ProducerIdManager,
                 advertised_port: Callable[[], int]) -> None:
        self.config = config
        self.channel = channel
        self.replica_manager = replica_manager
        self.topics = topics
        self.group_offsets = group_offsets
        self.producer_ids = producer_ids
        self.advertised_port = advertised_port
        self._handlers: dict[int, Callable[[Request], None]] = {
            ApiKey.PRODUCE: self.handle_produce,
            ApiKey.FETCH: self.handle_fetch,
            ApiKey.LIST_OFFSETS: self.handle_list_offsets,
            ApiKey.METADATA: self.handle_metadata,
            ApiKey.OFFSET_COMMIT: self.handle_offset_commit,
            ApiKey.OFFSET_FETCH: self.handle_offset_fetch,
            ApiKey.FIND_COORDINATOR: self.handle_find_coordinator,
            ApiKey.API_VERSIONS: self.handle_api_versions,
            ApiKey.CREATE_TOPICS: self.handle_create_topics,
            ApiKey.DELETE_TOPICS: self.handle_delete_topics,
            ApiKey.INIT_PRODUCER_ID: self.handle_init_producer_id,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self.handle_offset_for_leader_epoch,
        }

    # ---- plumbing ------------------------------------------------------------------
    def handle(self, request: Request) -> None:
        try:
            self._handlers[request.header.api_key](request)
        except Exception:
            log.exception("error handling %s v%d from %s; closing the connection",
                          api.APIS[request.header.api_key].name, request.header.api_version,
                          request.client_address)
            self.channel.send_response(Response(request, None, close_connection=True))

    def respond(self, request: Request, body: Any) -> None:
        h = request.header
        payload = api.encode_response(h.api_key, h.api_version, h.correlation_id, body)
        self.channel.send_response(Response(request, payload))

    def no_response(self, request: Request) -> None:
        self.channel.send_response(Response(request, None))

    # ---- APIs ----------------------------------------------------------------------
    def handle_api_versions(self, request: Request) -> None:
        self.respond(request, Data(error_code=0, api_keys=api.supported_versions(), throttle_time_ms=0))

    def _broker_data(self) -> Data:
        return Data(node_id=self.config.broker_id, host=self.config.advertised,
                    port=self.advertised_port(), rack=None)

    def handle_metadata(self, request: Request) -> None:
        body = request.body
        version = request.header.api_version
        if body.topics is None or (version == 0 and not body.topics):
            names = self.topics.names()
            auto_create = False
        else:
            names = [t.name for t in body.topics]
            auto_create = self.config.auto_create_topics_enable and body.allow_auto_topic_creation
        topics = []
        for name in names:
            info = self.topics.get(name)
            if info is None and auto_create:
                info = self._auto_create(name)
            if info is None:
                code = UnknownTopicOrPartition.code
                try:
                    validate_topic_name(name)
                except InvalidTopic:
                    code = InvalidTopic.code
                topics.append(Data(error_code=code, name=name, is_internal=False, partitions=[],
                                   topic_authorized_operations=-2147483648))
                continue
            partitions = []
            for i in range(info.partitions):
                try:
                    p = self.replica_manager.partition(name, i)
                    partitions.append(Data(error_code=0, partition_index=i, leader_id=p.leader_id,
                                           leader_epoch=p.leader_epoch, replica_nodes=p.replicas,
                                           isr_nodes=p.isr, offline_replicas=[]))
                except KafkaError as e:
                    partitions.append(Data(error_code=e.code, partition_index=i, leader_id=-1,
                                           leader_epoch=-1, replica_nodes=[], isr_nodes=[],
                                           offline_replicas=[]))
            topics.append(Data(error_code=0, name=name, is_internal=False, partitions=partitions,
                               topic_authorized_operations=-2147483648))
        self.respond(request, Data(throttle_time_ms=0, brokers=[self._broker_data()],
                                   cluster_id=self.config.cluster_id,
                                   controller_id=self.config.broker_id, topics=topics,
                                   cluster_authorized_operations=-2147483648))

    def _auto_create(self, name: str) -> Any:
        try:
            info = self.topics.create(name, self.config.num_partitions, 1)
        except KafkaError:
            return self.topics.get(name)  # invalid name, or created concurrently
        self.replica_manager.create_partitions(info)
        log.info("auto-created topic %s with %d partition(s)", name, info.partitions)
        return info

    def handle_produce(self, request: Request) -> None:
        body = request.body
        acks = body.acks
        responses = []
        for topic in body.topic_data:
            parts = []
            for pd in topic.partition_data:
                out = Data(index=pd.index, error_code=0, base_offset=-1, log_append_time_ms=-1,
                           log_start_offset=-1, record_errors=[], error_message=None)
                if acks not in (0, 1, -1):
                    out.error_code = InvalidRequiredAcks.code
                elif pd.records is None or len(pd.records) == 0:
                    out.error_code = InvalidRequest.code
                    out.error_message = "produce request carries no records"
                else:
                    try:
                        result = self.replica_manager.append(topic.name, pd.index, pd.records)
                        out.base_offset = result.base_offset
                        out.log_start_offset = result.log_start_offset
                    except KafkaError as e:
                        out.error_code = e.code
                        out.error_message = e.message or None
                        if not isinstance(e, UnknownTopicOrPartition):
                            log.info("produce to %s-%d rejected: %s", topic.name, pd.index, e)
                parts.append(out)
            responses.append(Data(name=topic.name, partition_responses=parts))
        if acks == 0:
            self.no_response(request)
        else:
            self.respond(request, Data(responses=responses, throttle_time_ms=0))

    def handle_fetch(self, request: Request) -> None:
        body = request.body
        specs = [FetchSpec(t.topic, p.partition, p.fetch_offset, p.partition_max_bytes)
                 for t in body.topics for p in t.partitions]
        results = self.replica_manager.read(specs, body.max_bytes, is_follower=body.replica_id >= 0)
        self.respond(request, self.fetch_response(results))

    @staticmethod
    def fetch_response(results: list) -> Data:
        by_topic: dict[str, list[Data]] = {}
        for r in results:
            by_topic.setdefault(r.spec.topic, []).append(Data(
                partition_index=r.spec.partition, error_code=_code(r.error),
                high_watermark=r.high_watermark, last_stable_offset=r.high_watermark,
                log_start_offset=r.log_start_offset, aborted_transactions=None,
                preferred_read_replica=-1, records=r.records))
        return Data(throttle_time_ms=0, error_code=0, session_id=0,
                    responses=[Data(topic=t, partitions=ps) for t, ps in by_topic.items()])

    def handle_list_offsets(self, request: Request) -> None:
        topics = []
        for t in request.body.topics:
            parts = []
            for p in t.partitions:
                out = Data(partition_index=p.partition_index, error_code=0, old_style_offsets=[],
                           timestamp=-1, offset=-1, leader_epoch=-1)
                try:
                    part = self.replica_manager.partition(t.name, p.partition_index)
                    out.leader_epoch = part.leader_epoch
                    if p.timestamp == LATEST_TIMESTAMP:
                        out.offset = part.high_watermark
                    elif p.timestamp == EARLIEST_TIMESTAMP:
                        out.offset = part.log_start_offset
                    else:
                        found = part.log.offset_for_timestamp(p.timestamp, max_offset=part.high_watermark)
                        if found is not None:
                            out.offset, out.timestamp = found
                except KafkaError as e:
                    out.error_code = e.code
                parts.append(out)
            topics.append(Data(name=t.name, partitions=parts))
        self.respond(request, Data(throttle_time_ms=0, topics=topics))

    def handle_offset_commit(self, request: Request) -> None:
        body = request.body
        topics = []
        items = []
        for t in body.topics:
            parts = []
            info = self.topics.get(t.name)
            for p in t.partitions:
                code = 0
                if info is None or not 0 <= p.partition_index < info.partitions:
                    code = UnknownTopicOrPartition.code
                elif p.committed_metadata is not None and len(p.committed_metadata) > MAX_METADATA_SIZE:
                    code = OffsetMetadataTooLarge.code
                else:
                    items.append((t.name, p.partition_index, p.committed_offset,
                                  p.committed_leader_epoch, p.committed_metadata or ""))
                parts.append(Data(partition_index=p.partition_index, error_code=code))
            topics.append(Data(name=t.name, partitions=parts))
        if items:
            self.group_offsets.commit(body.group_id, items)
        self.respond(request, Data(throttle_time_ms=0, topics=topics))

    def handle_offset_fetch(self, request: Request) -> None:
        body = request.body
        if body.topics is None:
            committed = self.group_offsets.fetch(body.group_id)
            wanted: dict[str, list[int]] = {}
            for (topic, part) in sorted(committed):
                wanted.setdefault(topic, []).append(part)
        else:
            wanted = {t.name: list(t.partition_indexes) for t in body.topics}
            committed = self.group_offsets.fetch(
                body.group_id, [(t, p) for t, ps in wanted.items() for p in ps])
        topics = []
        for topic, parts in wanted.items():
            out = []
            for p in parts:
                c = committed.get((topic, p))
                out.append(Data(partition_index=p, committed_offset=c.offset if c else -1,
                                committed_leader_epoch=c.leader_epoch if c else -1,
                                metadata=c.metadata if c else "", error_code=0))
            topics.append(Data(name=topic, partitions=out))
        self.respond(request, Data(throttle_time_ms=0, topics=topics, error_code=0))

    def handle_find_coordinator(self, request: Request) -> None:
        self.respond(request, Data(throttle_time_ms=0, error_code=0, error_message=None,
                                   node_id=self.config.broker_id, host=self.config.advertised,
                                   port=self.advertised_port()))

    def handle_create_topics(self, request: Request) -> None:
        body = request.body
        results = []
        for t in body.topics:
            out = Data(name=t.name, error_code=0, error_message=None)
            try:
                partitions = t.num_partitions
                rf = t.replication_factor
                if t.assignments:
                    partitions = len(t.assignments)
                    rf = len(t.assignments[0].broker_ids)
                if partitions == -1:
                    partitions = self.config.num_partitions
                if rf == -1:
                    rf = self.config.default_replication_factor
                if rf != 1:
                    raise InvalidReplicationFactor(
                        f"replication factor {rf} is larger than the number of brokers (1)")
                configs = {c.name: c.value for c in t.configs}
                if configs:  # raises InvalidConfig naming the option
                    LogConfig.from_properties(configs, self.replica_manager.log_manager.default_config)
                info = self.topics.create(t.name, partitions, rf, configs, validate_only=body.validate_only)
                if not body.validate_only:
                    self.replica_manager.create_partitions(info)
                    log.info("created topic %s with %d partition(s)", t.name, partitions)
            except KafkaError as e:
                out.error_code = e.code
                out.error_message = e.message or None
            results.append(out)
        self.respond(request, Data(throttle_time_ms=0, topics=results))

    def handle_delete_topics(self, request: Request) -> None:
        results = []
        for name in request.body.topic_names:
            code = 0
            if self.topics.delete(name) is None:
                code = UnknownTopicOrPartition.code
            else:
                self.replica_manager.delete_topic(name)
                self.group_offsets.delete_topic(name)
                log.info("deleted topic %s", name)
            results.append(Data(name=name, error_code=code))
        self.respond(request, Data(throttle_time_ms=0, responses=results))

    def handle_init_producer_id(self, request: Request) -> None:
        if request.body.transactional_id is not None:
            self.respond(request, Data(throttle_time_ms=0, error_code=InvalidRequest.code,
                                       producer_id=-1, producer_epoch=-1))
            return
        self.respond(request, Data(throttle_time_ms=0, error_code=0,
                                   producer_id=self.producer_ids.next_id(), producer_epoch=0))

    def handle_offset_for_leader_epoch(self, request: Request) -> None:
        topics = []
        for t in request.body.topics:
            parts = []
            for p in t.partitions:
                out = Data(error_code=0, partition=p.partition, leader_epoch=-1, end_offset=-1)
                try:
                    part = self.replica_manager.partition(t.topic, p.partition)
                    part.check_leader_epoch(p.current_leader_epoch)
                    out.leader_epoch, out.end_offset = part.end_offset_for_epoch(p.leader_epoch)
                except KafkaError as e:
                    out.error_code = e.code
                parts.append(out)
            topics.append(Data(topic=t.topic, partitions=parts))
        self.respond(request, Data(throttle_time_ms=0, topics=topics))
