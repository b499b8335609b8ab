"""Looking at and removing whole groups: DescribeGroups, ListGroups, DeleteGroups."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from ...common import Clock
from ...protocol.errors import (
    CoordinatorLoadInProgress,
    GroupIdNotFound,
    KafkaError,
    NonEmptyGroup,
    code_of,
)
from .group import GroupMetadata, GroupState
from .store import GroupStore

log = logging.getLogger(__name__)

S = GroupState


@dataclass
class GroupSummary:
    error: int
    group_id: str
    state: str
    protocol_type: str
    protocol_name: str
    #: (member id, instance id, client id, client host, metadata, assignment)
    members: list[tuple[str, str | None, str, str, bytes, bytes]]


class GroupAdmin:
    """Describe, list and delete groups.

    Invariants: a group is deleted only when it is Empty (no classic member, no consumer
    protocol member) and its tombstones are written; it is then Dead and out of the store,
    so a later request for its id finds a new group. Describe answers classic groups only
    (a consumer-protocol group is ConsumerGroupDescribe's, :mod:`.consumer_protocol`).

    Threading: request handlers call in concurrently; each group is read or changed under
    its lock, the write callback of a deletion included.
    """

    def __init__(self, store: GroupStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    def describe_group(self, group_id: str) -> GroupSummary:
        error = self.store.request_error(group_id, needs_id=False)
        if error is not None:
            return GroupSummary(error.code, group_id, "", "", "", [])
        group = self.store.get(group_id)
        if group is None:
            return GroupSummary(0, group_id, S.DEAD.value, "", "", [])
        with group.lock:
            # as Kafka: DescribeGroups sees classic groups only, once they are durable
            if group.consumer is not None or group.first_commit_pending:
                return GroupSummary(0, group_id, S.DEAD.value, "", "", [])
            stable = group.is_(S.STABLE)
            protocol = group.protocol_name or ""
            members = [(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                        m.metadata(protocol) if stable and protocol else b"",
                        m.assignment if stable else b"") for m in group.members.values()]
            return GroupSummary(0, group_id, group.state.value, group.protocol_type or "",
                                protocol if stable else "", members)

    def list_groups(self, states: set[str] | None = None
                    ) -> tuple[int, list[tuple[str, str, str, str]]]:
        """(error, [(group id, protocol type, state, group type)]); states match
        case-insensitively; the group type is "classic" or "consumer" (KIP-848)."""
        wanted = {s.lower() for s in states} if states else None
        out = []
        for group in self.store.groups():
            with group.lock:
                if group.is_(S.DEAD) or group.first_commit_pending:
                    continue
                state = group.state_name
                if wanted is None or state.lower() in wanted:
                    out.append((group.group_id, group.protocol_type or "", state,
                                group.group_type))
        error = CoordinatorLoadInProgress.code if self.store.any_loading() else 0
        return error, sorted(out)

    def delete_groups(self, group_ids: list[str], callback: Callable[[dict[str, int]], None]) -> None:
        results: dict[str, int] = {}
        waiting = set(group_ids)

        def done(group_id: str, code: int) -> None:
            results[group_id] = code
            waiting.discard(group_id)
            if not waiting:
                callback(results)

        if not group_ids:
            callback(results)
            return
        for group_id in list(dict.fromkeys(group_ids)):
            error = self.store.request_error(group_id)
            group = self.store.get(group_id) if error is None else None
            if error is not None:
                done(group_id, error.code)
                continue
            if group is None:
                done(group_id, GroupIdNotFound.code)
                continue
            with group.lock:
                if group.is_(S.DEAD) or group.first_commit_pending:
                    done(group_id, GroupIdNotFound.code)
                elif not group.is_(S.EMPTY) or group.has_consumer_members:
                    done(group_id, NonEmptyGroup.code)
                else:
                    self.store.append(group_id, self.store.tombstones(group, whole_group=True),
                                      self._deleted(group, done))

    def _deleted(self, group: GroupMetadata, done: Callable[[str, int], None]
                 ) -> Callable[[KafkaError | None], None]:
        def stored(error: KafkaError | None) -> None:
            with group.lock:
                if error is None and group.is_(S.EMPTY):
                    group.transition_to(S.DEAD, self.clock.wall_ms())
                    self.store.remove(group)
                    log.info("group %s deleted", group.group_id)
                done(group.group_id, code_of(error))
        return stored
