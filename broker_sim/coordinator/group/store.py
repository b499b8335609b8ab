"""Where groups live: the partitions of ``__consumer_offsets`` this broker leads.

A :class:`~broker_sim.coordinator.partitioned_store.PartitionedStore` (leadership, loading,
acks=all writes; see there) whose entities are groups: :class:`GroupStore` writes every
change of a group — committed offsets, the membership and assignment after a rebalance,
a consumer-protocol group's epochs and assignments, deletions — as records in Kafka's
layout (:mod:`.records`), and rebuilds the groups of a newly led partition from them.

Migration: before this store, the controller kept committed offsets in a journal of its
own. A partition whose log is still empty when it is first loaded takes over the
journal's offsets of the groups that hash to it (written as ordinary offset records), so a
data directory of an older pyq keeps its consumers' positions.

Threading: as the base class; a group's own state is guarded by the group's lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from ...common import SYSTEM_CLOCK, Clock
from ...protocol.errors import CoordinatorNotAvailable, InvalidGroupId, KafkaError
from ...protocol.records.control import COMMIT
from ..partitioned_store import Appender, LoadedRecord, PartitionedStore
from ..partitioned_store import coordinator_error as coordinator_error
from ..placement import OFFSETS_TOPIC, partition_for
from . import consumer_records, records
from .config import GroupConfig
from .group import CommittedOffset, GroupMetadata, GroupState
from .member import MemberMetadata

log = logging.getLogger(__name__)

Record = records.Record


class LegacyOffsets(Protocol):
    """The controller's journal of committed offsets, as older pyq versions kept them."""

    def legacy_groups(self) -> list[str]: ...

    def legacy_offsets(self, group: str) -> dict[tuple[str, int], CommittedOffset]: ...


class GroupStore(PartitionedStore[GroupMetadata]):
    kind = "group"

    def __init__(self, config: GroupConfig, replicas: Appender, clock: Clock = SYSTEM_CLOCK,
                 legacy: LegacyOffsets | None = None) -> None:
        super().__init__(OFFSETS_TOPIC, config.offsets_topic_num_partitions,
                         config.offsets_commit_timeout_ms, config.offsets_load_buffer_size,
                         replicas, clock)
        self.config = config
        self.legacy = legacy

    def _new(self, key: str) -> GroupMetadata:
        return GroupMetadata(key, self.clock.wall_ms())

    def _key_of(self, entity: GroupMetadata) -> str:
        return entity.group_id

    def groups(self) -> list[GroupMetadata]:
        return self.entities()

    def request_error(self, group_id: str, needs_id: bool = True) -> KafkaError | None:
        """None if a request for ``group_id`` may be served here: the id is not empty (when
        the request needs one) and this broker coordinates the group, loaded."""
        if needs_id and not group_id:
            return InvalidGroupId("the group id must not be empty")
        return self.ownership_error(group_id)

    # ---- records ------------------------------------------------------------------------
    def group_record(self, group: GroupMetadata,
                     assignments: dict[str, bytes] | None = None) -> Record:
        """The group metadata record of ``group`` (its members with ``assignments``)."""
        protocol = group.protocol_name
        members = [{
            "member_id": m.member_id, "group_instance_id": m.group_instance_id,
            "client_id": m.client_id, "client_host": m.client_host,
            "rebalance_timeout": m.rebalance_timeout_ms, "session_timeout": m.session_timeout_ms,
            "subscription": m.metadata(protocol) if protocol else b"",
            "assignment": (assignments or {}).get(m.member_id, m.assignment),
        } for m in group.members.values()]
        return records.group_key(group.group_id), records.group_value({
            "protocol_type": group.protocol_type or "", "generation": group.generation_id,
            "protocol": protocol, "leader": group.leader_id,
            "current_state_timestamp": group.state_timestamp_ms, "members": members})

    @staticmethod
    def offset_records(group_id: str, offsets: dict[tuple[str, int], CommittedOffset]) -> list[Record]:
        return [(records.offset_key(group_id, t, p),
                 records.offset_value(c.offset, c.leader_epoch, c.metadata, c.commit_timestamp))
                for (t, p), c in offsets.items()]

    @staticmethod
    def tombstones(group: GroupMetadata, partitions: Iterable[tuple[str, int]] | None = None,
                   whole_group: bool = False) -> list[Record]:
        parts = list(group.offsets) if partitions is None else list(partitions)
        out: list[Record] = [(records.offset_key(group.group_id, t, p), None) for t, p in parts]
        if whole_group:
            out.append((records.group_key(group.group_id), None))
            if group.consumer is not None:
                out.extend(consumer_records.tombstones(group.consumer))
        return out

    # ---- loading ------------------------------------------------------------------------
    def _before_load(self, p: int, partition: Any) -> None:
        if partition.log.log_end_offset == 0 and self.legacy is not None:
            self._migrate(p)

    def _read_entities(self, recs: Iterator[LoadedRecord]) -> list[GroupMetadata]:
        offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        metadata: dict[str, object] = {}
        consumer: dict[str, dict[bytes, bytes]] = {}
        in_txn: dict[int, list[tuple[bytes, bytes | None]]] = {}  # producer -> its records
        for rec in recs:
            if rec.marker is not None:  # a transaction's offsets count only if it commits
                for key, raw in in_txn.pop(rec.producer_id, []) if rec.marker == COMMIT else []:
                    self._replay(key, raw, offsets, metadata, consumer)
            elif rec.key is not None:
                if rec.transactional:
                    in_txn.setdefault(rec.producer_id, []).append((rec.key, rec.value))
                else:
                    self._replay(rec.key, rec.value, offsets, metadata, consumer)
        pending: dict[str, dict[int, dict[tuple[str, int], CommittedOffset]]] = {}
        for pid, txn_recs in in_txn.items():  # still undecided: pending in their groups
            for key, raw in txn_recs:
                k = records.decode_key(key)
                if isinstance(k, records.OffsetKey) and raw is not None:
                    v = records.decode_offset_value(raw)
                    pending.setdefault(k.group, {}).setdefault(pid, {})[(k.topic, k.partition)] = \
                        CommittedOffset(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp)
        now = self.clock.wall_ms()
        out = []
        for group_id in set(offsets) | set(metadata) | set(consumer) | set(pending):
            value = metadata.get(group_id)
            group = GroupMetadata(group_id, now)
            group.offsets = offsets.get(group_id, {})
            group.pending_txn_offsets = pending.get(group_id, {})
            group.loaded_consumer_records = consumer.get(group_id, {})
            if value is not None:
                self._restore(group, value)
            if value is None and not group.offsets and not group.loaded_consumer_records \
                    and not group.pending_txn_offsets:
                continue
            out.append(group)
        return out

    @staticmethod
    def _replay(key: bytes, value: bytes | None, offsets: dict, metadata: dict,
                consumer: dict) -> None:
        k = records.decode_key(key)
        if isinstance(k, records.ConsumerKey):
            per_group = consumer.setdefault(k.group, {})
            if value is None:
                per_group.pop(key, None)
            else:
                per_group[key] = value
        elif isinstance(k, records.OffsetKey):
            per_group = offsets.setdefault(k.group, {})
            if value is None:
                per_group.pop((k.topic, k.partition), None)
            else:
                v = records.decode_offset_value(value)
                per_group[(k.topic, k.partition)] = CommittedOffset(
                    v.offset, v.leader_epoch, v.metadata, v.commit_timestamp)
        else:
            metadata[k.group] = None if value is None else records.decode_group_value(value)
            if value is None:
                offsets.pop(k.group, None)

    @staticmethod
    def _restore(group: GroupMetadata, value) -> None:  # a decoded record
        group.generation_id = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        for m in value.members:
            member = MemberMetadata(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                    m.rebalance_timeout if m.rebalance_timeout > 0 else m.session_timeout,
                                    m.session_timeout, value.protocol_type,
                                    [(value.protocol, m.subscription)] if value.protocol else [])
            member.assignment = m.assignment
            group.add(member)
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        group.state = GroupState.STABLE if group.members else GroupState.EMPTY
        if value.current_state_timestamp >= 0:
            group.state_timestamp_ms = value.current_state_timestamp

    def _migrate(self, p: int) -> None:
        assert self.legacy is not None
        n = self._num_partitions
        recs: list[Record] = []
        for group_id in self.legacy.legacy_groups():
            if partition_for(group_id, n) == p:
                recs.extend(self.offset_records(group_id, self.legacy.legacy_offsets(group_id)))
        if not recs:
            return
        done = threading.Event()
        result: list[KafkaError | None] = []

        def finished(error: KafkaError | None) -> None:
            result.append(error)
            done.set()

        self._append_to(p, recs, finished)
        if not done.wait(self.config.offsets_commit_timeout_ms / 1000 + 5) or result[0] is not None:
            raise CoordinatorNotAvailable(f"migrating offsets into {OFFSETS_TOPIC}-{p} failed: "
                                          f"{result[0] if result else 'timed out'}")
        log.info("%s-%d: took over %d committed offset(s) from the controller's journal",
                 OFFSETS_TOPIC, p, len(recs))
