"""The group coordinator: consumer groups' membership and their committed offsets.

One object per broker that the request handlers (``server/group_apis.py``) talk to. It
composes the concepts Kafka's group coordinator keeps apart, each in its own module with
its own invariants:

* :class:`~.membership.ClassicMembership` — the classic rebalance protocol: JoinGroup,
  SyncGroup, Heartbeat, LeaveGroup, member expiry (Kafka's GroupMetadataManager, classic
  groups);
* :class:`~.consumer_protocol.ConsumerProtocol` — the consumer rebalance protocol
  (KIP-848, ConsumerGroupHeartbeat) on the same groups;
* :class:`~.offsets.OffsetManager` — committed offsets: OffsetCommit, TxnOffsetCommit and
  its transactional completion, OffsetFetch, OffsetDelete (Kafka's OffsetMetadataManager);
* :class:`~.admin.GroupAdmin` — DescribeGroups, ListGroups, DeleteGroups.

All of them keep their state in the groups of one :class:`~.store.GroupStore` (the
partitions of ``__consumer_offsets`` this broker leads) and write every change there
before it counts. The coordinator owns what they share: the two purgatories (rebalance
and heartbeat, on one timer) and the store's load and unload hooks.

Threading: request handlers call in concurrently; all work on a group happens under the
group's lock (:class:`~.group.GroupMetadata`), which its delayed operations share.
"""

from __future__ import annotations

from collections.abc import Callable

from ...common import SYSTEM_CLOCK, Clock
from ...purgatory import DelayedOperation, DelayedOperationPurgatory
from ...timer import SystemTimer
from .admin import GroupAdmin, GroupSummary
from .config import GroupConfig
from .consumer_protocol import ConsumerProtocol
from .delayed import DelayedJoin
from .group import CommittedOffset, GroupMetadata, GroupState
from .membership import ClassicMembership, JoinResult, Protocols, SyncResult
from .offsets import OffsetManager
from .store import GroupStore

__all__ = ["GroupCoordinator", "GroupSummary", "JoinResult", "SyncResult"]


class GroupCoordinator:
    def __init__(self, config: GroupConfig, store: GroupStore, clock: Clock = SYSTEM_CLOCK,
                 timer: SystemTimer | None = None, reaper_enabled: bool = True) -> None:
        self.config = config
        self.store = store
        self.clock = clock
        self.join_purgatory: DelayedOperationPurgatory[DelayedJoin] = DelayedOperationPurgatory(
            "Rebalance", timer=timer, clock=clock, reaper_enabled=reaper_enabled)
        self.heartbeat_purgatory: DelayedOperationPurgatory[DelayedOperation] = \
            DelayedOperationPurgatory("Heartbeat", timer=timer, clock=clock,
                                      reaper_enabled=reaper_enabled)
        #: the consumer rebalance protocol (KIP-848), on the same groups and purgatories.
        self.consumer = ConsumerProtocol(config, store, self.heartbeat_purgatory)
        self.membership = ClassicMembership(config, store, clock, self.join_purgatory,
                                            self.heartbeat_purgatory, self.consumer)
        self.offsets = OffsetManager(config, store, self.membership.complete_and_schedule_heartbeat)
        self.admin = GroupAdmin(store, clock)
        store.on_loaded = self._on_loaded
        store.on_unloaded = self._on_unloaded

    # ---- the classic protocol (membership.py) -------------------------------------------
    def join_group(self, group_id: str, member_id: str, instance_id: str | None, client_id: str,
                   client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                   protocol_type: str, protocols: Protocols, require_known_member_id: bool,
                   callback: Callable[[JoinResult], None]) -> None:
        self.membership.join_group(group_id, member_id, instance_id, client_id, client_host,
                                   rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                   protocols, require_known_member_id, callback)

    def sync_group(self, group_id: str, generation_id: int, member_id: str,
                   instance_id: str | None, protocol_type: str | None, protocol_name: str | None,
                   assignments: dict[str, bytes], callback: Callable[[SyncResult], None]) -> None:
        self.membership.sync_group(group_id, generation_id, member_id, instance_id,
                                   protocol_type, protocol_name, assignments, callback)

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                  generation_id: int) -> int:
        return self.membership.heartbeat(group_id, member_id, instance_id, generation_id)

    def leave_group(self, group_id: str, leaving: list[tuple[str, str | None]]
                    ) -> tuple[int, list[tuple[str, str | None, int]]]:
        return self.membership.leave_group(group_id, leaving)

    # ---- offsets (offsets.py) -----------------------------------------------------------
    def commit_offsets(self, group_id: str, member_id: str, instance_id: str | None,
                       generation_id: int, offsets: dict[tuple[str, int], CommittedOffset],
                       callback: Callable[[dict[tuple[str, int], int]], None],
                       transaction: tuple[int, int] | None = None) -> None:
        self.offsets.commit_offsets(group_id, member_id, instance_id, generation_id, offsets,
                                    callback, transaction)

    def fetch_offsets(self, group_id: str, partitions: list[tuple[str, int]] | None,
                      member_id: str | None = None, member_epoch: int = -1
                      ) -> tuple[int, dict[tuple[str, int], CommittedOffset]]:
        return self.offsets.fetch_offsets(group_id, partitions, member_id, member_epoch)

    def unstable_partitions(self, group_id: str) -> set[tuple[str, int]]:
        return self.offsets.unstable_partitions(group_id)

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]],
                       callback: Callable[[int, dict[tuple[str, int], int]], None]) -> None:
        self.offsets.delete_offsets(group_id, partitions, callback)

    def on_transaction_completed(self, producer_id: int, commit: bool, partition: int) -> None:
        self.offsets.on_transaction_completed(producer_id, commit, partition)

    # ---- whole groups (admin.py) --------------------------------------------------------
    def describe_group(self, group_id: str) -> GroupSummary:
        return self.admin.describe_group(group_id)

    def list_groups(self, states: set[str] | None = None
                    ) -> tuple[int, list[tuple[str, str, str, str]]]:
        return self.admin.list_groups(states)

    def delete_groups(self, group_ids: list[str], callback: Callable[[dict[str, int]], None]) -> None:
        self.admin.delete_groups(group_ids, callback)

    # ---- loading and unloading ----------------------------------------------------------
    def _on_loaded(self, group: GroupMetadata) -> None:
        self.consumer.on_loaded(group)
        self.membership.on_loaded(group)

    def _on_unloaded(self, group: GroupMetadata) -> None:
        with group.lock:
            self.membership.on_unloaded(group)
            group.transition_to(GroupState.DEAD, self.clock.wall_ms())
            self.consumer.on_unloaded(group)
        self.join_purgatory.check_and_complete(group.group_id)

    def shutdown(self) -> None:
        self.store.shutdown()
        self.join_purgatory.shutdown()
        self.heartbeat_purgatory.shutdown()
