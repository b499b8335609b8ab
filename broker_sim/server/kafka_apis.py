"""Request dispatch: one handler per API key, answering in the version the client used.

Each ``handle_*`` method takes a :class:`Request` (header + decoded body) and eventually
calls :meth:`KafkaApis.respond` exactly once: at once for most APIs, later for requests
parked in a purgatory. Errors for one partition are answered in that partition's slot with
Kafka's error code; an unexpected exception fails only that request (logged, connection
closed), never the handler thread.

Authorization: with an authorizer (``authorizer.class.name``), every handler checks what
Kafka checks before acting — Write on a topic to produce, Read to fetch, Describe to list
offsets or see it in Metadata, Read on a group to commit, Create on the cluster or the
topic to create it, Delete on a topic to delete it or its records (DeleteRecords),
ClusterAction for follower fetches and transaction markers (which the PLAINTEXT
inter-broker listener of a broker with client listeners of its own always has, see
:meth:`.security_apis.SecurityApis.authorized`) — and answers
TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED in the slots it refuses, acting on the rest.
Metadata of all topics lists only those the principal may describe. The security APIs
themselves (SASL, SCRAM users, ACLs) live in :mod:`.security_apis`, the group APIs
(FindCoordinator, the rebalance protocol, offsets) in :mod:`.group_apis`, the config APIs
(DescribeConfigs, AlterConfigs, IncrementalAlterConfigs) in :mod:`.config_apis`, the
cluster-wide ones (ApiVersions, DescribeCluster, ElectLeaders, UpdateFeatures) in
:mod:`.cluster_apis`, Metadata's paged sibling DescribeTopicPartitions in
:mod:`.topic_partitions_apis`, the topic changes forwarded to the controller (CreateTopics,
DeleteTopics, CreatePartitions) in :mod:`.topic_admin_apis`, and the views of this broker's replicas (DescribeLogDirs,
DescribeProducers) in :mod:`.replica_state_apis`.

Called from request-handler threads, several at a time: handlers keep no state of their
own; shared state lives in the stores they call, each with its own lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, cast
from uuid import UUID

from ..coordinator.group import GroupCoordinator
from ..coordinator.placement import INTERNAL_TOPICS
from ..coordinator.transaction.coordinator import TransactionCoordinator
from ..log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from ..log.log_manager import validate_topic_name
from ..network.request_channel import Request, RequestChannel, Response
from ..protocol import api
from ..protocol.api import ApiKey
from ..protocol.errors import (
    ClusterAuthorizationFailed,
    CorruptMessage,
    InvalidRecord,
    InvalidRequest,
    InvalidRequiredAcks,
    InvalidTopic,
    KafkaError,
    LeaderNotAvailable,
    NotLeaderOrFollower,
    TopicAuthorizationFailed,
    TransactionalIdAuthorizationFailed,
    UnknownServerError,
    UnknownTopicId,
    UnknownTopicOrPartition,
    UnsupportedVersion,
)
from ..protocol.messages.fetch import FetchRequestView
from ..protocol.messages.list_offsets import ListOffsetsRequestView
from ..protocol.messages.metadata import MetadataRequestView
from ..protocol.messages.produce import ProduceRequestView
from ..protocol.records.batch_header import MAGIC, has_transactional_batch, peek_batch_size
from ..protocol.schema import Data
from ..security.acl import Operation as Op
from ..security.acl import ResourceType as RT
from ..security.authorizer import Authorizer
from .cluster_apis import ClusterApis
from .config import BrokerConfig
from .config_apis import ConfigApis
from .consumer_group_apis import ConsumerGroupApis
from .controller_client import ControllerClient
from .delayed_delete_records import DeleteRecordsStatus
from .delayed_produce import ProduceStatus
from .fetch_session import FetchContext, FetchSessionCache
from .group_apis import GroupApis
from .metadata_cache import ZERO_UUID, MetadataCache
from .producer_ids import ProducerIdManager
from .replica_manager import ReplicaManager
from .replica_manager_types import FetchResult, FetchSpec, release_results
from .replica_state_apis import ReplicaStateApis
from .security_apis import SecurityApis
from .topic_admin_apis import TopicAdminApis
from .topic_partitions_apis import TopicPartitionsApis
from .transaction_apis import TransactionApis
from .txn_markers import TxnMarkerApis

log = logging.getLogger(__name__)


def _code(e: BaseException | None) -> int:
    if e is None:
        return 0
    return e.code if isinstance(e, KafkaError) else UnknownServerError.code


UNKNOWN_OPERATIONS = -2147483648
#: Fetch errors found before a partition's log is read (Kafka answers them with no aborted
#: transactions rather than a null list).
_NOT_READ = (UnknownTopicOrPartition, TopicAuthorizationFailed, UnknownTopicId)


def _one_batch(records: Any) -> Any:
    """A produced partition's records as Kafka's ProduceRequest.validateRecords takes them
    (v3+): exactly one whole magic-2 batch, else INVALID_RECORD for that partition (none,
    several, or magic 0/1; CORRUPT_MESSAGE for a length no batch can have); bytes after
    the batch too few to make another whole one are left off (as Kafka's log trims them),
    the batch itself appended."""
    n = 0 if records is None else len(records)
    ends, pos = [], 0
    while (size := peek_batch_size(records, pos) if n else None) is not None and pos + size <= n:
        if size < 12 + 14:  # a length below the smallest record's (Kafka's RECORD_OVERHEAD_V0)
            return CorruptMessage(f"record batch size {size - 12} is less than the minimum record "
                                  "overhead (14)")
        pos += size
        ends.append(pos)
    if not ends:
        return InvalidRecord("Produce requests with version 3 and above must have at least one "
                             "record batch per partition")
    if records[16] != MAGIC:
        return InvalidRecord(f"Produce requests are only allowed to contain record batches with "
                             f"magic version {MAGIC}, not {records[16]}")
    if len(ends) > 1:
        return InvalidRecord("Produce requests with version 3 and above are only allowed to contain "
                             f"exactly one record batch per partition, not {len(ends)}")
    return records[:pos] if pos < n else records


class KafkaApis:
    def __init__(self, config: BrokerConfig, channel: RequestChannel, replica_manager: ReplicaManager,
                 metadata: MetadataCache, controller: ControllerClient, refresh_metadata: Callable[[], None],
                 producer_ids: ProducerIdManager, coordinator: GroupCoordinator,
                 authorizer: Authorizer | None = None,
                 transactions: TransactionCoordinator | None = None) -> None:
        self.config = config
        self.channel = channel
        self.replica_manager = replica_manager
        self.metadata = metadata
        self.controller = controller
        self.refresh_metadata = refresh_metadata
        self.producer_ids = producer_ids
        self.fetch_sessions = FetchSessionCache(config.fetch_session_cache_slots)
        self._handlers: dict[int, Callable[[Request], None]] = {
            ApiKey.PRODUCE: self.handle_produce,
            ApiKey.FETCH: self.handle_fetch,
            ApiKey.LIST_OFFSETS: self.handle_list_offsets,
            ApiKey.METADATA: self.handle_metadata,
            ApiKey.DELETE_RECORDS: self.handle_delete_records,
            ApiKey.INIT_PRODUCER_ID: self.handle_init_producer_id,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self.handle_offset_for_leader_epoch,
        }
        self.security = SecurityApis(self, authorizer)
        self._handlers.update(self.security.handlers)
        self.authorized = self.security.authorized
        self.authorized_operations = self.security.authorized_operations
        self.groups = GroupApis(self, coordinator)
        self._handlers.update(self.groups.handlers)
        self.consumer_groups = ConsumerGroupApis(self, coordinator.consumer)
        self._handlers.update(self.consumer_groups.handlers)
        self.configs = ConfigApis(self)
        self._handlers.update(self.configs.handlers)
        self.cluster = ClusterApis(self)
        self._handlers.update(self.cluster.handlers)
        self.topic_admin = TopicAdminApis(self)
        self._handlers.update(self.topic_admin.handlers)
        self.replica_states = ReplicaStateApis(self)
        self._handlers.update(self.replica_states.handlers)
        self.topic_partitions = TopicPartitionsApis(self)
        self._handlers.update(self.topic_partitions.handlers)
        self.txn_markers = TxnMarkerApis(self, coordinator)
        self._handlers.update(self.txn_markers.handlers)
        if transactions is not None:
            self.transactions = TransactionApis(self, transactions)
            self._handlers.update(self.transactions.handlers)

    # ---- plumbing ------------------------------------------------------------------
    def handle(self, request: Request) -> None:
        try:
            self._handlers[request.header.api_key](request)
        except Exception:
            log.exception("error handling %s v%d from %s; closing the connection",
                          api.APIS[request.header.api_key].name, request.header.api_version,
                          request.client_address)
            self.channel.send_response(Response(request, None, close_connection=True))

    def respond(self, request: Request, body: Any, close_after_send: bool = False) -> None:
        h = request.header
        payload = api.encode_response(h.api_key, h.api_version, h.correlation_id, body)
        self.channel.send_response(Response(request, payload, close_after_send=close_after_send))

    @staticmethod
    def listener_name(request: Request) -> str | None:
        return request.session.listener_name if request.session is not None else None

    def no_response(self, request: Request) -> None:
        self.channel.send_response(Response(request, None))

    # ---- APIs ----------------------------------------------------------------------
    def handle_metadata(self, request: Request) -> None:
        body = cast(MetadataRequestView, request.body)
        version = request.header.api_version
        image = self.metadata.image
        denied: set[str] = set()
        # One slot per topic answered: a name, or (v12+, null name) an id to look up.
        slots: list[str | UUID] = []
        if body.topics is None or (version == 0 and not body.topics):
            slots.extend(sorted(n for n in image.topics
                                if self.authorized(request, Op.DESCRIBE, RT.TOPIC, n)))
            auto_create = False
        else:
            for t in body.topics:
                slots.append(t.topic_id if t.name is None else t.name)
            denied = {n for n in slots if isinstance(n, str)
                      and not self.authorized(request, Op.DESCRIBE, RT.TOPIC, n)}
            auto_create = self.config.auto_create_topics_enable and body.allow_auto_topic_creation
        missing = [n for n in slots if isinstance(n, str) and n not in image.topics and n not in denied]
        if missing and auto_create:
            creatable = [n for n in missing if self.topic_admin.may_create(request, n)]
            denied.update(set(missing) - set(creatable))
            if creatable:
                self.topic_admin.auto_create(creatable)
                image = self.metadata.image
        alive = {b for b, info in image.brokers.items() if info.alive}

        def failed(code: int, name: str | None, topic_id: UUID = ZERO_UUID) -> Data:
            return Data(error_code=code, name=name, topic_id=topic_id, is_internal=False,
                        partitions=[], topic_authorized_operations=UNKNOWN_OPERATIONS)

        topics = []
        for slot in slots:
            if isinstance(slot, UUID):  # asked for by id
                if version < 12:  # only v12+ may leave the name out
                    topics.append(failed(InvalidRequest.code, ""))
                    continue
                found = self.metadata.topic_name(slot, image)
                if found is None:
                    topics.append(failed(UnknownTopicId.code, None, slot))
                    continue
                if not self.authorized(request, Op.DESCRIBE, RT.TOPIC, found):
                    # The id was the client's to begin with; the name is not told.
                    topics.append(failed(TopicAuthorizationFailed.code, None, slot))
                    continue
                name = found
            else:
                name = slot
                if name in denied:  # whether it exists or not: nothing is told
                    topics.append(failed(TopicAuthorizationFailed.code, name))
                    continue
            info = image.topics.get(name)
            if info is None:
                code = UnknownTopicOrPartition.code
                try:
                    validate_topic_name(name)
                except (ValueError, KafkaError):
                    code = InvalidTopic.code
                topics.append(failed(code, name))
                continue
            partitions = []
            for i, p in enumerate(info.partitions):
                partitions.append(Data(
                    error_code=0 if p.leader >= 0 else LeaderNotAvailable.code, partition_index=i,
                    leader_id=p.leader, leader_epoch=p.leader_epoch, replica_nodes=list(p.replicas),
                    isr_nodes=list(p.isr), offline_replicas=[r for r in p.replicas if r not in alive]))
            topics.append(Data(error_code=0, name=name, topic_id=self.metadata.topic_id(name, image),
                               is_internal=name in INTERNAL_TOPICS, partitions=partitions,
                               topic_authorized_operations=self.security.authorized_operations(
                                   request, RT.TOPIC, name)
                               if body.include_topic_authorized_operations else UNKNOWN_OPERATIONS))
        listener = self.listener_name(request)
        brokers = [Data(node_id=b, host=host, port=port, rack=None)
                   for b, info in sorted(image.brokers.items()) if info.alive
                   for host, port in [info.address(listener)]]
        controller_id = min(alive) if alive else -1  # any broker forwards admin requests
        self.respond(request, Data(throttle_time_ms=0, brokers=brokers, cluster_id=self.config.cluster_id,
                                   controller_id=controller_id, topics=topics,
                                   cluster_authorized_operations=self.security.authorized_operations(
                                       request, RT.CLUSTER)
                                   if body.include_cluster_authorized_operations else UNKNOWN_OPERATIONS))

    def handle_produce(self, request: Request) -> None:
        body = cast(ProduceRequestView, request.body)
        acks = body.acks
        if acks not in (0, 1, -1):
            self.respond(request, self._produce_response([
                ProduceStatus(t.name, pd.index, -1, error=InvalidRequiredAcks(f"acks={acks}"), done=True)
                for t in body.topic_data for pd in t.partition_data]))
            return
        txn_id = body.transactional_id
        if any(pd.records is not None and has_transactional_batch(pd.records)
               for t in body.topic_data for pd in t.partition_data) and (
                txn_id is None or not self.authorized(request, Op.WRITE, RT.TRANSACTIONAL_ID, txn_id)):
            # As Kafka: transactional records are written only under a transactional id
            # the principal may write; the whole request is refused.
            why = ("transactional records in a Produce request without a transactional_id"
                   if txn_id is None else f"Write on transactional id {txn_id!r} is not allowed")
            self.respond(request, self._produce_response([
                ProduceStatus(t.name, pd.index, -1, error=TransactionalIdAuthorizationFailed(why), done=True)
                for t in body.topic_data for pd in t.partition_data]))
            return
        entries = []
        early: list[ProduceStatus] = []
        for t in body.topic_data:
            if t.name in INTERNAL_TOPICS:
                early.extend(ProduceStatus(t.name, pd.index, -1, done=True, error=InvalidTopic(
                    f"{t.name} is an internal topic: only its coordinator writes to it"))
                    for pd in t.partition_data)
                continue
            if not self.authorized(request, Op.WRITE, RT.TOPIC, t.name):
                early.extend(ProduceStatus(t.name, pd.index, -1, done=True, error=TopicAuthorizationFailed(
                    f"Write on topic {t.name!r} is not allowed")) for pd in t.partition_data)
                continue
            info = self.metadata.image.topics.get(t.name)
            for pd in t.partition_data:
                if info is None or not 0 <= pd.index < len(info.partitions):
                    early.append(ProduceStatus(t.name, pd.index, -1, done=True, error=UnknownTopicOrPartition(
                        f"{t.name}-{pd.index} does not exist")))
                elif isinstance(records := _one_batch(pd.records), KafkaError):
                    early.append(ProduceStatus(t.name, pd.index, -1, done=True, error=records))
                else:
                    entries.append((t.name, pd.index, records))

        def respond(statuses: list[ProduceStatus]) -> None:
            if acks == 0:
                self.no_response(request)
            else:
                self.respond(request, self._produce_response(early + statuses))

        # The records are views into this request's own frame buffer: patched and written
        # in place (one pwrite of the validated request bytes per partition).
        self.replica_manager.append(acks, body.timeout_ms, entries, respond, in_place=True)

    @staticmethod
    def _produce_response(statuses: list[ProduceStatus]) -> Data:
        by_topic: dict[str, list[Data]] = {}
        for s in statuses:
            by_topic.setdefault(s.topic, []).append(Data(
                index=s.partition, error_code=_code(s.error),
                base_offset=s.base_offset if s.error is None else -1, log_append_time_ms=-1,
                log_start_offset=s.log_start_offset, record_errors=[],
                error_message=(s.error.message or None) if s.error is not None else None))
        return Data(responses=[Data(name=t, partition_responses=ps) for t, ps in by_topic.items()],
                    throttle_time_ms=0)

    def handle_fetch(self, request: Request) -> None:
        body = cast(FetchRequestView, request.body)
        specs, refused = [], []
        follower_ok = body.replica_id < 0 or self.authorized(request, Op.CLUSTER_ACTION, RT.CLUSTER)
        for t in body.topics:
            allowed = follower_ok and (body.replica_id >= 0
                                       or self.authorized(request, Op.READ, RT.TOPIC, t.topic))
            for p in t.partitions:
                spec = FetchSpec(t.topic, p.partition, p.fetch_offset, p.partition_max_bytes,
                                 p.current_leader_epoch, p.log_start_offset)
                if allowed:
                    specs.append(spec)
                else:
                    refused.append(FetchResult(spec, TopicAuthorizationFailed(f"Read on {t.topic!r}")))
        context = FetchContext(specs)
        if follower_ok and request.header.api_version >= 7:
            forgotten = [(t.topic, p) for t in body.forgotten_topics_data for p in t.partitions]
            context = self.fetch_sessions.context(body.replica_id, body.session_id,
                                                  body.session_epoch, specs, forgotten)
            if context.error is not None:
                self._respond_fetch(request, [], context)
                return
        zero_copy = (self.config.fetch_zero_copy and request.session is not None
                     and request.session.listener.ssl_context is None)
        self.replica_manager.fetch(body.replica_id, context.specs, body.max_bytes, body.min_bytes,
                                   body.max_wait_ms,
                                   lambda results: self._respond_fetch(request, refused + results, context),
                                   isolation=body.isolation_level, zero_copy=zero_copy)

    def _respond_fetch(self, request: Request, results: list[FetchResult],
                       context: FetchContext | None = None) -> None:
        """Answer a Fetch; zero-copy results become a response of parts whose record bytes
        the processor sends straight from the segment files (``os.sendfile``). An
        incremental fetch session's response leaves out what its follower already knows."""
        h = request.header
        try:
            if context is not None:
                results, skipped = context.filter(results)
                release_results(skipped)
            payload = api.encode_response_parts(h.api_key, h.api_version, h.correlation_id,
                                                self.fetch_response(results, context))
        except BaseException:
            release_results(results)
            raise
        self.channel.send_response(Response(request, payload))

    @staticmethod
    def fetch_response(results: list[FetchResult], context: FetchContext | None = None) -> Data:
        by_topic: dict[str, list[Data]] = {}
        for r in results:
            if r.error is None:
                offsets = (r.high_watermark, r.last_stable_offset, r.log_start_offset)
                aborted = None if r.aborted is None else [
                    Data(producer_id=pid, first_offset=first) for pid, first in r.aborted]
            else:  # as Kafka: no offsets beside an error; [] for a partition never read
                offsets = (-1, -1, -1)
                aborted = [] if isinstance(r.error, _NOT_READ) else None
            by_topic.setdefault(r.spec.topic, []).append(Data(
                partition_index=r.spec.partition, error_code=_code(r.error),
                high_watermark=offsets[0], last_stable_offset=offsets[1],
                log_start_offset=offsets[2], aborted_transactions=aborted,
                preferred_read_replica=-1, records=r.records))
        error = context.error if context is not None else None
        return Data(throttle_time_ms=0, error_code=_code(error),
                    session_id=context.session_id if context is not None and error is None else 0,
                    responses=[Data(topic=t, partitions=ps) for t, ps in by_topic.items()])

    def handle_list_offsets(self, request: Request) -> None:
        body = cast(ListOffsetsRequestView, request.body)
        is_follower = body.replica_id >= 0
        topics = []
        for t in body.topics:
            parts = []
            allowed = (self.authorized(request, Op.CLUSTER_ACTION, RT.CLUSTER) if is_follower
                       else self.authorized(request, Op.DESCRIBE, RT.TOPIC, t.name))
            for p in t.partitions:
                out = Data(partition_index=p.partition_index, error_code=0, old_style_offsets=[],
                           timestamp=-1, offset=-1, leader_epoch=-1)
                if not allowed:
                    out.error_code = TopicAuthorizationFailed.code
                    parts.append(out)
                    continue
                try:
                    if p.timestamp < EARLIEST_TIMESTAMP:  # -3 max timestamp: v7+, -4: v8+, ...
                        raise UnsupportedVersion(
                            f"ListOffsets timestamp {p.timestamp} is not served at "
                            f"v{request.header.api_version}")
                    part = self.replica_manager.partition(t.name, p.partition_index)
                    part.check_leader()
                    part.check_leader_epoch(p.current_leader_epoch)
                    if p.timestamp == LATEST_TIMESTAMP:
                        out.offset = part.log_end_offset if is_follower else (
                            part.log.last_stable_offset if body.isolation_level == 1
                            else part.high_watermark)
                    elif p.timestamp == EARLIEST_TIMESTAMP:
                        out.offset = part.log_start_offset
                    else:
                        found = part.log.offset_for_timestamp(
                            p.timestamp, max_offset=part.log.last_stable_offset
                            if body.isolation_level == 1 else part.high_watermark)
                        if found is not None:
                            out.offset, out.timestamp = found
                    if out.offset >= 0:  # no record at or after the timestamp: no epoch either
                        # As Kafka: the epoch of the leader that wrote the offset found (the
                        # current one for the latest offset, or when the log has none yet).
                        written = (part.log.epochs.epoch_for_offset(out.offset)
                                   if p.timestamp != LATEST_TIMESTAMP else -1)
                        out.leader_epoch = written if written >= 0 else part.leader_epoch
                except KafkaError as e:
                    out.error_code = e.code
                parts.append(out)
            topics.append(Data(name=t.name, partitions=parts))
        self.respond(request, Data(throttle_time_ms=0, topics=topics))

    def handle_delete_records(self, request: Request) -> None:
        """DeleteRecords: on each partition this broker leads, move the log start offset;
        answer once the ISR followed (or at ``timeout_ms``). Delete on the topic is needed
        (TOPIC_AUTHORIZATION_FAILED); a partition the image does not have is
        UNKNOWN_TOPIC_OR_PARTITION, one this broker does not lead NOT_LEADER_OR_FOLLOWER,
        an offset above the high watermark OFFSET_OUT_OF_RANGE."""
        body = request.body
        image = self.metadata.image
        early: list[DeleteRecordsStatus] = []
        entries: list[tuple[str, int, int]] = []
        for t in body.topics:
            allowed = self.authorized(request, Op.DELETE, RT.TOPIC, t.name)
            info = image.topics.get(t.name)
            for p in t.partitions:
                error: KafkaError | None = None
                if not allowed:
                    error = TopicAuthorizationFailed(f"Delete on topic {t.name!r} is not allowed")
                elif info is None or not 0 <= p.partition_index < len(info.partitions):
                    error = UnknownTopicOrPartition(f"{t.name}-{p.partition_index} does not exist")
                elif info.partitions[p.partition_index].leader != self.config.broker_id:
                    error = NotLeaderOrFollower(f"broker {self.config.broker_id} does not lead "
                                                f"{t.name}-{p.partition_index}")
                if error is None:
                    entries.append((t.name, p.partition_index, p.offset))
                else:
                    early.append(DeleteRecordsStatus(t.name, p.partition_index, -1, error=error, done=True))

        def respond(statuses: list[DeleteRecordsStatus]) -> None:
            by_topic: dict[str, list[Data]] = {}
            for s in early + statuses:
                by_topic.setdefault(s.topic, []).append(Data(
                    partition_index=s.partition, error_code=_code(s.error),
                    low_watermark=s.low_watermark if s.error is None else -1))
            self.respond(request, Data(throttle_time_ms=0, topics=[
                Data(name=n, partitions=ps) for n, ps in by_topic.items()]))

        self.replica_manager.delete_records(body.timeout_ms, entries, respond)

    def handle_init_producer_id(self, request: Request) -> None:
        """The idempotent producer's InitProducerId (no transactional id; with one it goes to
        :mod:`.transaction_apis` when the broker has a transaction coordinator).

        v0-2, or v3+ with producer id and epoch -1: a new producer id at epoch 0. v3+ with
        the producer's current id and epoch (KIP-360): the same id at the next epoch (a new
        id at epoch 0 when the epoch is at the int16 maximum). The fields in between (one
        of them -1, or negative) are INVALID_REQUEST.
        """
        body = request.body

        def respond(code: int, producer_id: int = -1, epoch: int = -1) -> None:
            self.respond(request, Data(throttle_time_ms=0, error_code=code,
                                       producer_id=producer_id, producer_epoch=epoch))

        if self.security.authorizer is not None and not self.security.may_write_some_topic(request):
            log.info("InitProducerId from %s refused (CLUSTER_AUTHORIZATION_FAILED): an idempotent "
                     "producer needs IdempotentWrite on the cluster or Write on some topic",
                     request.client_address)
            return respond(ClusterAuthorizationFailed.code)
        if body.transactional_id is not None:
            log.info("InitProducerId v%d from %s for transactional id %r refused "
                     "(INVALID_REQUEST): this broker runs no transaction coordinator",
                     request.header.api_version, request.client_address, body.transactional_id)
            return respond(InvalidRequest.code)
        pid, epoch = body.producer_id, body.producer_epoch  # -1, -1 before v3
        if pid == -1 and epoch == -1:
            return respond(0, self.producer_ids.next_id(), 0)
        if pid < 0 or epoch < 0:
            log.info("InitProducerId v%d from %s refused (INVALID_REQUEST): producer id %d with "
                     "epoch %d; both must be -1 (a new producer) or both set (bump the epoch)",
                     request.header.api_version, request.client_address, pid, epoch)
            return respond(InvalidRequest.code)
        new_pid, new_epoch = self.producer_ids.bump(pid, epoch)
        log.debug("InitProducerId from %s: producer %d epoch %d -> producer %d epoch %d",
                  request.client_address, pid, epoch, new_pid, new_epoch)
        return respond(0, new_pid, new_epoch)

    def handle_offset_for_leader_epoch(self, request: Request) -> None:
        topics = []
        follower = request.body.replica_id >= 0
        for t in request.body.topics:
            parts = []
            allowed = (self.authorized(request, Op.CLUSTER_ACTION, RT.CLUSTER) if follower
                       else self.authorized(request, Op.DESCRIBE, RT.TOPIC, t.topic))
            for p in t.partitions:
                out = Data(error_code=0, partition=p.partition, leader_epoch=-1, end_offset=-1)
                if not allowed:
                    out.error_code = TopicAuthorizationFailed.code
                    parts.append(out)
                    continue
                try:
                    part = self.replica_manager.partition(t.topic, p.partition)
                    part.check_leader()
                    part.check_leader_epoch(p.current_leader_epoch)
                    out.leader_epoch, out.end_offset = part.end_offset_for_epoch(p.leader_epoch)
                except KafkaError as e:
                    out.error_code = e.code
                parts.append(out)
            topics.append(Data(topic=t.topic, partitions=parts))
        self.respond(request, Data(throttle_time_ms=0, topics=topics))
