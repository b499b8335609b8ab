"""One member of a classic group, as the coordinator sees it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

JoinCallback = Callable[[Any], None]
SyncCallback = Callable[[Any], None]


class MemberMetadata:
    """A member's identity, timeouts, protocols and assignment, and the requests it has
    parked at the coordinator (at most one JoinGroup and one SyncGroup).

    ``heartbeat_satisfied`` is set when a heartbeat (or any request that proves the member
    alive) arrives and cleared when the next session-timeout check is armed; the member's
    DelayedHeartbeat completes without expiring if it is set, or while the member waits in
    a join or sync. Guarded by the group's lock, like everything in a group.
    """

    __slots__ = ("member_id", "group_instance_id", "client_id", "client_host",
                 "rebalance_timeout_ms", "session_timeout_ms", "protocol_type", "protocols",
                 "assignment", "awaiting_join", "awaiting_sync", "is_leaving", "is_new",
                 "heartbeat_satisfied")

    def __init__(self, member_id: str, group_instance_id: str | None, client_id: str,
                 client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                 protocol_type: str, protocols: list[tuple[str, bytes]]) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.assignment = b""
        self.awaiting_join: JoinCallback | None = None
        self.awaiting_sync: SyncCallback | None = None
        self.is_leaving = False
        self.is_new = False
        self.heartbeat_satisfied = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def has_satisfied_heartbeat(self) -> bool:
        return (self.heartbeat_satisfied or self.is_leaving or self.awaiting_join is not None
                or self.awaiting_sync is not None)

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise KeyError(f"member {self.member_id} does not support protocol {protocol!r}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols with the same metadata, in the same order."""
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """The first of this member's protocols that every member supports."""
        return next(name for name, _ in self.protocols if name in candidates)

    def __repr__(self) -> str:
        return (f"Member({self.member_id}, instance={self.group_instance_id}, "
                f"client={self.client_id}@{self.client_host})")
