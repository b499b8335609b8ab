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
from typing import Any, cast

from ..log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from ..log.log_manager import validate_topic_name
from ..network.processor import RAW_SASL_VERSION
from ..network.request_channel import Request, RequestChannel, Response
from ..protocol import api
from ..protocol.api import ApiKey
from ..protocol.errors import (
    DuplicateResource,
    IllegalSaslState,
    InvalidRequest,
    InvalidRequiredAcks,
    InvalidTopic,
    KafkaError,
    LeaderNotAvailable,
    ResourceNotFound,
    SaslAuthenticationFailed,
    UnknownServerError,
    UnknownTopicOrPartition,
    UnsupportedSaslMechanism,
)
from ..protocol.messages.fetch import FetchRequestView
from ..protocol.messages.list_offsets import ListOffsetsRequestView
from ..protocol.messages.metadata import MetadataRequestView
from ..protocol.messages.produce import ProduceRequestView
from ..protocol.schema import Data
from ..security import principal
from ..security.sasl_server import SaslServer
from ..security.scram import MECHANISMS, ScramCredential
from .config import BrokerConfig
from .controller_client import ControllerClient
from .delayed_produce import ProduceStatus
from .metadata_cache import MetadataCache
from .producer_ids import ProducerIdManager
from .replica_manager import FetchResult, FetchSpec, ReplicaManager

log = logging.getLogger(__name__)


def _code(e: BaseException | None) -> int:
    if e is None:
        return 0
    return e.code if isinstance(e, KafkaError) else UnknownServerError.code


UNKNOWN_OPERATIONS = -2147483648


class KafkaApis:
    def __init__(self, config: BrokerConfig, channel: RequestChannel, replica_manager: ReplicaManager,
                 metadata: MetadataCache, controller: ControllerClient, refresh_metadata: Callable[[], None],
                 producer_ids: ProducerIdManager) -> None:
        self.config = config
        self.channel = channel
        self.replica_manager = replica_manager
        self.metadata = metadata
        self.controller = controller
        self.refresh_metadata = refresh_metadata
        self.producer_ids = producer_ids
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
            ApiKey.CREATE_PARTITIONS: self.handle_create_partitions,
            ApiKey.SASL_HANDSHAKE: self.handle_sasl_handshake,
            ApiKey.SASL_AUTHENTICATE: self.handle_sasl_authenticate,
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: self.handle_describe_user_scram_credentials,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: self.handle_alter_user_scram_credentials,
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
    def handle_api_versions(self, request: Request) -> None:
        self.respond(request, Data(error_code=0, api_keys=api.supported_versions(), throttle_time_ms=0))

    def handle_metadata(self, request: Request) -> None:
        body = cast(MetadataRequestView, request.body)
        version = request.header.api_version
        image = self.metadata.image
        if body.topics is None or (version == 0 and not body.topics):
            names = sorted(image.topics)
            auto_create = False
        else:
            names = [t.name for t in body.topics]
            auto_create = self.config.auto_create_topics_enable and body.allow_auto_topic_creation
        missing = [n for n in names if n not in image.topics]
        if missing and auto_create:
            self._auto_create(missing)
            image = self.metadata.image
        alive = {b for b, info in image.brokers.items() if info.alive}
        topics = []
        for name in names:
            info = image.topics.get(name)
            if info is None:
                code = UnknownTopicOrPartition.code
                try:
                    validate_topic_name(name)
                except (ValueError, KafkaError):
                    code = InvalidTopic.code
                topics.append(Data(error_code=code, name=name, is_internal=False, partitions=[],
                                   topic_authorized_operations=UNKNOWN_OPERATIONS))
                continue
            partitions = []
            for i, p in enumerate(info.partitions):
                partitions.append(Data(
                    error_code=0 if p.leader >= 0 else LeaderNotAvailable.code, partition_index=i,
                    leader_id=p.leader, leader_epoch=p.leader_epoch, replica_nodes=list(p.replicas),
                    isr_nodes=list(p.isr), offline_replicas=[r for r in p.replicas if r not in alive]))
            topics.append(Data(error_code=0, name=name, is_internal=False, partitions=partitions,
                               topic_authorized_operations=UNKNOWN_OPERATIONS))
        listener = self.listener_name(request)
        brokers = [Data(node_id=b, host=host, port=port, rack=None)
                   for b, info in sorted(image.brokers.items()) if info.alive
                   for host, port in [info.address(listener)]]
        controller_id = min(alive) if alive else -1  # any broker forwards admin requests
        self.respond(request, Data(throttle_time_ms=0, brokers=brokers, cluster_id=self.config.cluster_id,
                                   controller_id=controller_id, topics=topics,
                                   cluster_authorized_operations=UNKNOWN_OPERATIONS))

    def _auto_create(self, names: list[str]) -> None:
        body = Data(topics=[Data(name=n, num_partitions=self.config.num_partitions,
                                 replication_factor=-1, assignments=[], configs=[]) for n in names],
                    timeout_ms=30_000, validate_only=False)
        for r in self.controller.create_topics(body).topics:
            if r.error_code == 0:
                log.info("auto-created topic %s", r.name)
        self.refresh_metadata()

    def handle_produce(self, request: Request) -> None:
        body = cast(ProduceRequestView, request.body)
        acks = body.acks
        if acks not in (0, 1, -1):
            self.respond(request, self._produce_response([
                ProduceStatus(t.name, pd.index, -1, error=InvalidRequiredAcks(f"acks={acks}"), done=True)
                for t in body.topic_data for pd in t.partition_data]))
            return
        entries = []
        early: list[ProduceStatus] = []
        for t in body.topic_data:
            for pd in t.partition_data:
                if pd.records is None or len(pd.records) == 0:
                    early.append(ProduceStatus(t.name, pd.index, -1, done=True,
                                               error=InvalidRequest("produce request carries no records")))
                else:
                    entries.append((t.name, pd.index, pd.records))

        def respond(statuses: list[ProduceStatus]) -> None:
            if acks == 0:
                self.no_response(request)
            else:
                self.respond(request, self._produce_response(early + statuses))

        self.replica_manager.append(acks, body.timeout_ms, entries, respond)

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
        specs = [FetchSpec(t.topic, p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch)
                 for t in body.topics for p in t.partitions]
        self.replica_manager.fetch(body.replica_id, specs, body.max_bytes, body.min_bytes, body.max_wait_ms,
                                   lambda results: self.respond(request, self.fetch_response(results)))

    @staticmethod
    def fetch_response(results: list[FetchResult]) -> Data:
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
        body = cast(ListOffsetsRequestView, request.body)
        is_follower = body.replica_id >= 0
        topics = []
        for t in body.topics:
            parts = []
            for p in t.partitions:
                out = Data(partition_index=p.partition_index, error_code=0, old_style_offsets=[],
                           timestamp=-1, offset=-1, leader_epoch=-1)
                try:
                    part = self.replica_manager.partition(t.name, p.partition_index)
                    part.check_leader()
                    part.check_leader_epoch(p.current_leader_epoch)
                    out.leader_epoch = part.leader_epoch
                    if p.timestamp == LATEST_TIMESTAMP:
                        out.offset = part.log_end_offset if is_follower else part.high_watermark
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
        # Group offsets live with the controller, so they outlive any one broker.
        self.respond(request, self.controller.offset_commit(request.body))

    def handle_offset_fetch(self, request: Request) -> None:
        self.respond(request, self.controller.offset_fetch(request.body))

    def handle_find_coordinator(self, request: Request) -> None:
        # Any broker can coordinate any group: commits are forwarded to the controller,
        # which stores them. Clients are pointed at the lowest live broker id.
        image = self.metadata.image
        alive = sorted(b for b, info in image.brokers.items() if info.alive)
        node = alive[0] if alive else self.config.broker_id
        info = image.brokers.get(node)
        host, port = info.address(self.listener_name(request)) if info else (self.config.advertised, 0)
        self.respond(request, Data(throttle_time_ms=0, error_code=0, error_message=None,
                                   node_id=node, host=host, port=port))

    def handle_create_topics(self, request: Request) -> None:
        body = request.body
        for t in body.topics:
            if t.num_partitions == -1 and not t.assignments:
                t.num_partitions = self.config.num_partitions
            if t.replication_factor == -1 and not t.assignments and self.config.default_replication_factor > 0:
                t.replication_factor = self.config.default_replication_factor
        response = self.controller.create_topics(body)
        self.refresh_metadata()
        self.respond(request, response)

    def handle_delete_topics(self, request: Request) -> None:
        response = self.controller.delete_topics(request.body)
        self.refresh_metadata()
        self.respond(request, response)

    def handle_create_partitions(self, request: Request) -> None:
        response = self.controller.create_partitions(request.body)
        self.refresh_metadata()
        self.respond(request, response)

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
                    part.check_leader()
                    part.check_leader_epoch(p.current_leader_epoch)
                    out.leader_epoch, out.end_offset = part.end_offset_for_epoch(p.leader_epoch)
                except KafkaError as e:
                    out.error_code = e.code
                parts.append(out)
            topics.append(Data(topic=t.topic, partitions=parts))
        self.respond(request, Data(throttle_time_ms=0, topics=topics))

    # ---- security -------------------------------------------------------------------
    def credentials(self, user: str) -> dict[str, ScramCredential]:
        """The user's SCRAM credentials from this broker's copy of the cluster image."""
        return {m: ScramCredential.from_json(c) for m, c in self.metadata.image.scram.get(user, {}).items()}

    def handle_sasl_handshake(self, request: Request) -> None:
        session = request.session
        mechanisms = list(self.config.sasl_enabled_mechanisms)
        if session is None or not session.listener.uses_sasl or session.authenticated \
                or session.sasl is not None:
            self.respond(request, Data(error_code=IllegalSaslState.code, mechanisms=mechanisms))
            return
        mechanism = request.body.mechanism
        if mechanism not in mechanisms:
            log.info("connection from %s on %s: SASL mechanism %r is not enabled (enabled: %s)",
                     request.client_address, session.listener_name, mechanism, mechanisms)
            self.respond(request, Data(error_code=UnsupportedSaslMechanism.code, mechanisms=mechanisms),
                         close_after_send=True)
            return
        session.sasl = SaslServer(mechanism, self.credentials)
        session.sasl_raw_tokens = request.header.api_version == 0
        self.respond(request, Data(error_code=0, mechanisms=mechanisms))

    def handle_sasl_authenticate(self, request: Request) -> None:
        session = request.session
        raw = request.header.api_version == RAW_SASL_VERSION
        if session is None or session.sasl is None or session.authenticated:
            self.respond(request, Data(error_code=IllegalSaslState.code, auth_bytes=b"",
                                       error_message="SaslAuthenticate before a SaslHandshake",
                                       session_lifetime_ms=0), close_after_send=True)
            return
        sasl = session.sasl
        try:
            token = sasl.evaluate(request.body.auth_bytes)
        except SaslAuthenticationFailed as e:
            log.info("connection from %s on %s: SASL %s authentication failed: %s",
                     request.client_address, session.listener_name, sasl.mechanism, e.message)
            if raw:  # a bare-token exchange has no way to carry an error: close
                self.channel.send_response(Response(request, None, close_connection=True))
            else:
                self.respond(request, Data(error_code=SaslAuthenticationFailed.code, auth_bytes=b"",
                                           error_message=e.message, session_lifetime_ms=0),
                             close_after_send=True)
            return
        if sasl.complete:
            assert sasl.username is not None
            session.principal = principal.user(sasl.username)
            session.authenticated = True
            session.sasl = None
            session.sasl_raw_tokens = False
            log.debug("connection from %s authenticated as %s (%s)", request.client_address,
                      session.principal, sasl.mechanism)
        if raw:
            self.channel.send_response(Response(request, len(token).to_bytes(4, "big") + token))
        else:
            self.respond(request, Data(error_code=0, error_message=None, auth_bytes=token,
                                       session_lifetime_ms=0))

    def handle_describe_user_scram_credentials(self, request: Request) -> None:
        store = self.metadata.image.scram
        names = sorted(store) if request.body.users is None else [u.name for u in request.body.users]
        results = []
        for name in dict.fromkeys(names):
            out = Data(user=name, error_code=0, error_message=None, credential_infos=[])
            if names.count(name) > 1:
                out.error_code, out.error_message = DuplicateResource.code, f"{name} is asked for twice"
            elif name not in store:
                out.error_code = ResourceNotFound.code
                out.error_message = f"attempt to describe a user credential that does not exist: {name}"
            else:
                out.credential_infos = [Data(mechanism=MECHANISMS[m][1], iterations=c["iterations"])
                                        for m, c in sorted(store[name].items())]
            results.append(out)
        self.respond(request, Data(throttle_time_ms=0, error_code=0, error_message=None, results=results))

    def handle_alter_user_scram_credentials(self, request: Request) -> None:
        response = self.controller.alter_scram(request.body)
        self.refresh_metadata()
        self.respond(request, response)
