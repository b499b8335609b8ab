"""A consumer group's state: the classic protocol's state machine, members, offsets."""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass

from .consumer_group import ConsumerGroup
from .member import MemberMetadata


class GroupState(enum.Enum):
    """Kafka's names, as DescribeGroups and ListGroups report them."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


S = GroupState
#: state -> the states it may be entered from.
VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
    S.PREPARING_REBALANCE: frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}),
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    S.DEAD: frozenset({S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD}),
}


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1


class GroupMetadata:
    """Everything the coordinator knows of one group.

    States and their moves (Kafka's classic protocol)::

        Empty --join--> PreparingRebalance --all joined / timeout--> CompletingRebalance
        CompletingRebalance --leader's SyncGroup stored--> Stable
        Stable / CompletingRebalance --join, leave, expiry--> PreparingRebalance
        PreparingRebalance --everyone gone--> Empty;  any --deleted / unloaded--> Dead

    ``generation_id`` grows by one each time a rebalance completes. Offsets live here too,
    so "simple" groups (commits with no members, as the Spark source makes) are groups in
    state Empty.

    Threading: every field is guarded by ``lock``, an RLock that the group's delayed
    operations (DelayedJoin, DelayedHeartbeat) share, so the purgatory never checks an
    operation while a request handler is changing the group; callbacks that answer parked
    requests are called with it held (they only queue a response).
    """

    def __init__(self, group_id: str, now_ms: int, state: GroupState = GroupState.EMPTY) -> None:
        self.group_id = group_id
        self.lock = threading.RLock()
        self.state = state
        self.state_timestamp_ms = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.pending_members: set[str] = set()  # KIP-394: ids handed out, not yet joined
        self.new_member_added = False
        self.offsets: dict[tuple[str, int], CommittedOffset] = {}
        #: producer id -> offsets it committed inside a transaction not yet decided
        #: (TxnOffsetCommit); they join ``offsets`` when its COMMIT marker is written.
        self.pending_txn_offsets: dict[int, dict[tuple[str, int], CommittedOffset]] = {}
        #: set while the group uses the consumer protocol (KIP-848); the classic state
        #: machine then stays Empty.
        self.consumer: ConsumerGroup | None = None
        #: consumer-protocol records read back by a loading coordinator, until restored.
        self.loaded_consumer_records: dict[bytes, bytes] = {}
        #: created by an OffsetCommit whose write is not yet durable: until one such write
        #: is, the group is not listed, described or deleted (Kafka reads groups at the
        #: last committed offset), and if every one fails it is dropped. A member joining
        #: (classic or consumer protocol) clears it, so while it is set the group is Empty,
        #: with no members.
        self.first_commit_pending = False
        #: OffsetCommit writes of this group not yet answered.
        self.commits_in_flight = 0

    def mark_first_commit_pending(self) -> None:
        self.first_commit_pending = True

    @property
    def has_consumer_members(self) -> bool:
        return self.consumer is not None and bool(self.consumer.members)

    @property
    def group_type(self) -> str:
        return "classic" if self.consumer is None else "consumer"

    @property
    def state_name(self) -> str:
        """The state ListGroups reports: the consumer protocol's when the group uses it."""
        return self.consumer.state if self.consumer is not None else self.state.value

    # ---- state ------------------------------------------------------------------------
    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS[state]:
            raise AssertionError(f"group {self.group_id}: {self.state.value} -> {state.value} "
                                 "is not a move of the group state machine")
        self.state = state
        self.state_timestamp_ms = now_ms

    # ---- members ------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def add(self, member: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.group_instance_id is not None \
                and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next((m for m, mm in self.members.items() if mm.is_awaiting_join),
                                  next(iter(self.members), None))
        return member

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> MemberMetadata:
        """A restarted static member takes its old place (and assignment) under a new id."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def is_static_member_fenced(self, member_id: str, instance_id: str | None) -> bool:
        """The instance id is known under another member id: the caller is a zombie."""
        known = self.static_member_id(instance_id)
        return known is not None and known != member_id

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(m.is_awaiting_join for m in self.members.values())

    def not_yet_rejoined(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # ---- protocols ----------------------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        members = list(self.members.values())
        if not members:
            return set()
        common = set(members[0].protocol_names())
        for m in members[1:]:
            common &= set(m.protocol_names())
        return common

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        names = {name for name, _ in protocols}
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def select_protocol(self) -> str:
        """The protocol most members rank first among those all of them support."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)
        for m in self.members.values():
            m.is_new = False

    def reset_assignments(self) -> None:
        for m in self.members.values():
            m.assignment = b""

    def __repr__(self) -> str:
        return (f"Group({self.group_id}, {self.state.value}, generation {self.generation_id}, "
                f"{len(self.members)} members)")
