"""A consumer-protocol (KIP-848) member's state, sans I/O: what to heartbeat, what to do.

:class:`ConsumerMembership` is the member's side of ConsumerGroupHeartbeat as a state
machine. It sends nothing and reads no clock: the caller asks it for the next heartbeat's
body (:meth:`~ConsumerMembership.heartbeat_request`), hands it the answer
(:meth:`~ConsumerMembership.on_heartbeat`) or the failure, and asks what the application
must do about the partitions (:meth:`~ConsumerMembership.reconciliation`), so every rule
below runs in unit tests with a manual clock.

States::

    UNSUBSCRIBED --subscribe--> JOINING --answer--> STABLE <-----------------+
                                   ^                   | a new assignment     | acknowledged
                                   |                   v                      |
                                   |              RECONCILING --done--> ACKNOWLEDGING
                                   |                   |
                   lost partitions | FENCED <---- FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID
                   given up -------+ STALE  <---- no poll for max.poll.interval.ms (left)
    any --close--> LEAVING (epoch -1, -2 for a static member) --> LEFT;  FATAL: an error
    the member cannot get past (authorization, an unknown assignor, an invalid request).

Invariants:

* ``owned`` is exactly what the application holds (positions, callbacks done); only
  :meth:`revoked`/:meth:`reconciled` change it, after the application did so. A heartbeat
  reports ``owned``; the coordinator moves the member to a new epoch only once what it
  must give up is no longer in that report.
* ``assignment`` is the coordinator's latest word (topic ids); it changes only on a
  heartbeat answer and is never applied by this class.
* Every heartbeat is a full one (subscription, rebalance timeout, assignor, owned
  partitions), so a lost answer or a new coordinator needs no special case.
* A heartbeat is due at the interval the coordinator gave, at once after joining, after a
  reconciliation (the acknowledgement) and after a failure's backoff; one at a time.
* Fenced or stale, the member gives up everything as lost (no commit: the partitions may
  be another member's already), then joins again with epoch 0 and the same member id
  (KIP-1082: the member id is the client's, generated once).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from broker_sim.protocol.errors import (
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    FencedMemberEpoch,
    KafkaError,
    NotCoordinator,
    UnknownMemberId,
    error_for_code,
)

from .metadata import TopicPartition

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2

#: The coordinator moved or is loading: find it again and heartbeat after a backoff.
COORDINATOR_ERRORS = (NotCoordinator.code, CoordinatorNotAvailable.code,
                      CoordinatorLoadInProgress.code)
FENCED = (FencedMemberEpoch.code, UnknownMemberId.code)

Partition = tuple[uuid.UUID, int]


class MemberState(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    STABLE = "stable"
    RECONCILING = "reconciling"
    ACKNOWLEDGING = "acknowledging"
    FENCED = "fenced"
    STALE = "stale"
    LEAVING = "leaving"
    LEFT = "left"
    FATAL = "fatal"


@dataclass(frozen=True)
class Reconciliation:
    """What the application must do now: give up ``revoked`` (committing first, unless
    ``lost``), then take ``assigned``; then report :meth:`ConsumerMembership.reconciled`."""

    revoked: list[TopicPartition]
    assigned: list[TopicPartition]
    lost: bool
    target: frozenset[Partition]
    names: Mapping[uuid.UUID, str]


def new_member_id() -> str:
    """A member id as Kafka's clients make one (a random UUID, base64url, no padding)."""
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


class ConsumerMembership:
    def __init__(self, group_id: str, member_id: str, *, instance_id: str | None = None,
                 rebalance_timeout_ms: int, server_assignor: str | None = None,
                 retry_backoff_ms: float = 100) -> None:
        self.group_id = group_id
        self.member_id = member_id
        self.instance_id = instance_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.server_assignor = server_assignor
        self.retry_backoff_ms = retry_backoff_ms
        self.state = MemberState.UNSUBSCRIBED
        self.member_epoch = JOIN_EPOCH
        self.heartbeat_interval_ms: float = 0
        self.topics: list[str] = []
        self.owned: frozenset[Partition] = frozenset()
        self.assignment: frozenset[Partition] | None = None
        self.error: KafkaError | None = None
        self._names: dict[uuid.UUID, str] = {}
        self._next_heartbeat = 0.0
        self._in_flight = False

    # ---- subscription -------------------------------------------------------------------
    def subscribe(self, topics: Iterable[str], now: float) -> None:
        """Subscribe (or change topics): join at once, or tell the coordinator at once."""
        self.topics = sorted(set(topics))
        if self.state in (MemberState.UNSUBSCRIBED, MemberState.LEFT):
            self._join(now)
        else:
            self._next_heartbeat = now

    def _join(self, now: float) -> None:
        self.state = MemberState.JOINING
        self.member_epoch = JOIN_EPOCH
        self.assignment = None
        self._next_heartbeat = now

    @property
    def in_group(self) -> bool:
        return self.state in (MemberState.STABLE, MemberState.RECONCILING, MemberState.ACKNOWLEDGING)

    # ---- heartbeats ---------------------------------------------------------------------
    def time_to_heartbeat(self, now: float) -> float:
        """Milliseconds until a heartbeat is due (inf: none is wanted now)."""
        if self._in_flight or self.state in (MemberState.UNSUBSCRIBED, MemberState.FENCED,
                                             MemberState.STALE, MemberState.LEAVING,
                                             MemberState.LEFT, MemberState.FATAL):
            return float("inf")
        return max(0.0, self._next_heartbeat - now)

    def heartbeat_request(self, now: float, force: bool = False) -> dict[str, Any] | None:
        """The body of the heartbeat due now (it is then in flight), or None. ``force``:
        one now even if not due (to learn the current epoch), if the member heartbeats."""
        wait = self.time_to_heartbeat(now)
        if wait == float("inf") or (wait > 0 and not force):
            return None
        self._in_flight = True
        return {"group_id": self.group_id, "member_id": self.member_id,
                "member_epoch": self.member_epoch, "instance_id": self.instance_id,
                "rack_id": None, "rebalance_timeout_ms": self.rebalance_timeout_ms,
                "subscribed_topic_names": list(self.topics), "subscribed_topic_regex": None,
                "server_assignor": self.server_assignor,
                "topic_partitions": _grouped(self.owned)}

    def on_heartbeat(self, response: Any, now: float) -> bool:
        """Take the answer to the heartbeat in flight. True when the coordinator must be
        looked up again (it moved, or is not there yet)."""
        self._in_flight = False
        if self.state in (MemberState.LEAVING, MemberState.LEFT, MemberState.UNSUBSCRIBED):
            return False
        code = response.error_code
        if code in COORDINATOR_ERRORS:
            self._next_heartbeat = now + self.retry_backoff_ms
            return code != CoordinatorLoadInProgress.code
        if code in FENCED:
            self._fence(MemberState.FENCED, now)
            return False
        if code:
            self.state = MemberState.FATAL
            self.error = error_for_code(code)(
                f"group {self.group_id!r}: the coordinator refused the member's heartbeat: "
                f"{response.error_message or error_for_code(code).__name__}")
            return False
        if self.state in (MemberState.FENCED, MemberState.STALE, MemberState.FATAL):
            return False  # an answer that crossed the fence: the member joins afresh
        if response.member_id:
            self.member_id = response.member_id
        self.member_epoch = response.member_epoch
        self.heartbeat_interval_ms = response.heartbeat_interval_ms
        self._next_heartbeat = now + response.heartbeat_interval_ms
        if response.assignment is not None:
            self.assignment = frozenset((tp.topic_id, p) for tp in response.assignment.topic_partitions
                                        for p in tp.partitions)
        if self.assignment is None:
            self.state = MemberState.JOINING if self.member_epoch == JOIN_EPOCH else self.state
        elif self.assignment != self.owned:
            self.state = MemberState.RECONCILING
        else:
            self.state = MemberState.STABLE
        return False

    def on_heartbeat_failed(self, now: float) -> None:
        """The heartbeat got no answer (timeout, disconnect): try again after a backoff."""
        self._in_flight = False
        self._next_heartbeat = now + self.retry_backoff_ms

    # ---- losing the membership ----------------------------------------------------------
    def _fence(self, state: MemberState, now: float) -> None:
        self.state = state
        self.assignment = None
        if not self.owned:
            self._join(now)

    def poll_timer_expired(self) -> dict[str, Any] | None:
        """The application stopped polling for max.poll.interval.ms: the body of the leave
        heartbeat to send (the member is STALE until the application polls again), or None
        if the member is not in the group."""
        if not self.in_group and self.state is not MemberState.JOINING:
            return None
        body = self._leave_body(LEAVE_EPOCH)
        self.state = MemberState.STALE
        self.assignment = None
        return body

    def polled(self, now: float) -> None:
        """The application polls: a stale member without partitions joins again."""
        if self.state is MemberState.STALE and not self.owned:
            self._join(now)

    def leave_request(self) -> dict[str, Any] | None:
        """Closing: the body of the leave heartbeat (epoch -1; -2 keeps a static member's
        place for its session timeout), or None if the member is not in the group."""
        member = self.in_group or self.state is MemberState.JOINING
        self.state = MemberState.LEAVING
        if not member:
            return None
        return self._leave_body(LEAVE_EPOCH if self.instance_id is None else STATIC_LEAVE_EPOCH)

    def left(self) -> None:
        self.state = MemberState.LEFT
        self.owned = frozenset()
        self.assignment = None

    def _leave_body(self, epoch: int) -> dict[str, Any]:
        return {"group_id": self.group_id, "member_id": self.member_id, "member_epoch": epoch,
                "instance_id": self.instance_id, "rack_id": None, "rebalance_timeout_ms": -1,
                "subscribed_topic_names": None, "subscribed_topic_regex": None,
                "server_assignor": None, "topic_partitions": None}

    # ---- reconciliation (the application's thread) -------------------------------------
    def reconciliation(self, name_of: Callable[[uuid.UUID], str | None]) -> Reconciliation | None:
        """What the application must do about its partitions now, or None (nothing, or the
        names of some assigned topic ids are not known yet: :attr:`unresolved`)."""
        if self.state in (MemberState.FENCED, MemberState.STALE):
            if not self.owned:
                return None
            return Reconciliation(self._named(self.owned), [], True, frozenset(),
                                  dict(self._names))
        if self.state is not MemberState.RECONCILING or self.assignment is None:
            return None
        target = self.assignment
        names = dict(self._names)
        for topic_id in {t for t, _ in target}:
            name = names.get(topic_id) or name_of(topic_id)
            if name is None:
                return None
            names[topic_id] = name
        self._names = names
        return Reconciliation(self._named(self.owned - target), self._named(target - self.owned),
                              False, target, names)

    def unresolved(self, name_of: Callable[[uuid.UUID], str | None]) -> bool:
        """Some assigned topic id has no known name (metadata must be refreshed)."""
        return self.assignment is not None and any(
            t not in self._names and name_of(t) is None for t, _ in self.assignment)

    def revoked(self, rec: Reconciliation) -> None:
        """The application gave up ``rec.revoked``: no longer reported as owned."""
        gone = {(tid, tp.partition) for tid, name in rec.names.items()
                for tp in rec.revoked if tp.topic == name}
        self.owned = self.owned - gone

    def reconciled(self, rec: Reconciliation, now: float) -> None:
        """The application did ``rec``: it owns ``rec.target``; acknowledge at once. Fenced
        meanwhile, it still owns them (and will lose them next); lost, it joins again."""
        self.owned = rec.target
        if self.state in (MemberState.FENCED, MemberState.STALE):
            if not self.owned:
                self._join(now)
            return
        if self.in_group and self.assignment is not None:
            self.state = (MemberState.ACKNOWLEDGING if self.assignment == self.owned
                          else MemberState.RECONCILING)
        self._next_heartbeat = now

    def _named(self, partitions: Iterable[Partition]) -> list[TopicPartition]:
        return sorted(TopicPartition(self._names[t], p) for t, p in partitions)


def _grouped(partitions: Iterable[Partition]) -> list[dict[str, Any]]:
    by_topic: dict[uuid.UUID, list[int]] = {}
    for topic_id, p in partitions:
        by_topic.setdefault(topic_id, []).append(p)
    return [{"topic_id": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())]
