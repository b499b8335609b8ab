"""Moving one consumer-protocol member from what it holds towards its target assignment.

Called on each of the member's heartbeats (and when a revocation completes), under the
group's lock, this is KIP-848's reconciliation, decided per member:

* partitions the member holds that its target no longer has are **revoked** first: the
  member keeps its epoch and receives only what it may keep, and nothing new, until a
  heartbeat reports it no longer owns the revoked ones;
* partitions its target adds are **assigned** only once no other member holds them (the
  previous owner has revoked them); until then the member is UNRELEASED_PARTITIONS;
* when nothing remains to revoke the member moves to the assignment epoch.

Every partition the member holds keeps the assignment epoch it was given at (KIP-1251);
a partition added now takes the epoch the member moves to.

``owned`` is what the member's heartbeat reported it owns (None: not reported, so assumed
unchanged). The function returns a new :class:`~.consumer_group.ConsumerMember` and leaves
the caller to store it (which also moves partition ownership).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .consumer_group import Assignment, ConsumerMember, MemberState


def _still_owns(owned: set[tuple[str, int]] | None, revoking: Assignment) -> bool:
    if owned is None:
        return True
    return any((t, p) in owned for t, ps in revoking.items() for p in ps)


def reconcile(member: ConsumerMember, target_epoch: int, target: Assignment,
              owner_of: Callable[[str, int], str | None],
              owned: set[tuple[str, int]] | None) -> ConsumerMember:
    if member.state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, owner_of, owned)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if _still_owns(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, owner_of, owned)
    return _next(member, member.member_epoch, target_epoch, target, owner_of, owned)


def _next(member: ConsumerMember, epoch_if_revoking: int, target_epoch: int, target: Assignment,
          owner_of: Callable[[str, int], str | None],
          owned: set[tuple[str, int]] | None) -> ConsumerMember:
    keep: Assignment = {}
    revoke: Assignment = {}
    add: Assignment = {}
    unreleased = False
    for topic in set(target) | set(member.assigned):
        wanted = target.get(topic, frozenset())
        held = member.assigned.get(topic, frozenset())
        if held & wanted:
            keep[topic] = held & wanted
        if held - wanted:
            revoke[topic] = held - wanted
        free = set()
        for p in wanted - held:
            holder = owner_of(topic, p)
            if holder is None or holder == member.member_id:
                free.add(p)
            else:
                unreleased = True
        if free:
            add[topic] = frozenset(free)

    if revoke and _still_owns(owned, revoke):
        return replace(member, state=MemberState.UNREVOKED_PARTITIONS,
                       previous_member_epoch=_previous(member, epoch_if_revoking),
                       member_epoch=epoch_if_revoking,
                       assigned=keep, pending_revocation=revoke,
                       assignment_epochs=_epochs(member, (keep, revoke), {}, epoch_if_revoking))
    for topic, ps in add.items():
        keep[topic] = keep.get(topic, frozenset()) | ps
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return replace(member, state=state, previous_member_epoch=_previous(member, target_epoch),
                   member_epoch=target_epoch, assigned=keep, pending_revocation={},
                   assignment_epochs=_epochs(member, (keep,), add, target_epoch))


def _epochs(member: ConsumerMember, held: tuple[Assignment, ...], added: Assignment,
            epoch: int) -> dict[tuple[str, int], int]:
    """The assignment epochs of what the member holds now: its own for what it held
    before, ``epoch`` for what ``added`` gives it."""
    before = member.assignment_epochs
    out: dict[tuple[str, int], int] = {}
    for assignment in held:
        for topic, ps in assignment.items():
            for p in ps:
                tp = (topic, p)
                fresh = p in added.get(topic, ())
                out[tp] = epoch if fresh else before.get(tp, member.member_epoch)
    return out


def _previous(member: ConsumerMember, new_epoch: int) -> int:
    """The epoch a member may still heartbeat with (its answer may have been lost)."""
    return member.member_epoch if new_epoch != member.member_epoch else member.previous_member_epoch
