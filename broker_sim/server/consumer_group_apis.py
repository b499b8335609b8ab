"""The consumer rebalance protocol's APIs (KIP-848): ConsumerGroupHeartbeat (68) and
ConsumerGroupDescribe (69).

:class:`ConsumerGroupApis` checks what Kafka's authorizer checks (Read on the group to
heartbeat, Describe on each subscribed topic, Describe on the group to describe it),
translates between the wire's topic ids and the coordinator's topic names (ids of topics
the broker does not know are dropped: a deleted topic's partitions are simply gone), and
answers with what :class:`~broker_sim.coordinator.group.consumer_protocol.ConsumerProtocol`
decided. Nothing parks: every heartbeat is answered at once.

Threading: request-handler threads, several at once; no state of its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..coordinator.group.consumer_group import Assignment
from ..coordinator.group.consumer_protocol import (
    ConsumerHeartbeat,
    ConsumerProtocol,
    HeartbeatAnswer,
)
from ..coordinator.placement import INTERNAL_TOPICS
from ..network.request_channel import Request
from ..protocol.api import ApiKey
from ..protocol.errors import GroupAuthorizationFailed, TopicAuthorizationFailed
from ..protocol.schema import Data
from ..security.acl import Operation as Op
from ..security.acl import ResourceType as RT
from .group_apis import client_host

if TYPE_CHECKING:
    from .api_context import ApiContext

UNKNOWN_OPERATIONS = -2147483648
ZERO_UUID = uuid.UUID(int=0)


class ConsumerGroupApis:
    def __init__(self, apis: ApiContext, protocol: ConsumerProtocol) -> None:
        self.apis = apis
        self.protocol = protocol
        self.authorized = apis.authorized
        self.respond = apis.respond
        protocol.partitions_of = self._partitions_of
        protocol.topic_names = self._topic_names
        protocol.topic_ids = lambda: apis.metadata.topic_ids()[1]
        self.handlers: dict[int, Callable[[Request], None]] = {
            ApiKey.CONSUMER_GROUP_HEARTBEAT: self.handle_heartbeat,
            ApiKey.CONSUMER_GROUP_DESCRIBE: self.handle_describe,
        }

    # ---- topics by id -------------------------------------------------------------------
    def _partitions_of(self, topic: str) -> int:
        info = self.apis.metadata.image.topics.get(topic)
        return 0 if info is None else len(info.partitions)

    def _topic_names(self) -> list[str]:
        return [name for name, info in self.apis.metadata.image.topics.items()
                if name not in INTERNAL_TOPICS]

    @staticmethod
    def _wire(assignment: Assignment, ids: dict[str, uuid.UUID], names: bool = False) -> list[Data]:
        out = []
        for topic in sorted(assignment):
            if topic not in ids:
                continue
            tp = Data(topic_id=ids[topic], partitions=sorted(assignment[topic]))
            if names:
                tp.topic_name = topic
            out.append(tp)
        return out

    # ---- ConsumerGroupHeartbeat ---------------------------------------------------------
    def handle_heartbeat(self, request: Request) -> None:
        body = request.body

        def fail(code: int, message: str) -> None:
            self.respond(request, Data(throttle_time_ms=0, error_code=code, error_message=message,
                                       member_id=None, member_epoch=-1, heartbeat_interval_ms=0,
                                       assignment=None))

        if not self.authorized(request, Op.READ, RT.GROUP, body.group_id):
            fail(GroupAuthorizationFailed.code, f"not authorized to read group {body.group_id}")
            return
        refused = [t for t in body.subscribed_topic_names or []
                   if not self.authorized(request, Op.DESCRIBE, RT.TOPIC, t)]
        if refused:
            fail(TopicAuthorizationFailed.code,
                 f"not authorized to describe topic(s) {', '.join(sorted(refused))}")
            return
        by_id, by_name = self.apis.metadata.topic_ids()
        owned = None if body.topic_partitions is None else {
            (by_id[tp.topic_id], p) for tp in body.topic_partitions if tp.topic_id in by_id
            for p in tp.partitions}
        def respond(answer: HeartbeatAnswer) -> None:
            self.respond(request, Data(
                throttle_time_ms=0, error_code=answer.error, error_message=answer.message,
                member_id=answer.member_id, member_epoch=answer.member_epoch,
                heartbeat_interval_ms=answer.heartbeat_interval_ms,
                assignment=None if answer.assignment is None else Data(
                    topic_partitions=self._wire(answer.assignment, by_name))))

        self.protocol.heartbeat(ConsumerHeartbeat(
            group_id=body.group_id, member_id=body.member_id, member_epoch=body.member_epoch,
            instance_id=body.instance_id, rack_id=body.rack_id,
            rebalance_timeout_ms=body.rebalance_timeout_ms,
            subscribed_topic_names=(None if body.subscribed_topic_names is None
                                    else list(body.subscribed_topic_names)),
            subscribed_topic_regex=body.subscribed_topic_regex,
            server_assignor=body.server_assignor, owned=owned,
            client_id=request.header.client_id or "", client_host=client_host(request)), respond)

    # ---- ConsumerGroupDescribe ----------------------------------------------------------
    def handle_describe(self, request: Request) -> None:
        _, by_name = self.apis.metadata.topic_ids()
        groups = []
        for group_id in request.body.group_ids:
            if not self.authorized(request, Op.DESCRIBE, RT.GROUP, group_id):
                groups.append(Data(error_code=GroupAuthorizationFailed.code,
                                   error_message=f"not authorized to describe group {group_id}",
                                   group_id=group_id, group_state="", group_epoch=-1,
                                   assignment_epoch=-1, assignor_name="", members=[],
                                   authorized_operations=UNKNOWN_OPERATIONS))
                continue
            s = self.protocol.describe(group_id)
            groups.append(Data(
                error_code=s.error, error_message=s.message, group_id=group_id,
                group_state=s.state, group_epoch=s.group_epoch,
                assignment_epoch=s.assignment_epoch, assignor_name=s.assignor_name,
                authorized_operations=UNKNOWN_OPERATIONS, members=[
                    Data(member_id=d.member.member_id, instance_id=d.member.instance_id,
                         rack_id=d.member.rack_id, member_epoch=d.member.member_epoch,
                         client_id=d.member.client_id, client_host=d.member.client_host,
                         subscribed_topic_names=list(d.member.subscribed_topics),
                         subscribed_topic_regex=d.member.subscribed_regex,
                         assignment=Data(topic_partitions=self._wire(
                             d.member.assigned, by_name, names=True)),
                         target_assignment=Data(topic_partitions=self._wire(
                             d.target, by_name, names=True)))
                    for d in s.members or []]))
        self.respond(request, Data(throttle_time_ms=0, groups=groups))
