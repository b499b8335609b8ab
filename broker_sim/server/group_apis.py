"""The group APIs: FindCoordinator, the classic protocol (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup), DescribeGroups, ListGroups, DeleteGroups, OffsetCommit, OffsetFetch and
OffsetDelete.

:class:`GroupApis` decodes each request, checks what Kafka's authorizer checks (Read on the
group to take part in it or commit, Describe to look, Delete to delete; Read or Describe on
each topic named), and hands the rest to the broker's
:class:`~broker_sim.coordinator.group.GroupCoordinator`, answering when it calls back.

FindCoordinator creates ``__consumer_offsets`` on first use (as Kafka does: its
``offsets.topic.num.partitions`` partitions, replication factor
``offsets.topic.replication.factor`` capped at the live brokers), answering
COORDINATOR_NOT_AVAILABLE until the leader of the group's partition is known.

Threading: request-handler threads, several at once; no state beyond a lock that keeps
two handlers from creating the topic together.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..coordinator.group import GroupCoordinator
from ..coordinator.group.coordinator import JoinResult, SyncResult
from ..coordinator.group.group import CommittedOffset
from ..coordinator.placement import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, partition_for
from ..network.request_channel import Request
from ..protocol.api import ApiKey
from ..protocol.errors import (
    CoordinatorNotAvailable,
    GroupAuthorizationFailed,
    InvalidRequest,
    KafkaError,
    TopicAuthorizationFailed,
    TransactionalIdAuthorizationFailed,
    UnknownTopicOrPartition,
    UnstableOffsetCommit,
)
from ..protocol.schema import Data
from ..security.acl import Operation as Op
from ..security.acl import ResourceType as RT

if TYPE_CHECKING:
    from .api_context import ApiContext

log = logging.getLogger(__name__)

GROUP_KEY, TRANSACTION_KEY = 0, 1
UNKNOWN_OPERATIONS = -2147483648


class GroupApis:
    def __init__(self, apis: ApiContext, coordinator: GroupCoordinator) -> None:
        self.apis = apis
        self.coordinator = coordinator
        self.config = apis.config
        self.authorized = apis.authorized
        self.respond = apis.respond
        self._create_lock = threading.Lock()
        self.handlers: dict[int, Callable[[Request], None]] = {
            ApiKey.FIND_COORDINATOR: self.handle_find_coordinator,
            ApiKey.JOIN_GROUP: self.handle_join_group,
            ApiKey.SYNC_GROUP: self.handle_sync_group,
            ApiKey.HEARTBEAT: self.handle_heartbeat,
            ApiKey.LEAVE_GROUP: self.handle_leave_group,
            ApiKey.DESCRIBE_GROUPS: self.handle_describe_groups,
            ApiKey.LIST_GROUPS: self.handle_list_groups,
            ApiKey.DELETE_GROUPS: self.handle_delete_groups,
            ApiKey.OFFSET_COMMIT: self.handle_offset_commit,
            ApiKey.TXN_OFFSET_COMMIT: self.handle_offset_commit,
            ApiKey.OFFSET_FETCH: self.handle_offset_fetch,
            ApiKey.OFFSET_DELETE: self.handle_offset_delete,
        }

    # ---- FindCoordinator ----------------------------------------------------------------
    def handle_find_coordinator(self, request: Request) -> None:
        body, version = request.body, request.header.api_version
        if version >= 4:
            coordinators = [self._find(request, key, body.key_type) for key in body.coordinator_keys]
            self.respond(request, Data(throttle_time_ms=0, coordinators=coordinators))
            return
        found = self._find(request, body.key, body.key_type)
        self.respond(request, Data(throttle_time_ms=0, error_code=found.error_code,
                                   error_message=found.error_message, node_id=found.node_id,
                                   host=found.host, port=found.port))

    def _find(self, request: Request, key: str, key_type: int) -> Data:
        def error(e: KafkaError) -> Data:
            return Data(key=key, node_id=-1, host="", port=-1, error_code=e.code,
                        error_message=e.message or None)

        if key_type == TRANSACTION_KEY:
            if not self.authorized(request, Op.DESCRIBE, RT.TRANSACTIONAL_ID, key):
                return error(TransactionalIdAuthorizationFailed(f"Describe on {key!r} is not allowed"))
            internal, what = TRANSACTION_STATE_TOPIC, f"transactional id {key!r}"
        elif key_type == GROUP_KEY:
            if not self.authorized(request, Op.DESCRIBE, RT.GROUP, key):
                return error(GroupAuthorizationFailed(f"Describe on group {key!r} is not allowed"))
            internal, what = OFFSETS_TOPIC, f"group {key!r}"
        else:
            return error(InvalidRequest(f"unknown coordinator key type {key_type}"))
        image = self.apis.metadata.image
        topic = image.topics.get(internal)
        if topic is None:
            self._create_internal_topic(internal)
            image = self.apis.metadata.image
            topic = image.topics.get(internal)
            if topic is None:
                return error(CoordinatorNotAvailable(f"{internal} is being created"))
        leader = topic.partitions[partition_for(key, len(topic.partitions))].leader
        info = image.brokers.get(leader)
        if leader < 0 or info is None or not info.alive:
            return error(CoordinatorNotAvailable(f"the coordinator of {what} has no leader yet"))
        host, port = info.address(self.apis.listener_name(request))
        return Data(key=key, node_id=leader, host=host, port=port, error_code=0, error_message=None)

    def _create_internal_topic(self, name: str) -> None:
        """``__consumer_offsets`` or ``__transaction_state``, on first use, as Kafka: the
        configured partitions, the replication factor capped at the live brokers."""
        with self._create_lock:
            image = self.apis.metadata.image
            if name in image.topics:
                return
            alive = sum(1 for b in image.brokers.values() if b.alive)
            if name == OFFSETS_TOPIC:
                g = self.config.group
                partitions, rf = g.offsets_topic_num_partitions, g.offsets_topic_replication_factor
                configs = {"segment.bytes": g.offsets_topic_segment_bytes}
            else:
                t = self.config.transaction
                partitions, rf = t.state_log_num_partitions, t.state_log_replication_factor
                configs = {"segment.bytes": t.state_log_segment_bytes}
            rf = max(1, min(rf, alive))
            if name == TRANSACTION_STATE_TOPIC:
                configs["min.insync.replicas"] = min(self.config.transaction.state_log_min_isr, rf)
            body = Data(topics=[Data(
                name=name, num_partitions=partitions, replication_factor=rf, assignments=[],
                configs=[Data(name=k, value=str(v)) for k, v in configs.items()])],
                timeout_ms=30_000, validate_only=False)
            result = self.apis.controller.create_topics(body).topics[0]
            if result.error_code == 0:
                log.info("created %s (%d partitions, replication factor %d)", name, partitions, rf)
            self.apis.refresh_metadata()

    # ---- the classic protocol -----------------------------------------------------------
    def handle_join_group(self, request: Request) -> None:
        body, version = request.body, request.header.api_version

        def respond(r: JoinResult) -> None:
            self.respond(request, Data(
                throttle_time_ms=0, error_code=r.error, generation_id=r.generation_id,
                protocol_type=r.protocol_type, protocol_name=r.protocol_name, leader=r.leader_id,
                skip_assignment=r.skip_assignment, member_id=r.member_id,
                members=[Data(member_id=m, group_instance_id=i, metadata=md) for m, i, md in r.members]))

        if not self.authorized(request, Op.READ, RT.GROUP, body.group_id):
            respond(JoinResult(GroupAuthorizationFailed.code, body.member_id))
            return
        rebalance_timeout = body.rebalance_timeout_ms if version >= 1 else body.session_timeout_ms
        self.coordinator.join_group(
            body.group_id, body.member_id, body.group_instance_id, request.header.client_id or "",
            client_host(request), rebalance_timeout, body.session_timeout_ms, body.protocol_type,
            [(p.name, bytes(p.metadata)) for p in body.protocols], version >= 4, respond)

    def handle_sync_group(self, request: Request) -> None:
        body = request.body

        def respond(r: SyncResult) -> None:
            self.respond(request, Data(throttle_time_ms=0, error_code=r.error,
                                       protocol_type=r.protocol_type, protocol_name=r.protocol_name,
                                       assignment=r.assignment))

        if not self.authorized(request, Op.READ, RT.GROUP, body.group_id):
            respond(SyncResult(GroupAuthorizationFailed.code))
            return
        self.coordinator.sync_group(
            body.group_id, body.generation_id, body.member_id, body.group_instance_id,
            body.protocol_type, body.protocol_name,
            {a.member_id: bytes(a.assignment) for a in body.assignments}, respond)

    def handle_heartbeat(self, request: Request) -> None:
        body = request.body
        if not self.authorized(request, Op.READ, RT.GROUP, body.group_id):
            code = GroupAuthorizationFailed.code
        else:
            code = self.coordinator.heartbeat(body.group_id, body.member_id, body.group_instance_id,
                                              body.generation_id)
        self.respond(request, Data(throttle_time_ms=0, error_code=code))

    def handle_leave_group(self, request: Request) -> None:
        body, version = request.body, request.header.api_version
        leaving: list[tuple[str, str | None]] = (
            [(m.member_id, m.group_instance_id) for m in body.members] if version >= 3
            else [(body.member_id, None)])
        members: list[tuple[str, str | None, int]]
        if not self.authorized(request, Op.READ, RT.GROUP, body.group_id):
            code, members = GroupAuthorizationFailed.code, []
        else:
            code, members = self.coordinator.leave_group(body.group_id, leaving)
        if version < 3 and code == 0 and members:
            code = members[0][2]  # one member: its error is the answer's
        self.respond(request, Data(throttle_time_ms=0, error_code=code, members=[
            Data(member_id=m, group_instance_id=i, error_code=c) for m, i, c in members]))

    # ---- looking at groups --------------------------------------------------------------
    def handle_describe_groups(self, request: Request) -> None:
        groups = []
        for group_id in request.body.groups:
            if not self.authorized(request, Op.DESCRIBE, RT.GROUP, group_id):
                groups.append(Data(error_code=GroupAuthorizationFailed.code, group_id=group_id,
                                   group_state="", protocol_type="", protocol_data="", members=[],
                                   authorized_operations=UNKNOWN_OPERATIONS))
                continue
            s = self.coordinator.describe_group(group_id)
            groups.append(Data(
                error_code=s.error, group_id=group_id, group_state=s.state,
                protocol_type=s.protocol_type, protocol_data=s.protocol_name,
                authorized_operations=UNKNOWN_OPERATIONS, members=[
                    Data(member_id=m, group_instance_id=i, client_id=c, client_host=h,
                         member_metadata=md, member_assignment=a) for m, i, c, h, md, a in s.members]))
        self.respond(request, Data(throttle_time_ms=0, groups=groups))

    def handle_list_groups(self, request: Request) -> None:
        body = request.body
        types = {t.lower() for t in (body.types_filter or [])}
        code, listed = self.coordinator.list_groups(set(body.states_filter or []) or None)
        everything = self.authorized(request, Op.DESCRIBE, RT.CLUSTER)
        groups = [Data(group_id=g, protocol_type=t, group_state=s, group_type=k)
                  for g, t, s, k in listed
                  if (everything or self.authorized(request, Op.DESCRIBE, RT.GROUP, g))
                  and (not types or k in types)]
        self.respond(request, Data(throttle_time_ms=0, error_code=code, groups=groups))

    def handle_delete_groups(self, request: Request) -> None:
        names = list(request.body.groups_names)
        allowed = [g for g in names if self.authorized(request, Op.DELETE, RT.GROUP, g)]

        def respond(results: dict[str, int]) -> None:
            out = {**{g: GroupAuthorizationFailed.code for g in names if g not in allowed}, **results}
            self.respond(request, Data(throttle_time_ms=0, results=[
                Data(group_id=g, error_code=out[g]) for g in dict.fromkeys(names)]))

        self.coordinator.delete_groups(allowed, respond)

    # ---- offsets ------------------------------------------------------------------------
    def _known(self, topic: str, partition: int) -> bool:
        info = self.apis.metadata.image.topics.get(topic)
        return info is not None and 0 <= partition < len(info.partitions)

    def handle_offset_commit(self, request: Request) -> None:
        """OffsetCommit, and TxnOffsetCommit (the same commit inside the producer's
        transaction; Write on the transactional id is checked too)."""
        body = request.body
        transactional = request.header.api_key == ApiKey.TXN_OFFSET_COMMIT
        group_ok = self.authorized(request, Op.READ, RT.GROUP, body.group_id) and (
            not transactional or self.authorized(request, Op.WRITE, RT.TRANSACTIONAL_ID,
                                                 body.transactional_id))
        codes: dict[tuple[str, int], int] = {}
        offsets: dict[tuple[str, int], CommittedOffset] = {}
        now = self.apis.replica_manager.clock.wall_ms()
        order = []
        for t in body.topics:
            topic_ok = group_ok and self.authorized(request, Op.READ, RT.TOPIC, t.name)
            for p in t.partitions:
                tp = (t.name, p.partition_index)
                order.append(tp)
                if not group_ok:
                    codes[tp] = GroupAuthorizationFailed.code
                elif not topic_ok:
                    codes[tp] = TopicAuthorizationFailed.code
                elif not self._known(*tp):
                    codes[tp] = UnknownTopicOrPartition.code
                else:
                    offsets[tp] = CommittedOffset(p.committed_offset, p.committed_leader_epoch,
                                                  p.committed_metadata or "", now)

        def respond(results: dict[tuple[str, int], int]) -> None:
            codes.update(results)
            self.respond(request, Data(throttle_time_ms=0, topics=_by_topic(
                order, lambda tp: Data(partition_index=tp[1], error_code=codes[tp]))))

        if not offsets:
            respond({})
            return
        if transactional:
            self.coordinator.commit_offsets(body.group_id, body.member_id, body.group_instance_id,
                                            body.generation_id, offsets, respond,
                                            (body.producer_id, body.producer_epoch))
            return
        self.coordinator.commit_offsets(body.group_id, body.member_id, body.group_instance_id,
                                        body.generation_id_or_member_epoch, offsets, respond)

    def handle_offset_fetch(self, request: Request) -> None:
        """OffsetFetch; with ``require_stable`` (v7+) a partition whose offset was committed
        inside a transaction not yet decided answers UNSTABLE_OFFSET_COMMIT (retriable)."""
        body = request.body
        version = request.header.api_version
        stable = bool(getattr(body, "require_stable", False))
        if version < 8:
            code, topics = self._fetch_group_offsets(request, body.group_id, body.topics,
                                                     require_stable=stable)
            # Before v2 there is no top-level error: each partition carries it.
            if code and version < 2:
                for t in topics:
                    for p in t.partitions:
                        p.error_code = code
            self.respond(request, Data(throttle_time_ms=0, topics=topics, error_code=code))
            return
        # v8+: a batch of groups, each answered on its own (authorization, coordinator);
        # v9 carries each group's member (null and -1 unless a KIP-848 member asks).
        groups = []
        for g in body.groups:
            code, topics = self._fetch_group_offsets(request, g.group_id, g.topics,
                                                     (g.member_id, g.member_epoch), stable)
            groups.append(Data(group_id=g.group_id, topics=[] if code else topics, error_code=code))
        self.respond(request, Data(throttle_time_ms=0, groups=groups))

    def _fetch_group_offsets(self, request: Request, group_id: str, wanted_topics: Any,
                             member: tuple[str | None, int] = (None, -1),
                             require_stable: bool = False) -> tuple[int, list[Data]]:
        """(group error, topics) of one group's OffsetFetch answer; ``wanted_topics`` None
        asks for every committed offset (of the topics the principal may describe)."""
        if not self.authorized(request, Op.DESCRIBE, RT.GROUP, group_id):
            return GroupAuthorizationFailed.code, []
        wanted = None if wanted_topics is None else [
            (t.name, p) for t in wanted_topics for p in t.partition_indexes]
        code, committed = self.coordinator.fetch_offsets(group_id, wanted, *member)
        unstable = self.coordinator.unstable_partitions(group_id) if require_stable else set()
        order = sorted(committed) if wanted is None else wanted
        describable = {t: self.authorized(request, Op.DESCRIBE, RT.TOPIC, t) for t, _ in order}
        if wanted is None:  # "all": only what may be described is listed
            order = [tp for tp in order if describable[tp[0]]]

        def partition(tp: tuple[str, int]) -> Data:
            c = committed.get(tp)
            if not describable[tp[0]]:
                return Data(partition_index=tp[1], committed_offset=-1, committed_leader_epoch=-1,
                            metadata="", error_code=TopicAuthorizationFailed.code)
            if tp in unstable:
                return Data(partition_index=tp[1], committed_offset=-1, committed_leader_epoch=-1,
                            metadata="", error_code=UnstableOffsetCommit.code)
            return Data(partition_index=tp[1], committed_offset=c.offset if c else -1,
                        committed_leader_epoch=c.leader_epoch if c else -1,
                        metadata=c.metadata if c else "", error_code=0)

        return code, _by_topic(order, partition)

    def handle_offset_delete(self, request: Request) -> None:
        body = request.body
        order = [(t.name, p.partition_index) for t in body.topics for p in t.partitions]
        if not self.authorized(request, Op.DELETE, RT.GROUP, body.group_id):
            self.respond(request, Data(error_code=GroupAuthorizationFailed.code, throttle_time_ms=0,
                                       topics=[]))
            return
        refused = {tp: TopicAuthorizationFailed.code for tp in order
                   if not self.authorized(request, Op.READ, RT.TOPIC, tp[0])}
        unknown = {tp: UnknownTopicOrPartition.code for tp in order
                   if tp not in refused and not self._known(*tp)}

        def respond(code: int, results: dict[tuple[str, int], int]) -> None:
            out = {**refused, **unknown, **results}
            topics = [] if code else _by_topic(
                order, lambda tp: Data(partition_index=tp[1], error_code=out.get(tp, 0)))
            self.respond(request, Data(error_code=code, throttle_time_ms=0, topics=topics))

        self.coordinator.delete_offsets(body.group_id, [tp for tp in order
                                                        if tp not in refused and tp not in unknown],
                                        respond)


def client_host(request: Request) -> str:
    address = request.client_address
    return "/" + address.rsplit(":", 1)[0] if address else ""


def _by_topic(order: list[tuple[str, int]], partition: Callable[[tuple[str, int]], Any]) -> list[Data]:
    by_topic: dict[str, list[Data]] = {}
    for tp in order:
        by_topic.setdefault(tp[0], []).append(partition(tp))
    return [Data(name=t, partitions=ps) for t, ps in by_topic.items()]
