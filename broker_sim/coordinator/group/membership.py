"""The classic rebalance protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and member
expiry (the membership half of Kafka's GroupMetadataManager for classic groups).

A member joins (JoinGroup), the coordinator waits for every known member to (re)join —
a :class:`~.delayed.DelayedJoin` in the rebalance purgatory — then starts a new generation
and answers every waiting join, handing the leader the members' subscriptions; the leader
computes the assignment and sends it with its SyncGroup; once the group's metadata with
that assignment is stored in ``__consumer_offsets``, every member's SyncGroup is answered
with its share and the group is Stable. Heartbeats keep members alive: each member has
one :class:`~.delayed.DelayedHeartbeat` on the timing wheel, re-armed by every heartbeat;
when one expires the member is removed and the group rebalances. Heartbeat answers tell
members of a rebalance (REBALANCE_IN_PROGRESS) so they rejoin.

Kafka's refinements are kept: member ids are handed out before the first real join
(KIP-394, MEMBER_ID_REQUIRED from JoinGroup v4); static members (``group.instance.id``,
KIP-345) restarted within their session timeout take their old place and assignment back
without a rebalance, and an old incarnation is fenced (FENCED_INSTANCE_ID); an empty
group's first rebalance waits ``group.initial.rebalance.delay.ms`` for more members.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from ...common import Clock
from ...protocol.errors import (
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    FencedInstanceId,
    GroupMaxSizeReached,
    IllegalGeneration,
    InconsistentGroupProtocol,
    InvalidSessionTimeout,
    KafkaError,
    MemberIdRequired,
    NotCoordinator,
    RebalanceInProgress,
    UnknownMemberId,
)
from ...purgatory import DelayedOperation, DelayedOperationPurgatory
from .config import GroupConfig
from .consumer_protocol import ConsumerProtocol
from .delayed import DelayedHeartbeat, DelayedJoin, InitialDelayedJoin
from .group import GroupMetadata, GroupState
from .member import MemberMetadata
from .store import GroupStore

log = logging.getLogger(__name__)

S = GroupState
Protocols = list[tuple[str, bytes]]


@dataclass
class JoinResult:
    error: int
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    #: (member id, group instance id, metadata) of every member: the leader's answer only.
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass
class SyncResult:
    error: int
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


class ClassicMembership:
    """Who is in a classic group, which generation it is in, and who is alive.

    Invariants: a group in PreparingRebalance has exactly one :class:`~.delayed.DelayedJoin`
    watched under its id in ``join_purgatory``; every member (and every pending member id,
    KIP-394) has exactly one :class:`~.delayed.DelayedHeartbeat` watched under
    ``(group id, member id)`` in ``heartbeat_purgatory``, completed and re-armed by
    :meth:`complete_and_schedule_heartbeat`; a member's parked JoinGroup or SyncGroup
    (``awaiting_join`` / ``awaiting_sync``) is answered exactly once — by the rebalance, by
    its removal, or with NOT_COORDINATOR when the group is unloaded. The assignment counts
    only once it is stored in ``__consumer_offsets``.

    Threading: request handlers call in concurrently; all work on a group happens under the
    group's lock (:class:`~.group.GroupMetadata`), which its delayed operations share.
    Callbacks answering parked requests run under that lock and only queue responses.
    """

    def __init__(self, config: GroupConfig, store: GroupStore, clock: Clock,
                 join_purgatory: DelayedOperationPurgatory[DelayedJoin],
                 heartbeat_purgatory: DelayedOperationPurgatory[DelayedOperation],
                 consumer: ConsumerProtocol) -> None:
        self.config = config
        self.store = store
        self.clock = clock
        self.join_purgatory = join_purgatory
        self.heartbeat_purgatory = heartbeat_purgatory
        #: the consumer protocol of the same groups: an empty one turns classic on a join.
        self.consumer = consumer

    def _now(self) -> int:
        return self.clock.wall_ms()

    # ---- JoinGroup ----------------------------------------------------------------------
    def join_group(self, group_id: str, member_id: str, instance_id: str | None, client_id: str,
                   client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                   protocol_type: str, protocols: Protocols, require_known_member_id: bool,
                   callback: Callable[[JoinResult], None]) -> None:
        error = self.store.request_error(group_id)
        if error is None and not (self.config.group_min_session_timeout_ms <= session_timeout_ms
                                  <= self.config.group_max_session_timeout_ms):
            error = InvalidSessionTimeout(
                f"session.timeout.ms={session_timeout_ms} is outside the broker's allowed range "
                f"[{self.config.group_min_session_timeout_ms}, "
                f"{self.config.group_max_session_timeout_ms}]")
        if error is not None:
            callback(JoinResult(error.code, member_id))
            return
        group = self.store.get(group_id)
        if group is None:
            if member_id:
                callback(JoinResult(UnknownMemberId.code, member_id))
                return
            group = self.store.get_or_create(group_id)
        with group.lock:
            group.first_commit_pending = False  # a member's group, whatever its commits do
            if group.consumer is not None and not group.consumer.members:
                self.consumer.drop(group)  # an empty consumer-protocol group turns classic
            if group.is_(S.DEAD):
                # Deleted or unloaded meanwhile: the member retries and finds the new group.
                callback(JoinResult(CoordinatorNotAvailable.code, member_id))
            elif group.has_consumer_members:
                callback(JoinResult(InconsistentGroupProtocol.code, member_id))
            elif not group.supports(protocol_type, protocols):
                callback(JoinResult(InconsistentGroupProtocol.code, member_id))
            elif not member_id:
                self._join_new(group, instance_id, client_id, client_host, rebalance_timeout_ms,
                               session_timeout_ms, protocol_type, protocols,
                               require_known_member_id, callback)
            else:
                self._join_known(group, member_id, instance_id, client_id, client_host,
                                 rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                 protocols, callback)
            if group.is_(S.PREPARING_REBALANCE):
                self.join_purgatory.check_and_complete(group.group_id)

    def _join_new(self, group: GroupMetadata, instance_id: str | None, client_id: str,
                  client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                  protocol_type: str, protocols: Protocols, require_known_member_id: bool,
                  callback: Callable[[JoinResult], None]) -> None:
        new_id = f"{client_id}-{uuid.uuid4()}"
        known = group.static_member_id(instance_id)
        if known is not None:
            assert instance_id is not None
            self._rejoin_static(group, instance_id, known, new_id, rebalance_timeout_ms,
                                session_timeout_ms, protocols, callback)
            return
        if len(group.members) + len(group.pending_members) >= self.config.group_max_size:
            callback(JoinResult(GroupMaxSizeReached.code, ""))
            return
        if instance_id is None and require_known_member_id:
            group.pending_members.add(new_id)
            self._schedule_heartbeat(group, new_id, session_timeout_ms, pending=True)
            callback(JoinResult(MemberIdRequired.code, new_id))
            return
        self._add_member_and_rebalance(group, new_id, instance_id, client_id, client_host,
                                       rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                       protocols, callback)

    def _join_known(self, group: GroupMetadata, member_id: str, instance_id: str | None,
                    client_id: str, client_host: str, rebalance_timeout_ms: int,
                    session_timeout_ms: int, protocol_type: str, protocols: Protocols,
                    callback: Callable[[JoinResult], None]) -> None:
        if member_id in group.pending_members:
            self._add_member_and_rebalance(group, member_id, instance_id, client_id, client_host,
                                           rebalance_timeout_ms, session_timeout_ms,
                                           protocol_type, protocols, callback)
            return
        if group.is_static_member_fenced(member_id, instance_id):
            callback(JoinResult(FencedInstanceId.code, member_id))
            return
        member = group.members.get(member_id)
        if member is None or group.state in (S.EMPTY, S.DEAD):
            callback(JoinResult(UnknownMemberId.code, member_id))
            return
        if group.is_(S.COMPLETING_REBALANCE) and member.matches(protocols):
            # The member lost our answer: give it the current generation again.
            callback(self._join_result(group, member))
        elif group.is_(S.STABLE) and member_id != group.leader_id and member.matches(protocols):
            callback(self._join_result(group, member))
        else:
            self._update_member_and_rebalance(group, member, rebalance_timeout_ms,
                                              session_timeout_ms, protocols, callback)

    def _rejoin_static(self, group: GroupMetadata, instance_id: str, old_id: str, new_id: str,
                       rebalance_timeout_ms: int, session_timeout_ms: int, protocols: Protocols,
                       callback: Callable[[JoinResult], None]) -> None:
        """KIP-345: a restarted static member takes its old member's place."""
        old = group.members[old_id]
        _refuse_parked(old, FencedInstanceId.code)
        self._cancel_heartbeat(group, old)
        old.is_leaving = False
        member = group.replace_static_member(instance_id, old_id, new_id)
        member.rebalance_timeout_ms, member.session_timeout_ms = rebalance_timeout_ms, session_timeout_ms
        member.protocols = protocols
        # Its subscription may differ in detail (a fresh consumer owns no partitions yet):
        # what matters is whether the group would still choose the same protocol.
        if group.is_(S.STABLE) and group.select_protocol() == group.protocol_name:
            generation = group.generation_id

            def stored(error: KafkaError | None) -> None:
                with group.lock:
                    if error is not None and group.generation_id == generation \
                            and group.members.get(new_id) is member:
                        group.replace_static_member(instance_id, new_id, old_id)
                        callback(JoinResult(error.code, ""))
                        return
                    result = self._join_result(group, member)
                    result.skip_assignment = member.member_id == group.leader_id
                    callback(result)
            self._schedule_heartbeat(group, new_id, session_timeout_ms)
            self.store.append(group.group_id, [self.store.group_record(group)], stored)
            return
        member.awaiting_join = callback
        self._schedule_heartbeat(group, new_id, session_timeout_ms)
        self._maybe_prepare_rebalance(group, f"static member {instance_id} rejoined")

    def _add_member_and_rebalance(self, group: GroupMetadata, member_id: str,
                                  instance_id: str | None, client_id: str, client_host: str,
                                  rebalance_timeout_ms: int, session_timeout_ms: int,
                                  protocol_type: str, protocols: Protocols,
                                  callback: Callable[[JoinResult], None]) -> None:
        member = MemberMetadata(member_id, instance_id, client_id, client_host,
                                rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols)
        member.is_new = True
        member.awaiting_join = callback
        group.add(member)
        if group.is_(S.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        self._schedule_heartbeat(group, member_id, session_timeout_ms)
        self._maybe_prepare_rebalance(group, f"member {member_id} joined")

    def _update_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata,
                                     rebalance_timeout_ms: int, session_timeout_ms: int,
                                     protocols: Protocols,
                                     callback: Callable[[JoinResult], None]) -> None:
        member.protocols = protocols
        member.rebalance_timeout_ms, member.session_timeout_ms = rebalance_timeout_ms, session_timeout_ms
        member.awaiting_join = callback
        self._maybe_prepare_rebalance(group, f"member {member.member_id} rejoined")

    def _join_result(self, group: GroupMetadata, member: MemberMetadata) -> JoinResult:
        protocol = group.protocol_name or ""
        members = []
        if member.member_id == group.leader_id:
            members = [(m.member_id, m.group_instance_id, m.metadata(protocol))
                       for m in group.members.values()]
        return JoinResult(0, member.member_id, group.generation_id, group.protocol_type,
                          group.protocol_name, group.leader_id or "", False, members)

    # ---- rebalancing --------------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY):
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_(S.COMPLETING_REBALANCE):
            group.reset_assignments()
            self._propagate_assignment(group, RebalanceInProgress.code)
        timeout = group.rebalance_timeout_ms()
        if group.is_(S.EMPTY):
            delay = self.config.group_initial_rebalance_delay_ms
            op: DelayedJoin = InitialDelayedJoin(self, group, delay, max(timeout - delay, 0))
        else:
            op = DelayedJoin(self, group, timeout)
        log.info("group %s: preparing to rebalance in generation %d (%s)", group.group_id,
                 group.generation_id, reason)
        group.transition_to(S.PREPARING_REBALANCE, self._now())
        self.watch_join(op)

    def watch_join(self, op: DelayedJoin) -> None:
        self.join_purgatory.try_complete_else_watch(op, [op.group.group_id])

    def can_complete_join(self, group: GroupMetadata) -> bool:
        with group.lock:
            return group.is_(S.DEAD) or group.all_members_joined()

    def complete_join(self, group: GroupMetadata) -> None:
        with group.lock:
            if not group.is_(S.PREPARING_REBALANCE):
                return
            for member in group.not_yet_rejoined():
                log.info("group %s: member %s did not rejoin in time; removing it",
                         group.group_id, member.member_id)
                self._cancel_heartbeat(group, member)
                group.remove(member.member_id)
            group.init_next_generation(self._now())
            if group.is_(S.EMPTY):
                log.info("group %s: generation %d has no members", group.group_id,
                         group.generation_id)
                self.store.append(group.group_id, [self.store.group_record(group)],
                                  lambda error: None)
                return
            log.info("group %s: generation %d with %d member(s), protocol %s", group.group_id,
                     group.generation_id, len(group.members), group.protocol_name)
            for member in list(group.members.values()):
                callback = member.awaiting_join
                member.awaiting_join = None
                if callback is not None:
                    callback(self._join_result(group, member))
                self.complete_and_schedule_heartbeat(group, member)

    # ---- SyncGroup ----------------------------------------------------------------------
    def sync_group(self, group_id: str, generation_id: int, member_id: str,
                   instance_id: str | None, protocol_type: str | None, protocol_name: str | None,
                   assignments: dict[str, bytes], callback: Callable[[SyncResult], None]) -> None:
        error = self.store.request_error(group_id)
        if error is not None:
            callback(SyncResult(error.code))
            return
        group = self.store.get(group_id)
        if group is None:
            callback(SyncResult(UnknownMemberId.code))
            return
        with group.lock:
            code = self._member_error(group, member_id, instance_id)
            if code == 0 and generation_id != group.generation_id:
                code = IllegalGeneration.code
            if code == 0 and ((protocol_type is not None and protocol_type != group.protocol_type)
                              or (protocol_name is not None and protocol_name != group.protocol_name)):
                code = InconsistentGroupProtocol.code
            if code == 0 and group.is_(S.PREPARING_REBALANCE):
                code = RebalanceInProgress.code
            if code:
                callback(SyncResult(code))
                return
            member = group.members[member_id]
            if group.is_(S.STABLE):
                self.complete_and_schedule_heartbeat(group, member)
                callback(self._sync_result(group, member, 0))
                return
            member.awaiting_sync = callback
            self.complete_and_schedule_heartbeat(group, member)
            if member_id == group.leader_id:
                self._store_assignment(group, assignments)

    def _store_assignment(self, group: GroupMetadata, assignments: dict[str, bytes]) -> None:
        full = {m: assignments.get(m, b"") for m in group.members}
        generation = group.generation_id

        def stored(error: KafkaError | None) -> None:
            with group.lock:
                if not group.is_(S.COMPLETING_REBALANCE) or group.generation_id != generation:
                    return
                if error is not None:
                    group.reset_assignments()
                    self._propagate_assignment(group, error.code)
                    self._prepare_rebalance(group, f"storing the assignment failed: {error}")
                    return
                for m, data in full.items():
                    if m in group.members:
                        group.members[m].assignment = data
                self._propagate_assignment(group, 0)
                group.transition_to(S.STABLE, self._now())
                log.info("group %s: stable in generation %d", group.group_id, group.generation_id)

        self.store.append(group.group_id, [self.store.group_record(group, full)], stored)

    def _sync_result(self, group: GroupMetadata, member: MemberMetadata, error: int) -> SyncResult:
        return SyncResult(error, member.assignment if error == 0 else b"", group.protocol_type,
                          group.protocol_name)

    def _propagate_assignment(self, group: GroupMetadata, error: int) -> None:
        for member in list(group.members.values()):
            callback = member.awaiting_sync
            if callback is not None:
                member.awaiting_sync = None
                callback(self._sync_result(group, member, error))
                self.complete_and_schedule_heartbeat(group, member)

    def _member_error(self, group: GroupMetadata, member_id: str, instance_id: str | None) -> int:
        if group.is_(S.DEAD):
            return CoordinatorNotAvailable.code
        if group.is_static_member_fenced(member_id, instance_id):
            return FencedInstanceId.code
        if not group.has(member_id) or group.is_(S.EMPTY):
            return UnknownMemberId.code
        return 0

    # ---- Heartbeat ----------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                  generation_id: int) -> int:
        error = self.store.request_error(group_id)
        if isinstance(error, CoordinatorLoadInProgress):
            return 0  # the member is fine; it will find out once the group is loaded
        if error is not None:
            return error.code
        group = self.store.get(group_id)
        if group is None:
            return UnknownMemberId.code
        with group.lock:
            code = self._member_error(group, member_id, instance_id)
            if code:
                return code
            member = group.members[member_id]
            if group.is_(S.PREPARING_REBALANCE):
                self.complete_and_schedule_heartbeat(group, member)
                return RebalanceInProgress.code
            if generation_id != group.generation_id:
                return IllegalGeneration.code
            self.complete_and_schedule_heartbeat(group, member)
            return 0

    def _member_key(self, group: GroupMetadata, member_id: str) -> tuple[str, str]:
        return group.group_id, member_id

    def complete_and_schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata) -> None:
        """The member is alive: complete its pending liveness check and arm the next one."""
        member.heartbeat_satisfied = True
        self.heartbeat_purgatory.check_and_complete(self._member_key(group, member.member_id))
        member.heartbeat_satisfied = False
        self._schedule_heartbeat(group, member.member_id, member.session_timeout_ms)

    def _schedule_heartbeat(self, group: GroupMetadata, member_id: str, timeout_ms: int,
                            pending: bool = False) -> None:
        op = DelayedHeartbeat(self, group, member_id, pending, timeout_ms)
        self.heartbeat_purgatory.try_complete_else_watch(op, [self._member_key(group, member_id)])

    def _cancel_heartbeat(self, group: GroupMetadata, member: MemberMetadata) -> None:
        member.is_leaving = True
        self.heartbeat_purgatory.check_and_complete(self._member_key(group, member.member_id))

    def heartbeat_satisfied(self, group: GroupMetadata, member_id: str, pending: bool) -> bool:
        with group.lock:
            if group.is_(S.DEAD):
                return True
            if pending:
                return member_id not in group.pending_members
            member = group.members.get(member_id)
            return member is None or member.has_satisfied_heartbeat

    def expire_member(self, group: GroupMetadata, member_id: str, pending: bool) -> None:
        with group.lock:
            if group.is_(S.DEAD):
                return
            if pending:
                if member_id in group.pending_members:
                    group.pending_members.discard(member_id)
                    if group.is_(S.PREPARING_REBALANCE):
                        self.join_purgatory.check_and_complete(group.group_id)
                return
            member = group.members.get(member_id)
            if member is not None and not member.has_satisfied_heartbeat:
                log.info("group %s: member %s missed its session timeout (%d ms); removing it",
                         group.group_id, member_id, member.session_timeout_ms)
                self._remove_member_and_update_group(group, member, "session timeout")

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata,
                                        reason: str) -> None:
        self._cancel_heartbeat(group, member)
        group.remove(member.member_id)
        _refuse_parked(member, UnknownMemberId.code)
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"member {member.member_id} left ({reason})")
        elif group.is_(S.PREPARING_REBALANCE):
            self.join_purgatory.check_and_complete(group.group_id)

    # ---- LeaveGroup ---------------------------------------------------------------------
    def leave_group(self, group_id: str, leaving: list[tuple[str, str | None]]
                    ) -> tuple[int, list[tuple[str, str | None, int]]]:
        """(error, [(member id, instance id, error)]) for the members that asked to leave."""
        error = self.store.request_error(group_id)
        if error is not None:
            return error.code, []
        group = self.store.get(group_id)
        if group is None:
            return 0, [(m, i, UnknownMemberId.code) for m, i in leaving]
        out = []
        with group.lock:
            if group.is_(S.DEAD):
                return CoordinatorNotAvailable.code, []
            for member_id, instance_id in leaving:
                out.append((member_id, instance_id, self._leave_one(group, member_id, instance_id)))
        return 0, out

    def _leave_one(self, group: GroupMetadata, member_id: str, instance_id: str | None) -> int:
        if instance_id is not None:
            known = group.static_member_id(instance_id)
            if known is None:
                return UnknownMemberId.code
            if member_id and member_id != known:
                return FencedInstanceId.code
            member_id = known
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self.heartbeat_purgatory.check_and_complete((group.group_id, member_id))
            if group.is_(S.PREPARING_REBALANCE):
                self.join_purgatory.check_and_complete(group.group_id)
            return 0
        member = group.members.get(member_id)
        if member is None:
            return UnknownMemberId.code
        log.info("group %s: member %s leaves", group.group_id, member_id)
        self._remove_member_and_update_group(group, member, "left the group")
        return 0


    # ---- loading and unloading ----------------------------------------------------------
    def on_loaded(self, group: GroupMetadata) -> None:
        """A newly loaded group's members get a full session from now."""
        with group.lock:
            for member in group.members.values():
                self.complete_and_schedule_heartbeat(group, member)

    def on_unloaded(self, group: GroupMetadata) -> None:
        """Another broker coordinates the group now: parked requests are told so (the
        caller, holding the group's lock, then marks the group Dead)."""
        for member in group.members.values():
            _refuse_parked(member, NotCoordinator.code)


def _refuse_parked(member: MemberMetadata, error_code: int) -> None:
    """Answer the JoinGroup and SyncGroup ``member`` has parked, if any, with ``error_code``
    (the JoinGroup's answer carries the member's id), and unpark them."""
    if member.awaiting_join is not None:
        member.awaiting_join(JoinResult(error_code, member.member_id))
        member.awaiting_join = None
    if member.awaiting_sync is not None:
        member.awaiting_sync(SyncResult(error_code))
        member.awaiting_sync = None
