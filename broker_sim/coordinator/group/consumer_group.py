"""A consumer-protocol (KIP-848) group: epochs, members, the target assignment, and who
owns each partition right now.

The coordinator, not a leader member, assigns. Three epochs move it:

* the **group epoch** grows whenever what the group must assign changes — a member joins,
  leaves or changes its subscription, or a subscribed topic gains partitions;
* the **assignment epoch** is the group epoch the current *target assignment* was computed
  at (the server-side assignor runs when the group epoch passes it);
* each member's **member epoch** reaches the assignment epoch once the member has
  reconciled — given up what the target takes from it and received what it adds
  (:mod:`.reconciliation`).

A partition is handed to its new owner only after its previous owner has given it up:
``owners`` maps every partition a member holds or is still revoking to that member, and
reconciliation leaves a partition unassigned while another member is in ``owners`` for it.

Each partition a member holds carries its **assignment epoch** (KIP-1251): the member epoch
at which the member was given it, kept while the member keeps the partition across later
epochs and while it revokes it. An offset commit at the member's current epoch covers
anything; one at an older epoch — a commit sent before the heartbeat answer that moved the
member on had arrived — covers only partitions the member has held since that epoch
(:meth:`ConsumerMember.may_commit`). Without it such a commit was refused although no other
member could have owned those partitions in between.

States, as ListGroups and ConsumerGroupDescribe name them: Empty (no members), Assigning
(the group epoch is ahead of the assignment epoch), Reconciling (a member has not reached
the assignment epoch), Stable.

Threading: a ConsumerGroup lives inside its :class:`~.group.GroupMetadata` and is guarded
by that group's lock, like everything else in a group.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

#: topic name -> partitions.
Assignment = dict[str, frozenset[int]]

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


class MemberState(enum.Enum):
    STABLE = "stable"
    #: it still holds partitions the target takes away; it gets nothing new until it lets go.
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    #: it waits for partitions another member still holds.
    UNRELEASED_PARTITIONS = "unreleased_partitions"


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    #: what the member subscribes to: names, a regex (full match), or both.
    subscribed_names: tuple[str, ...] = ()
    subscribed_regex: str | None = None
    #: the topics it is subscribed to now: its names and the topics its regex matches.
    subscribed_topics: tuple[str, ...] = ()
    server_assignor: str | None = None
    state: MemberState = MemberState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    #: set by each heartbeat, cleared when the next session-timeout check is armed.
    heartbeat_satisfied: bool = False
    #: the epoch at which a revocation deadline was armed (None: no deadline pending).
    revocation_epoch: int | None = None
    #: (topic, partition) -> the member epoch at which it was given to the member, for
    #: exactly the partitions it holds or still revokes (``owned_partitions``).
    assignment_epochs: dict[tuple[str, int], int] = field(default_factory=dict)

    def owned_partitions(self) -> set[tuple[str, int]]:
        out = {(t, p) for t, ps in self.assigned.items() for p in ps}
        out.update((t, p) for t, ps in self.pending_revocation.items() for p in ps)
        return out

    def may_commit(self, epoch: int, partitions: Iterable[tuple[str, int]]) -> bool:
        """May an offset commit sent at ``epoch`` cover ``partitions``? At the member's epoch,
        yes; above it, never; below it, only partitions held since ``epoch`` or earlier."""
        if epoch == self.member_epoch:
            return True
        if epoch > self.member_epoch:
            return False
        held = self.assignment_epochs
        return all(tp in held and held[tp] <= epoch for tp in partitions)


def count(assignment: Assignment) -> int:
    return sum(len(ps) for ps in assignment.values())


class ConsumerGroup:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.assignor_name = ""
        self.members: dict[str, ConsumerMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.target: dict[str, Assignment] = {}  # member id -> its target assignment
        self.owners: dict[tuple[str, int], str] = {}  # partition -> member holding it
        #: partitions of each subscribed topic when the group epoch last moved.
        self.subscription_metadata: dict[str, int] = {}
        #: the latest value of each of the group's keys in __consumer_offsets.
        self.written: dict[bytes, bytes] = {}
        #: topic -> how many members subscribe to it (kept as members come and go, so a
        #: heartbeat never walks every member).
        self.subscribers: dict[str, int] = {}

    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        if any(m.member_epoch != self.assignment_epoch or m.state is not MemberState.STABLE
               for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def subscribed_topics(self) -> set[str]:
        return set(self.subscribers)

    def _count(self, topics: tuple[str, ...], delta: int) -> None:
        for t in topics:
            n = self.subscribers.get(t, 0) + delta
            if n:
                self.subscribers[t] = n
            else:
                del self.subscribers[t]

    def owner(self, topic: str, partition: int) -> str | None:
        return self.owners.get((topic, partition))

    # ---- membership --------------------------------------------------------------------
    def put(self, member: ConsumerMember, previous: ConsumerMember | None = None) -> None:
        """Store ``member`` (replacing ``previous``, which may have another id) and move the
        partitions it holds in ``owners``."""
        if previous is not None:
            self._release(previous)
            self._count(previous.subscribed_topics, -1)
            if previous.member_id != member.member_id:
                self.members.pop(previous.member_id, None)
                target = self.target.pop(previous.member_id, None)
                if target is not None:
                    self.target[member.member_id] = target
        self.members[member.member_id] = member
        self._count(member.subscribed_topics, +1)
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        for tp in member.owned_partitions():
            self.owners[tp] = member.member_id

    def remove(self, member_id: str) -> ConsumerMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self._release(member)
        self._count(member.subscribed_topics, -1)
        self.target.pop(member_id, None)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        return member

    def _release(self, member: ConsumerMember) -> None:
        for tp in member.owned_partitions():
            if self.owners.get(tp) == member.member_id:
                del self.owners[tp]

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        if instance_id is None:
            return None
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def __repr__(self) -> str:
        return (f"ConsumerGroup({self.group_id}, {self.state}, epoch {self.group_epoch}, "
                f"assignment epoch {self.assignment_epoch}, {len(self.members)} members)")
