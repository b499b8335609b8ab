"""The consumer rebalance protocol (KIP-848) in the group coordinator.

A member sends one request, ConsumerGroupHeartbeat, every heartbeat interval; each one is
answered at once — nothing parks — with the member's epoch and, when it changed, the
partitions it may now consume. On each heartbeat, under the group's lock:

1. the member is found, created (epoch 0), or refused: an epoch the coordinator never
   gave (FENCED_MEMBER_EPOCH; the previous epoch is still accepted if the member owns no
   more than its assignment, since the answer that moved it on may have been lost), an
   unknown id (UNKNOWN_MEMBER_ID), a static instance id still held by a live member
   (UNRELEASED_INSTANCE_ID) or by another member id (FENCED_INSTANCE_ID);
2. its subscription is updated; if what the group must assign changed (a member joined,
   left or changed topics; a subscribed topic grew), the group epoch moves;
3. if the group epoch is ahead of the assignment epoch, the group's server-side assignor
   computes a new target assignment for every member;
4. the member is reconciled towards its target (:mod:`.reconciliation`);
5. its session timeout is re-armed: one :class:`~.delayed.ConsumerSessionTimeout` per
   member on the timing wheel, as the classic protocol's DelayedHeartbeat. A member that
   keeps partitions it must give up longer than its rebalance timeout is fenced by a
   :class:`~.delayed.ConsumerRevocationTimeout`.

What a heartbeat changed — the group's epochs, the member's metadata and current
assignment, every member's target when it was recomputed — is written to
``__consumer_offsets`` (:mod:`.consumer_records`, Kafka's layout; acks=all) before the
heartbeat is answered, and a new coordinator restores the group from it: members keep
their epochs and partitions when the coordinator moves.

Leaving (epoch -1) or expiring removes the member and moves the group epoch; the others
learn their new targets at their next heartbeat. A static member's temporary leave
(epoch -2) keeps its place and partitions for the session timeout, so a restart within it
gets the same partitions back without moving the group epoch.

A group uses one protocol at a time: a heartbeat for a classic group with members is
answered GROUP_ID_NOT_FOUND and a JoinGroup for a consumer group with members
INCONSISTENT_GROUP_PROTOCOL; an empty group (offsets only) takes whichever comes first.
Offsets are shared with the classic protocol.

Threading: as the rest of the coordinator, everything happens under the group's lock.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from ...protocol.errors import (
    CoordinatorNotAvailable,
    FencedInstanceId,
    FencedMemberEpoch,
    GroupIdNotFound,
    GroupMaxSizeReached,
    InvalidRegularExpression,
    InvalidRequest,
    KafkaError,
    NotCoordinator,
    UnknownMemberId,
    UnreleasedInstanceId,
    UnsupportedAssignor,
)
from ...purgatory import DelayedOperation, DelayedOperationPurgatory
from . import consumer_records
from .config import GroupConfig
from .consumer_group import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)
from .delayed import ConsumerRevocationTimeout, ConsumerSessionTimeout
from .group import GroupMetadata, GroupState
from .reconciliation import reconcile
from .records import Record
from .server_assignors import ASSIGNORS
from .store import GroupStore

log = logging.getLogger(__name__)


@dataclass
class ConsumerHeartbeat:
    """One ConsumerGroupHeartbeat, topics already resolved from ids to names. None (or -1)
    means "unchanged since the last heartbeat", as on the wire."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: set[tuple[str, int]] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass
class HeartbeatAnswer:
    error: int = 0
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: None when the member's assignment did not change (and it did not ask in full).
    assignment: Assignment | None = None


@dataclass
class DescribedMember:
    member: ConsumerMember
    target: Assignment


@dataclass
class ConsumerGroupSummary:
    error: int
    group_id: str
    state: str = "Dead"
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: list[DescribedMember] | None = None
    message: str | None = None


def _invalid(hb: ConsumerHeartbeat, assignors: tuple[str, ...]) -> KafkaError | None:
    if not hb.group_id:
        return InvalidRequest("GroupId can't be empty.")
    if hb.instance_id == "":
        return InvalidRequest("InstanceId can't be empty.")
    if hb.rack_id == "":
        return InvalidRequest("RackId can't be empty.")
    if hb.subscribed_topic_regex:
        try:
            re.compile(hb.subscribed_topic_regex)
        except re.error as e:
            return InvalidRegularExpression(
                f"SubscribedTopicRegex {hb.subscribed_topic_regex!r} is not valid: {e}")
    epoch = hb.member_epoch
    if epoch > 0 or epoch == LEAVE_EPOCH:
        if not hb.member_id:
            return InvalidRequest("MemberId can't be empty.")
    elif epoch == JOIN_EPOCH:
        if hb.rebalance_timeout_ms == -1:
            return InvalidRequest("RebalanceTimeoutMs must be provided in first request.")
        if hb.owned is None or hb.owned:
            return InvalidRequest("TopicPartitions must be empty when (re-)joining.")
        if not hb.subscribed_topic_names and not hb.subscribed_topic_regex:
            return InvalidRequest("SubscribedTopicNames or SubscribedTopicRegex must be set "
                                  "in first request.")
    elif epoch == STATIC_LEAVE_EPOCH:
        if not hb.member_id:
            return InvalidRequest("MemberId can't be empty.")
        if hb.instance_id is None:
            return InvalidRequest("InstanceId can't be null.")
    else:
        return InvalidRequest(f"MemberEpoch {epoch} is invalid.")
    if hb.server_assignor is not None and hb.server_assignor not in assignors:
        return UnsupportedAssignor(f"ServerAssignor {hb.server_assignor} is not supported. "
                                   f"Supported assignors: {', '.join(assignors)}.")
    return None


def _answer(error: KafkaError) -> HeartbeatAnswer:
    return HeartbeatAnswer(error=error.code, message=str(error) or None)


class ConsumerProtocol:
    def __init__(self, config: GroupConfig, store: GroupStore,
                 purgatory: DelayedOperationPurgatory[DelayedOperation]) -> None:
        self.config = config
        self.store = store
        #: the coordinator's heartbeat purgatory: members' session and revocation timers.
        self.purgatory = purgatory
        #: topic name -> partition count (0 if there is no such topic); set by the broker.
        self.partitions_of: Callable[[str], int] = lambda topic: 0
        #: every topic a regex subscription may match (internal topics excluded).
        self.topic_names: Callable[[], Iterable[str]] = lambda: ()
        #: topic name -> topic id, for the records (a topic without an id is not written).
        self.topic_ids: Callable[[], Mapping[str, uuid.UUID]] = lambda: {}

    # ---- the heartbeat ------------------------------------------------------------------
    def heartbeat(self, hb: ConsumerHeartbeat, callback: Callable[[HeartbeatAnswer], None]) -> None:
        """Answer ``hb`` through ``callback`` once what it changed is in the log."""
        error = _invalid(hb, self.config.group_consumer_assignors) \
            or self.store.ownership_error(hb.group_id)
        if error is not None:
            callback(_answer(error))
            return
        store = self.store
        group = store.get(hb.group_id)
        if group is None:
            if hb.member_epoch != JOIN_EPOCH:
                callback(_answer(UnknownMemberId(
                    f"member {hb.member_id} is not in group {hb.group_id}")))
                return
            group = store.get_or_create(hb.group_id)
        with group.lock:
            group.first_commit_pending = False  # a member's group, whatever its commits do
            try:
                answer, recs = self._heartbeat(group, hb)
            except KafkaError as e:
                callback(_answer(e))
                return
        if not recs:
            callback(answer)
            return

        def stored(error: KafkaError | None) -> None:
            callback(answer if error is None else _answer(error))

        store.append(hb.group_id, recs, stored)

    def _write(self, group: GroupMetadata, recs: list[Record], what: str) -> None:
        """Write records no request waits for (a member expired or was fenced)."""
        def stored(error: KafkaError | None) -> None:
            if error is not None:
                log.warning("group %s: writing %s failed: %s", group.group_id, what, error)
        if recs:
            self.store.append(group.group_id, recs, stored)

    def _heartbeat(self, group: GroupMetadata, hb: ConsumerHeartbeat
                   ) -> tuple[HeartbeatAnswer, list[Record]]:
        if group.is_(GroupState.DEAD):
            raise NotCoordinator(f"group {hb.group_id} has moved to another coordinator")
        cg = group.consumer
        if cg is None:
            if group.members or not group.is_(GroupState.EMPTY):
                raise GroupIdNotFound(f"group {hb.group_id} is a classic group with members; "
                                      "a group uses one rebalance protocol at a time")
            if hb.member_epoch != JOIN_EPOCH:
                raise UnknownMemberId(f"member {hb.member_id} is not in group {hb.group_id}")
            cg = group.consumer = ConsumerGroup(hb.group_id)
            group.protocol_type = "consumer"
        if hb.member_epoch == LEAVE_EPOCH:
            return self._leave(group, cg, hb)
        if hb.member_epoch == STATIC_LEAVE_EPOCH:
            return self._static_leave(group, cg, hb)

        member, previous = self._member(cg, hb)
        updated = replace(
            member,
            instance_id=hb.instance_id if hb.instance_id is not None else member.instance_id,
            rack_id=hb.rack_id if hb.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(hb.rebalance_timeout_ms if hb.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            server_assignor=(hb.server_assignor if hb.server_assignor is not None
                             else member.server_assignor),
            subscribed_names=(tuple(sorted(set(hb.subscribed_topic_names)))
                              if hb.subscribed_topic_names is not None
                              else member.subscribed_names),
            # an empty regex clears it (librdkafka sends "" when it has none)
            subscribed_regex=(hb.subscribed_topic_regex or None
                              if hb.subscribed_topic_regex is not None
                              else member.subscribed_regex),
            client_id=hb.client_id, client_host=hb.client_host)
        updated.subscribed_topics = self._subscribed(updated)
        bump = previous is None or updated.subscribed_topics != previous.subscribed_topics \
            or updated.server_assignor != previous.server_assignor
        cg.put(updated, previous)
        metadata = {t: self.partitions_of(t) for t in cg.subscribed_topics()}
        if metadata != cg.subscription_metadata:
            cg.subscription_metadata = metadata
            bump = True
        if bump:
            cg.group_epoch += 1
            log.info("group %s: epoch %d (member %s)", cg.group_id, cg.group_epoch, updated.member_id)
        reassigned = cg.group_epoch > cg.assignment_epoch
        if reassigned:
            self._assign(cg)

        reconciled = reconcile(updated, cg.assignment_epoch, cg.target.get(updated.member_id, {}),
                               cg.owner, hb.owned)
        if reconciled is not updated:
            cg.put(reconciled, updated)
        if reconciled.state is MemberState.UNREVOKED_PARTITIONS \
                and reconciled.revocation_epoch != reconciled.member_epoch:
            reconciled.revocation_epoch = reconciled.member_epoch
            self._watch(ConsumerRevocationTimeout(self, group, reconciled.member_id,
                                                  reconciled.member_epoch,
                                                  max(reconciled.rebalance_timeout_ms, 0)),
                        group, reconciled.member_id, "revocation")
        self._alive(group, reconciled)

        ids = self.topic_ids()
        touched = list(cg.members) if reassigned else [reconciled.member_id]
        if previous is not None and previous.member_id != reconciled.member_id:
            touched.append(previous.member_id)  # a static member's old id: tombstones
        recs = consumer_records.everything(cg, ids, touched)

        full = hb.member_epoch == JOIN_EPOCH or (
            hb.rebalance_timeout_ms != -1 and hb.subscribed_topic_names is not None
            and hb.owned is not None)
        changed = previous is None or reconciled.assigned != previous.assigned
        return HeartbeatAnswer(
            member_id=reconciled.member_id, member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.config.group_consumer_heartbeat_interval_ms,
            assignment=dict(reconciled.assigned) if full or changed else None), recs

    def _subscribed(self, member: ConsumerMember) -> tuple[str, ...]:
        topics = set(member.subscribed_names)
        if member.subscribed_regex:
            pattern = re.compile(member.subscribed_regex)
            topics.update(t for t in self.topic_names() if pattern.fullmatch(t))
        return tuple(sorted(topics))

    def _member(self, cg: ConsumerGroup, hb: ConsumerHeartbeat
                ) -> tuple[ConsumerMember, ConsumerMember | None]:
        """(the member to update, the stored member it replaces — None for a new one)."""
        joining = hb.member_epoch == JOIN_EPOCH
        member_id = hb.member_id or str(uuid.uuid4())
        if hb.instance_id is None:
            existing = cg.members.get(member_id)
            if joining:
                if existing is not None:  # rejoining after being fenced: starts afresh
                    log.info("group %s: member %s rejoins at epoch 0 and starts afresh",
                             cg.group_id, member_id)
                    return ConsumerMember(member_id), existing
                self._check_size(cg)
                log.info("group %s: member %s joins (consumer protocol)", cg.group_id, member_id)
                return ConsumerMember(member_id), None
            if existing is None:
                raise UnknownMemberId(f"member {member_id} is not in group {cg.group_id}")
            self._check_epoch(existing, hb)
            return existing, existing
        static = cg.static_member(hb.instance_id)
        if joining:
            if static is None:
                self._check_size(cg)
                return ConsumerMember(member_id, instance_id=hb.instance_id), \
                    cg.members.get(member_id)
            if static.member_epoch != STATIC_LEAVE_EPOCH and static.member_id != member_id:
                raise UnreleasedInstanceId(
                    f"static member {hb.instance_id} of group {cg.group_id} is still held by "
                    f"member {static.member_id}; it must leave (or time out) first")
            log.info("group %s: static member %s returns as %s", cg.group_id, hb.instance_id,
                     member_id)
            # what it keeps counts as held since epoch 0, as in Kafka (KIP-1251)
            return replace(static, member_id=member_id, member_epoch=0, previous_member_epoch=0,
                           revocation_epoch=None,
                           assignment_epochs=dict.fromkeys(static.owned_partitions(), 0)), static
        if static is None:
            raise UnknownMemberId(f"static member {hb.instance_id} is not in group {cg.group_id}")
        if static.member_id != member_id:
            raise FencedInstanceId(f"static member {hb.instance_id} is now member "
                                   f"{static.member_id}, not {member_id}")
        self._check_epoch(static, hb)
        return static, static

    def _check_size(self, cg: ConsumerGroup) -> None:
        if len(cg.members) >= self.config.group_max_size:
            raise GroupMaxSizeReached(f"group {cg.group_id} has reached group.max.size="
                                      f"{self.config.group_max_size}")

    @staticmethod
    def _check_epoch(member: ConsumerMember, hb: ConsumerHeartbeat) -> None:
        epoch = hb.member_epoch
        if epoch > member.member_epoch:
            raise FencedMemberEpoch(f"member epoch {epoch} is ahead of the coordinator's "
                                    f"{member.member_epoch}; give up all partitions and rejoin")
        if epoch < member.member_epoch:
            owned = hb.owned
            assigned = {(t, p) for t, ps in member.assigned.items() for p in ps}
            if epoch != member.previous_member_epoch or owned is None or not owned <= assigned:
                raise FencedMemberEpoch(
                    f"member epoch {epoch} is behind the coordinator's {member.member_epoch}; "
                    "give up all partitions and rejoin")

    def _assign(self, cg: ConsumerGroup) -> None:
        """A new target assignment at the group epoch, by the assignor the members prefer
        (the most named; the broker's first if none names one)."""
        names = [m.server_assignor for m in cg.members.values() if m.server_assignor]
        name = max(set(names), key=lambda n: (names.count(n), n)) if names \
            else self.config.group_consumer_assignors[0]
        subscriptions = {m.member_id: m.subscribed_topics for m in cg.members.values()}
        cg.target = ASSIGNORS[name](subscriptions, cg.subscription_metadata, cg.target)
        cg.assignor_name = name
        cg.assignment_epoch = cg.group_epoch

    # ---- leaving and expiring -----------------------------------------------------------
    def _leave(self, group: GroupMetadata, cg: ConsumerGroup, hb: ConsumerHeartbeat
               ) -> tuple[HeartbeatAnswer, list[Record]]:
        member = cg.static_member(hb.instance_id) if hb.instance_id is not None \
            else cg.members.get(hb.member_id)
        if member is None:
            raise UnknownMemberId(f"member {hb.member_id} is not in group {cg.group_id}")
        if member.member_id != hb.member_id:
            raise FencedInstanceId(f"static member {hb.instance_id} is now member "
                                   f"{member.member_id}, not {hb.member_id}")
        log.info("group %s: member %s leaves", cg.group_id, member.member_id)
        recs = self._remove(group, cg, member.member_id)
        return HeartbeatAnswer(member_id=hb.member_id, member_epoch=LEAVE_EPOCH,
                               heartbeat_interval_ms=0), recs

    def _static_leave(self, group: GroupMetadata, cg: ConsumerGroup, hb: ConsumerHeartbeat
                      ) -> tuple[HeartbeatAnswer, list[Record]]:
        member = cg.static_member(hb.instance_id)
        if member is None:
            raise UnknownMemberId(f"static member {hb.instance_id} is not in group {cg.group_id}")
        if member.member_id != hb.member_id:
            raise FencedInstanceId(f"static member {hb.instance_id} is now member "
                                   f"{member.member_id}, not {hb.member_id}")
        log.info("group %s: static member %s leaves for now, keeping its partitions for "
                 "the session timeout", cg.group_id, hb.instance_id)
        cg.put(replace(member, member_epoch=STATIC_LEAVE_EPOCH), member)
        recs = consumer_records.everything(cg, self.topic_ids(), [member.member_id])
        return HeartbeatAnswer(member_id=hb.member_id, member_epoch=STATIC_LEAVE_EPOCH,
                               heartbeat_interval_ms=0), recs

    def _remove(self, group: GroupMetadata, cg: ConsumerGroup, member_id: str) -> list[Record]:
        """Remove a member; the records that say so (its tombstones, the new epoch)."""
        member = cg.remove(member_id)
        if member is None:
            return []
        cg.group_epoch += 1
        purgatory = self.purgatory
        purgatory.check_and_complete(self._key(group, member_id, "session"))
        purgatory.check_and_complete(self._key(group, member_id, "revocation"))
        return consumer_records.everything(cg, self.topic_ids(), [member_id])

    def session_satisfied(self, group: GroupMetadata, member_id: str) -> bool:
        with group.lock:
            cg = group.consumer
            member = None if cg is None or group.is_(GroupState.DEAD) else cg.members.get(member_id)
            return member is None or member.heartbeat_satisfied

    def expire_session(self, group: GroupMetadata, member_id: str) -> None:
        with group.lock:
            cg = group.consumer
            member = None if cg is None else cg.members.get(member_id)
            if cg is not None and member is not None and not member.heartbeat_satisfied:
                log.info("group %s: member %s expired (no heartbeat for "
                         "group.consumer.session.timeout.ms)", cg.group_id, member_id)
                self._write(group, self._remove(group, cg, member_id), "an expired member")

    def revocation_done(self, group: GroupMetadata, member_id: str, epoch: int) -> bool:
        with group.lock:
            cg = group.consumer
            member = None if cg is None else cg.members.get(member_id)
            return member is None or member.state is not MemberState.UNREVOKED_PARTITIONS \
                or member.member_epoch != epoch

    def expire_revocation(self, group: GroupMetadata, member_id: str, epoch: int) -> None:
        with group.lock:
            if self.revocation_done(group, member_id, epoch):
                return
            cg = group.consumer
            assert cg is not None
            log.info("group %s: member %s did not revoke its partitions within its rebalance "
                     "timeout; fenced", cg.group_id, member_id)
            self._write(group, self._remove(group, cg, member_id), "a fenced member")

    # ---- timers -------------------------------------------------------------------------
    @staticmethod
    def _key(group: GroupMetadata, member_id: str, kind: str) -> tuple[str, str, str]:
        return group.group_id, member_id, kind

    def _watch(self, op: ConsumerSessionTimeout | ConsumerRevocationTimeout, group: GroupMetadata,
               member_id: str, kind: str) -> None:
        self.purgatory.try_complete_else_watch(
            op, [self._key(group, member_id, kind)])

    def _alive(self, group: GroupMetadata, member: ConsumerMember) -> None:
        """Complete the member's session check and arm the next one (O(1) on the wheel)."""
        member.heartbeat_satisfied = True
        self.purgatory.check_and_complete(
            self._key(group, member.member_id, "session"))
        member.heartbeat_satisfied = False
        self._watch(ConsumerSessionTimeout(self, group, member.member_id,
                                           self.config.group_consumer_session_timeout_ms),
                    group, member.member_id, "session")

    def drop(self, group: GroupMetadata) -> None:
        """An empty group leaves the consumer protocol (a classic member joins it)."""
        cg = group.consumer
        if cg is not None:
            group.consumer = None
            self._write(group, consumer_records.tombstones(cg), "the end of a consumer group")

    def on_loaded(self, group: GroupMetadata) -> None:
        """A new coordinator restores the group and gives every member a full session."""
        with group.lock:
            raw, group.loaded_consumer_records = group.loaded_consumer_records, {}
            if not raw:
                return
            names = {i: n for n, i in self.topic_ids().items()}
            cg = consumer_records.restore(group.group_id, raw, names, self._subscribed)
            cg.subscription_metadata = {t: self.partitions_of(t) for t in cg.subscribed_topics()}
            group.consumer = cg
            group.protocol_type = "consumer"
            for member in cg.members.values():
                self._alive(group, member)
            log.info("group %s: restored at epoch %d with %d member(s)", group.group_id,
                     cg.group_epoch, len(cg.members))

    def on_unloaded(self, group: GroupMetadata) -> None:
        """Another broker coordinates the group now: its timers here must not fire."""
        cg = group.consumer
        if cg is not None:
            purgatory = self.purgatory
            for member_id in cg.members:
                purgatory.check_and_complete(self._key(group, member_id, "session"))
                purgatory.check_and_complete(self._key(group, member_id, "revocation"))

    # ---- looking at groups --------------------------------------------------------------
    def describe(self, group_id: str) -> ConsumerGroupSummary:
        error = self.store.ownership_error(group_id) if group_id else \
            InvalidRequest("the group id must not be empty")
        if error is not None:
            return ConsumerGroupSummary(error.code, group_id, message=str(error))
        group = self.store.get(group_id)
        if group is None:
            return ConsumerGroupSummary(GroupIdNotFound.code, group_id,
                                        message=f"group {group_id} not found")
        with group.lock:
            cg = group.consumer
            if group.is_(GroupState.DEAD):
                return ConsumerGroupSummary(CoordinatorNotAvailable.code, group_id)
            if cg is None:
                return ConsumerGroupSummary(GroupIdNotFound.code, group_id,
                                            message=f"group {group_id} is not a consumer group")
            return ConsumerGroupSummary(
                0, group_id, cg.state, cg.group_epoch, cg.assignment_epoch, cg.assignor_name,
                [DescribedMember(replace(m), dict(cg.target.get(m.member_id, {})))
                 for m in cg.members.values()])
