"""The controller's request handling: the same answers over the wire or in-process.

Each ``*_body`` method maps a decoded request body to a response body, so a broker that
embeds its controller (a single broker) calls them directly, while a broker of a cluster
sends the same requests over the network to the controller process, whose handler
threads call :meth:`ControllerApis.handle`.

What differs is waiting. A metadata poll (BrokerMetadataFetch) and the answer to a change
that must have reached every broker (CreateTopics, CreatePartitions, DeleteTopics, the
config, credential and ACL changes, elections: ``propagated_apis``) wait for the image to move or for
every live broker to acknowledge it. Over the wire they are parked in a purgatory
(:mod:`.propagation`), holding no handler thread; in process (:meth:`metadata_fetch_body`,
:meth:`propagated`) the calling thread waits on the controller. Either way a change is
answered once every live broker applied it, or after ``broker.session.timeout.ms`` (capped
by a CreateTopics/CreatePartitions/DeleteTopics ``timeout_ms``): a broker that does not
acknowledge within a session is about to be fenced, and fencing it completes the wait.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from ..log import LogConfig
from ..network.request_channel import Request, RequestChannel, Response
from ..protocol import api
from ..protocol.api import ApiKey
from ..protocol.errors import InvalidRequest, KafkaError
from ..protocol.schema import Data
from ..purgatory import DelayedOperationPurgatory
from ..security.acl import AclBinding, AclFilter
from .configs import (
    NON_LOG_TOPIC_CONFIGS,
    RESOURCE_TOPIC,
    TOPIC_CONFIGS,
    incremental,
    replace_all,
    validate_topic_configs,
)
from .controller import Controller
from .legacy_group_offsets import LegacyGroupOffsets
from .propagation import APPLIED, IMAGE, DelayedMetadataFetch, DelayedPropagation
from .quorum_status import QuorumStatus
from .scram_credentials import Deletion, Upsertion
from .voter_changes import VoterChanges

log = logging.getLogger(__name__)

#: What only the active controller answers (besides the forwarded changes).
_BROKERS_OF_THE_ACTIVE = (ApiKey.BROKER_METADATA_FETCH, ApiKey.BROKER_HEARTBEAT,
                          ApiKey.ALTER_PARTITION)

__all__ = ["NON_LOG_TOPIC_CONFIGS", "ControllerApis", "validate_topic_configs"]


MAX_METADATA_SIZE = 4096


class ControllerApis:
    """Also answers, for the group coordinators' one-time migration, ListGroups and
    OffsetFetch from the journal where older pyq versions kept committed offsets."""

    def __init__(self, controller: Controller, channel: RequestChannel | None = None) -> None:
        self.controller = controller
        self.channel = channel
        self.legacy_offsets = LegacyGroupOffsets(controller.data_dir / "group-offsets.jsonl")
        #: DescribeQuorum and a controller's DescribeCluster (see :mod:`.quorum_status`)
        self.quorum = QuorumStatus(controller)
        #: AddRaftVoter and RemoveRaftVoter (see :mod:`.voter_changes`)
        self.voter_changes = VoterChanges(controller.metadata.quorum)
        #: Over the wire only: parked metadata polls and answers awaiting propagation.
        self.purgatory: DelayedOperationPurgatory[Any] | None = None
        if channel is not None:
            self.purgatory = DelayedOperationPurgatory("ControllerMetadata")
            controller.add_listener(self._on_change)
        #: api key -> the body function of each change answered once propagated
        self.propagated_apis: dict[int, Callable[[Any], Data]] = {
            ApiKey.CREATE_TOPICS: self.create_topics_body,
            ApiKey.CREATE_PARTITIONS: self.create_partitions_body,
            ApiKey.DELETE_TOPICS: self.delete_topics_body,
            ApiKey.ALTER_CONFIGS: self.alter_configs_body,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self.incremental_alter_configs_body,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: self.alter_scram_body,
            ApiKey.CREATE_ACLS: self.create_acls_body,
            ApiKey.DELETE_ACLS: self.delete_acls_body,
            ApiKey.ELECT_LEADERS: self.elect_leaders_body,
        }

    def _on_change(self) -> None:
        """The controller's listener (runs under its lock; see :mod:`.propagation`)."""
        assert self.purgatory is not None
        self.purgatory.check_and_complete(IMAGE)
        self.purgatory.check_and_complete(APPLIED)

    def shutdown(self) -> None:
        if self.purgatory is not None:
            self.purgatory.shutdown()

    # ---- metadata propagation ----------------------------------------------------------
    def propagation_timeout_ms(self, body: Any) -> int:
        """How long a change's answer may wait for the brokers: a session, capped by the
        request's own ``timeout_ms`` where it has one (<= 0: do not wait)."""
        session = self.controller.session_timeout_ms
        timeout = body.get("timeout_ms")
        return session if timeout is None else max(0, min(int(timeout), session))

    def propagated(self, call: Callable[[Any], Data], body: Any) -> Data:
        """In process: ``call(body)``, returned once every live broker applied the change
        (or after :meth:`propagation_timeout_ms`)."""
        response = call(body)
        timeout_ms = self.propagation_timeout_ms(body)
        version = self.controller.version
        if timeout_ms > 0 and not self.controller.await_propagation(version, timeout_ms / 1000):
            log.warning("change answered before every live broker applied image v%d", version)
        return response

    def metadata_fetch_body(self, body: Any) -> Data:
        """In process: a broker's metadata poll, answered when the image moves past what it
        knows or after ``max_wait_ms``."""
        self.controller.metadata_fetch(body.broker_id, body.broker_epoch, body.known_metadata_version)
        self.quorum.observer_fetched(body.broker_id, body.known_metadata_version)
        version, image = self.controller.await_version(body.known_metadata_version,
                                                       max(0, body.max_wait_ms) / 1000)
        return Data(error_code=0, metadata_version=version, metadata=image)

    def _park_metadata_fetch(self, request: Request) -> None:
        assert self.purgatory is not None
        body = request.body
        self.controller.metadata_fetch(body.broker_id, body.broker_epoch, body.known_metadata_version)
        self.quorum.observer_fetched(body.broker_id, body.known_metadata_version)
        op = DelayedMetadataFetch(
            self.controller, body.known_metadata_version, max(0, body.max_wait_ms),
            lambda version, image: self._send(request, Data(error_code=0, metadata_version=version,
                                                            metadata=image)))
        self.purgatory.try_complete_else_watch(op, [IMAGE])

    def _answer_once_propagated(self, request: Request, response: Data) -> None:
        assert self.purgatory is not None
        timeout_ms = self.propagation_timeout_ms(request.body)
        if timeout_ms <= 0:
            self._send(request, response)
            return
        spec = api.spec_for(request.header.api_key, api.CONTROLLER_APIS)
        op = DelayedPropagation(self.controller, self.controller.version, timeout_ms,
                                lambda: self._send(request, response), spec.name)
        self.purgatory.try_complete_else_watch(op, [APPLIED])

    def _send(self, request: Request, body: Data) -> None:
        assert self.channel is not None
        h = request.header
        payload = api.encode_response(h.api_key, h.api_version, h.correlation_id, body)
        self.channel.send_response(Response(request, payload))

    def list_groups_body(self, body: Any) -> Data:
        """The groups of the legacy offset journal (see :mod:`.legacy_group_offsets`)."""
        return Data(throttle_time_ms=0, error_code=0, groups=[
            Data(group_id=g, protocol_type="", group_state="Empty", group_type="classic")
            for g in self.legacy_offsets.groups()])

    def offset_fetch_body(self, body: Any) -> Data:
        """A group's offsets in the legacy journal (every partition; ``topics`` is ignored)."""
        committed = self.legacy_offsets.fetch(body.group_id)
        by_topic: dict[str, list[Data]] = {}
        for (topic, part), c in sorted(committed.items()):
            by_topic.setdefault(topic, []).append(Data(
                partition_index=part, committed_offset=c.offset, committed_leader_epoch=c.leader_epoch,
                metadata=c.metadata, error_code=0))
        return Data(throttle_time_ms=0, error_code=0,
                    topics=[Data(name=t, partitions=ps) for t, ps in by_topic.items()])

    # ---- pure request -> response ------------------------------------------------------
    def heartbeat_body(self, body: Any) -> Data:
        endpoints = json.loads(body.endpoints) if body.get("endpoints") else None
        epoch = self.controller.heartbeat(body.broker_id, body.host, body.port, body.incarnation_id,
                                          endpoints, body.known_metadata_version)
        self.quorum.observer_fetched(body.broker_id, body.known_metadata_version)
        version, image = self.controller.snapshot(body.known_metadata_version)
        return Data(error_code=0, broker_epoch=epoch, metadata_version=version, metadata=image)

    def alter_partition_body(self, body: Any) -> Data:
        try:
            p = self.controller.alter_partition(body.broker_id, body.broker_epoch, body.topic,
                                                body.partition, body.leader_epoch,
                                                body.partition_epoch, list(body.new_isr))
        except KafkaError as e:
            return Data(error_code=e.code, leader_id=-1, leader_epoch=-1, partition_epoch=-1, isr=[])
        return Data(error_code=0, leader_id=p.leader, leader_epoch=p.leader_epoch,
                    partition_epoch=p.partition_epoch, isr=list(p.isr))

    def create_topics_body(self, body: Any) -> Data:
        results = []
        for t in body.topics:
            out = Data(name=t.name, error_code=0, error_message=None)
            try:
                configs = {c.name: c.value for c in t.configs}
                validate_topic_configs(configs)
                assignments = {a.partition_index: list(a.broker_ids) for a in t.assignments} or None
                self.controller.create_topic(t.name, t.num_partitions, t.replication_factor, configs,
                                             assignments, validate_only=body.validate_only)
            except KafkaError as e:
                out.error_code = e.code
                out.error_message = e.message or None
            results.append(out)
        return Data(throttle_time_ms=0, topics=results)

    def create_partitions_body(self, body: Any) -> Data:
        results = []
        for t in body.topics:
            out = Data(name=t.name, error_code=0, error_message=None)
            try:
                assignments = None if t.assignments is None else \
                    [list(a.broker_ids) for a in t.assignments]
                self.controller.create_partitions(t.name, t.count, assignments,
                                                  validate_only=body.validate_only)
            except KafkaError as e:
                out.error_code = e.code
                out.error_message = e.message or None
            results.append(out)
        return Data(throttle_time_ms=0, results=results)

    def elect_leaders_body(self, body: Any) -> Data:
        """ElectLeaders: each partition's outcome, grouped by topic in request order."""
        wanted = None if body.topic_partitions is None else [
            (t.topic, i) for t in body.topic_partitions for i in t.partitions]
        try:
            outcome = self.controller.elect_leaders(body.get("election_type", 0), wanted)
        except KafkaError as e:
            return Data(throttle_time_ms=0, error_code=e.code, replica_election_results=[])
        by_topic: dict[str, list[Data]] = {}
        for (topic, index), error in outcome.items():
            by_topic.setdefault(topic, []).append(Data(
                partition_id=index, error_code=0 if error is None else error.code,
                error_message=None if error is None else error.message or None))
        return Data(throttle_time_ms=0, error_code=0, replica_election_results=[
            Data(topic=t, partition_result=ps) for t, ps in by_topic.items()])

    def alter_configs_body(self, body: Any) -> Data:
        """AlterConfigs: each resource's overrides replaced by the given set."""
        return self._alter_configs(body, lambda r: replace_all((c.name, c.value) for c in r.configs))

    def incremental_alter_configs_body(self, body: Any) -> Data:
        """IncrementalAlterConfigs: SET / DELETE / APPEND / SUBTRACT on each resource's overrides."""
        def default(name: str) -> str | None:
            return LogConfig().to_properties().get(name) if name in TOPIC_CONFIGS else None
        return self._alter_configs(body, lambda r: incremental(
            ((c.name, c.config_operation, c.value) for c in r.configs), default))

    def _alter_configs(self, body: Any, change: Any) -> Data:
        """One answer per resource, in request order; a resource named twice in the request
        is refused (INVALID_REQUEST) both times, as Kafka does."""
        keys = [(r.resource_type, r.resource_name) for r in body.resources]
        results = []
        for r in body.resources:
            out = Data(error_code=0, error_message=None, resource_type=r.resource_type,
                       resource_name=r.resource_name)
            try:
                if keys.count((r.resource_type, r.resource_name)) > 1:
                    raise InvalidRequest(f"resource {r.resource_name!r} (type {r.resource_type}) "
                                         "appears more than once in the request")
                self.controller.alter_configs(r.resource_type, r.resource_name, change(r),
                                              validate_only=body.validate_only,
                                              propagation_timeout_s=0)
            except KafkaError as e:
                out.error_code = e.code
                out.error_message = e.message or None
                log.info("%s configs of %r refused: %s", "topic" if r.resource_type == RESOURCE_TOPIC
                         else f"resource type {r.resource_type}", r.resource_name, e)
            results.append(out)
        return Data(throttle_time_ms=0, responses=results)

    def delete_topics_body(self, body: Any) -> Data:
        results = []
        for name in body.topic_names:
            code = 0
            try:
                self.controller.delete_topic(name)
            except KafkaError as e:
                code = e.code
            results.append(Data(name=name, error_code=code))
        return Data(throttle_time_ms=0, responses=results)

    def alter_scram_body(self, body: Any) -> Data:
        results = self.controller.alter_scram(
            [Deletion(d.name, d.mechanism) for d in body.deletions],
            [Upsertion(u.name, u.mechanism, u.iterations, bytes(u.salt), bytes(u.salted_password))
             for u in body.upsertions], propagation_timeout_s=0)
        return Data(throttle_time_ms=0, results=[
            Data(user=user, error_code=e.code if e else 0, error_message=(e.message or None) if e else None)
            for user, e in results.items()])

    def create_acls_body(self, body: Any) -> Data:
        results, valid = [], []
        for c in body.creations:
            try:
                valid.append(AclBinding.create(c.resource_type, c.resource_name, c.resource_pattern_type,
                                               c.principal, c.host, c.operation, c.permission_type))
                results.append(Data(error_code=0, error_message=None))
            except KafkaError as e:
                results.append(Data(error_code=e.code, error_message=e.message or None))
        if valid:
            self.controller.create_acls(valid)
        return Data(throttle_time_ms=0, results=results)

    def delete_acls_body(self, body: Any) -> Data:
        filters: list[AclFilter] = []
        outcome: list[KafkaError | None] = []
        for f in body.filters:
            try:
                filters.append(AclFilter.create(f.resource_type_filter, f.resource_name_filter,
                                                f.pattern_type_filter, f.principal_filter,
                                                f.host_filter, f.operation, f.permission_type))
                outcome.append(None)
            except KafkaError as e:
                outcome.append(e)
        matched = iter(self.controller.delete_acls(filters))
        results = []
        for error in outcome:
            if error is not None:
                results.append(Data(error_code=error.code, error_message=error.message or None,
                                    matching_acls=[]))
                continue
            results.append(Data(error_code=0, error_message=None, matching_acls=[
                Data(error_code=0, error_message=None, resource_type=int(b.resource_type),
                     resource_name=b.name, pattern_type=int(b.pattern), principal=b.principal,
                     host=b.host, operation=int(b.operation), permission_type=int(b.permission))
                for b in next(matched)]))
        return Data(throttle_time_ms=0, filter_results=results)

    # ---- network ----------------------------------------------------------------------
    def handle(self, request: Request) -> None:
        assert self.channel is not None
        key = request.header.api_key
        try:
            if (key in _BROKERS_OF_THE_ACTIVE or key in self.propagated_apis) \
                    and not self.controller.is_active:
                # A standby: NOT_CONTROLLER, by closing the connection; the broker moves on to
                # the next controller (server/controller_failover.py).
                log.debug("controller: standby refuses api key %d", key)
                self.channel.send_response(Response(request, None, close_connection=True))
                return
            if key == ApiKey.BROKER_METADATA_FETCH:
                self._park_metadata_fetch(request)
                return
            if key in self.propagated_apis:
                self._answer_once_propagated(request, self.propagated_apis[key](request.body))
                return
            if key == ApiKey.BROKER_HEARTBEAT:
                body = self.heartbeat_body(request.body)
            elif key == ApiKey.ALTER_PARTITION:
                body = self.alter_partition_body(request.body)
            elif key == ApiKey.LIST_GROUPS:
                body = self.list_groups_body(request.body)
            elif key == ApiKey.OFFSET_FETCH:
                body = self.offset_fetch_body(request.body)
            elif key == ApiKey.DESCRIBE_QUORUM:
                body = self.quorum.describe_quorum_body(request.body)
            elif key == ApiKey.DESCRIBE_CLUSTER:
                body = self.quorum.describe_cluster_body(request.body)
            elif key == ApiKey.ADD_RAFT_VOTER:
                body = self.voter_changes.add_body(request.body)
            elif key == ApiKey.REMOVE_RAFT_VOTER:
                body = self.voter_changes.remove_body(request.body)
            else:  # ApiVersions
                body = Data(error_code=0, api_keys=api.supported_versions(api.CONTROLLER_APIS),
                            throttle_time_ms=0)
            self._send(request, body)
        except Exception:
            log.exception("controller: error handling api key %d; closing the connection", key)
            self.channel.send_response(Response(request, None, close_connection=True))
