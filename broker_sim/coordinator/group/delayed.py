"""The group coordinator's delayed operations: waiting joins and member liveness.

Both run on the purgatory's timing wheel and share their group's lock, so checking one
never races a request handler changing the group.

* :class:`DelayedJoin` — a rebalance waits for every known member to rejoin, at most the
  group's rebalance timeout (the largest of its members'); watched under the group's key,
  so each JoinGroup or LeaveGroup re-checks it.
* :class:`InitialDelayedJoin` — the first rebalance of an empty group waits
  ``group.initial.rebalance.delay.ms`` for more members, extended while members keep
  arriving, up to the rebalance timeout; it completes only by timing out.
* :class:`DelayedHeartbeat` — one per member, ``session.timeout.ms`` long, watched under
  the member's key. Each heartbeat completes the member's current one (its timer entry is
  unlinked, O(1)) and arms the next (one insertion into the wheel, O(1)): there is never a
  thread or a scan per member.
* :class:`ConsumerSessionTimeout` — the same for a consumer-protocol (KIP-848) member,
  ``group.consumer.session.timeout.ms`` long.
* :class:`ConsumerRevocationTimeout` — a consumer-protocol member asked to give up
  partitions has its rebalance timeout to do so, or it is fenced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ...purgatory import DelayedOperation

if TYPE_CHECKING:
    from .group import GroupMetadata


class Rebalancer(Protocol):
    """What a waiting join asks of the classic protocol (:mod:`.membership`)."""

    def can_complete_join(self, group: GroupMetadata) -> bool: ...

    def complete_join(self, group: GroupMetadata) -> None: ...

    def watch_join(self, op: DelayedJoin) -> None: ...

    def heartbeat_satisfied(self, group: GroupMetadata, member_id: str, pending: bool) -> bool: ...

    def expire_member(self, group: GroupMetadata, member_id: str, pending: bool) -> None: ...


class ConsumerTimers(Protocol):
    """What a consumer-protocol member's timers ask of :mod:`.consumer_protocol`."""

    def session_satisfied(self, group: GroupMetadata, member_id: str) -> bool: ...

    def expire_session(self, group: GroupMetadata, member_id: str) -> None: ...

    def revocation_done(self, group: GroupMetadata, member_id: str, epoch: int) -> bool: ...

    def expire_revocation(self, group: GroupMetadata, member_id: str, epoch: int) -> None: ...


class DelayedJoin(DelayedOperation):
    def __init__(self, coordinator: Rebalancer, group: GroupMetadata, timeout_ms: int) -> None:
        super().__init__(timeout_ms, group.lock)
        self.coordinator = coordinator
        self.group = group

    def try_complete(self) -> bool:
        if self.coordinator.can_complete_join(self.group):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.coordinator.complete_join(self.group)

    def on_expiration(self) -> None:
        pass


class InitialDelayedJoin(DelayedJoin):
    def __init__(self, coordinator: Rebalancer, group: GroupMetadata, delay_ms: int,
                 remaining_ms: int) -> None:
        super().__init__(coordinator, group, delay_ms)
        self.delay_ms = delay_ms
        self.remaining_ms = remaining_ms

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        with self.group.lock:
            if self.group.new_member_added and self.remaining_ms > 0:
                self.group.new_member_added = False
                delay = min(self.delay_ms, self.remaining_ms)
                self.coordinator.watch_join(InitialDelayedJoin(
                    self.coordinator, self.group, delay, max(self.remaining_ms - delay, 0)))
            else:
                self.coordinator.complete_join(self.group)


class DelayedHeartbeat(DelayedOperation):
    def __init__(self, coordinator: Rebalancer, group: GroupMetadata, member_id: str,
                 is_pending: bool, timeout_ms: int) -> None:
        super().__init__(timeout_ms, group.lock)
        self.coordinator = coordinator
        self.group = group
        self.member_id = member_id
        self.is_pending = is_pending

    def try_complete(self) -> bool:
        if self.coordinator.heartbeat_satisfied(self.group, self.member_id, self.is_pending):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.coordinator.expire_member(self.group, self.member_id, self.is_pending)


class ConsumerSessionTimeout(DelayedOperation):
    def __init__(self, protocol: ConsumerTimers, group: GroupMetadata, member_id: str,
                 timeout_ms: int) -> None:
        super().__init__(timeout_ms, group.lock)
        self.protocol = protocol
        self.group = group
        self.member_id = member_id

    def try_complete(self) -> bool:
        if self.protocol.session_satisfied(self.group, self.member_id):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.protocol.expire_session(self.group, self.member_id)


class ConsumerRevocationTimeout(DelayedOperation):
    def __init__(self, protocol: ConsumerTimers, group: GroupMetadata, member_id: str,
                 epoch: int, timeout_ms: int) -> None:
        super().__init__(timeout_ms, group.lock)
        self.protocol = protocol
        self.group = group
        self.member_id = member_id
        self.epoch = epoch

    def try_complete(self) -> bool:
        if self.protocol.revocation_done(self.group, self.member_id, self.epoch):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.protocol.expire_revocation(self.group, self.member_id, self.epoch)
