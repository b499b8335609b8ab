"""A consumer-protocol group as records of ``__consumer_offsets``, and back.

Kafka's layout (see :mod:`.records`): the group's epoch and assignment epoch, and per
member its metadata, its target and its current assignment, each under its own key, so
only what changed is written. :func:`changes` turns the state of the keys a change touched
into the records still to write (a tombstone for a key that is gone), remembering in
``ConsumerGroup.written`` what the log holds; :func:`restore` rebuilds a group from what a
new coordinator read back. Partitions are named by topic id in the log and by topic name
in memory; a topic whose id is unknown when the group is restored (it was deleted) is
dropped. A member's current assignment carries each partition's assignment epoch
(KIP-1251) in a tagged field, as Kafka 4.3 writes it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import records as r
from .consumer_group import Assignment, ConsumerGroup, ConsumerMember, MemberState
from .records import Record

_STATE_VALUE = {MemberState.STABLE: 0, MemberState.UNREVOKED_PARTITIONS: 1,
                MemberState.UNRELEASED_PARTITIONS: 2}
_STATE_OF = {v: k for k, v in _STATE_VALUE.items()}

Keyed = dict[bytes, bytes | None]


def _partitions(assignment: Assignment, ids: Mapping[str, uuid.UUID],
                epochs: Mapping[tuple[str, int], int] | None = None,
                default: int = 0) -> list[dict[str, Any]]:
    """An assignment as the log's topic-partitions; with ``epochs``, each partition's
    assignment epoch beside it (``default`` for one without)."""
    out = []
    for t, ps in sorted(assignment.items()):
        if t in ids and ps:
            parts = sorted(ps)
            entry: dict[str, Any] = {"topic_id": ids[t], "partitions": parts}
            if epochs is not None:
                entry["assignment_epochs"] = [epochs.get((t, p), default) for p in parts]
            out.append(entry)
    return out


def group_state(cg: ConsumerGroup) -> Keyed:
    return {
        r.consumer_key(r.CONSUMER_GROUP_KEY_VERSION, cg.group_id):
            r.consumer_value(r.CONSUMER_GROUP_KEY_VERSION, {"epoch": cg.group_epoch}),
        r.consumer_key(r.TARGET_METADATA_KEY_VERSION, cg.group_id):
            r.consumer_value(r.TARGET_METADATA_KEY_VERSION,
                             {"assignment_epoch": cg.assignment_epoch}),
    }


def member_state(cg: ConsumerGroup, member_id: str, ids: Mapping[str, uuid.UUID],
                 target: bool = True) -> Keyed:
    """Member ``member_id``'s keys: tombstones if it is no longer in the group."""
    keys = {kind: r.consumer_key(kind, cg.group_id, member_id)
            for kind in (r.CONSUMER_MEMBER_KEY_VERSION, r.TARGET_MEMBER_KEY_VERSION,
                         r.CURRENT_ASSIGNMENT_KEY_VERSION)}
    m = cg.members.get(member_id)
    if m is None:
        return {key: None for key in keys.values()}
    out: Keyed = {
        keys[r.CONSUMER_MEMBER_KEY_VERSION]: r.consumer_value(r.CONSUMER_MEMBER_KEY_VERSION, {
            "instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
            "client_host": m.client_host, "subscribed_topic_names": list(m.subscribed_names),
            "subscribed_topic_regex": m.subscribed_regex,
            "rebalance_timeout_ms": m.rebalance_timeout_ms, "server_assignor": m.server_assignor}),
        keys[r.CURRENT_ASSIGNMENT_KEY_VERSION]: r.consumer_value(r.CURRENT_ASSIGNMENT_KEY_VERSION, {
            "member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
            "state": _STATE_VALUE[m.state],
            "assigned_partitions": _partitions(m.assigned, ids, m.assignment_epochs,
                                               m.member_epoch),
            "partitions_pending_revocation": _partitions(m.pending_revocation, ids,
                                                         m.assignment_epochs, m.member_epoch)}),
    }
    if target:
        out[keys[r.TARGET_MEMBER_KEY_VERSION]] = r.consumer_value(r.TARGET_MEMBER_KEY_VERSION, {
            "topic_partitions": _partitions(cg.target.get(member_id, {}), ids)})
    return out


def changes(cg: ConsumerGroup, state: Keyed) -> list[Record]:
    """The records that bring the log from ``cg.written`` to ``state`` (for those keys)."""
    out: list[Record] = []
    for key, value in state.items():
        if value is None:
            if cg.written.pop(key, None) is not None:
                out.append((key, None))
        elif cg.written.get(key) != value:
            cg.written[key] = value
            out.append((key, value))
    return out


def everything(cg: ConsumerGroup, ids: Mapping[str, uuid.UUID],
               members: Iterable[str]) -> list[Record]:
    """Group keys plus every key of ``members`` (present or gone)."""
    state = group_state(cg)
    for member_id in members:
        state.update(member_state(cg, member_id, ids))
    return changes(cg, state)


def tombstones(cg: ConsumerGroup) -> list[Record]:
    out: list[Record] = [(key, None) for key in cg.written]
    cg.written.clear()
    return out


def restore(group_id: str, raw: Mapping[bytes, bytes], names: Mapping[uuid.UUID, str],
            subscribed: Callable[[ConsumerMember], tuple[str, ...]]) -> ConsumerGroup:
    """The group whose latest records (key -> value) a loading coordinator read."""
    cg = ConsumerGroup(group_id)
    members: dict[str, dict[int, Any]] = {}
    for key, value in raw.items():
        k = r.decode_key(key)
        if not isinstance(k, r.ConsumerKey) or k.kind == 4:
            continue
        v = r.decode_consumer_value(k.kind, value)
        if k.kind == r.CONSUMER_GROUP_KEY_VERSION:
            cg.group_epoch = v.epoch
        elif k.kind == r.TARGET_METADATA_KEY_VERSION:
            cg.assignment_epoch = v.assignment_epoch
        elif k.member is not None:
            members.setdefault(k.member, {})[k.kind] = v

    def named(tps: Any) -> Assignment:
        return {names[tp.topic_id]: frozenset(tp.partitions) for tp in tps
                if tp.topic_id in names}

    def epochs(tps: Any, default: int) -> dict[tuple[str, int], int]:
        """Assignment epochs; a record without them (written before KIP-1251) gives each
        partition the member's epoch, so only commits at that epoch cover it."""
        out: dict[tuple[str, int], int] = {}
        for tp in tps:
            if tp.topic_id in names:
                given = tp.assignment_epochs
                if given is None or len(given) != len(tp.partitions):
                    given = [default] * len(tp.partitions)
                topic = names[tp.topic_id]
                out.update(((topic, p), e) for p, e in zip(tp.partitions, given, strict=True))
        return out

    for member_id, parts in members.items():
        meta = parts.get(r.CONSUMER_MEMBER_KEY_VERSION)
        if meta is None:
            continue  # a member's metadata is written first and removed last
        m = ConsumerMember(member_id, instance_id=meta.instance_id, rack_id=meta.rack_id,
                           client_id=meta.client_id, client_host=meta.client_host,
                           rebalance_timeout_ms=meta.rebalance_timeout_ms,
                           subscribed_names=tuple(meta.subscribed_topic_names),
                           subscribed_regex=meta.subscribed_topic_regex,
                           server_assignor=meta.server_assignor)
        m.subscribed_topics = subscribed(m)
        current = parts.get(r.CURRENT_ASSIGNMENT_KEY_VERSION)
        if current is not None:
            m.member_epoch = current.member_epoch
            m.previous_member_epoch = current.previous_member_epoch
            m.state = _STATE_OF.get(current.state, MemberState.STABLE)
            m.assigned = named(current.assigned_partitions)
            m.pending_revocation = named(current.partitions_pending_revocation)
            default = max(m.member_epoch, 0)
            m.assignment_epochs = {**epochs(current.assigned_partitions, default),
                                   **epochs(current.partitions_pending_revocation, default)}
        target = parts.get(r.TARGET_MEMBER_KEY_VERSION)
        if target is not None:
            cg.target[member_id] = named(target.topic_partitions)
        cg.put(m)
    cg.written = dict(raw)
    return cg
