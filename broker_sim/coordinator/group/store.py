"""Where groups live: the partitions of ``__consumer_offsets`` this broker leads.

:class:`GroupStore` keeps, for each partition this broker leads, the groups that hash to it
(:func:`~broker_sim.coordinator.placement.partition_for`), and writes every change of a
group — committed offsets, the membership and assignment after a rebalance, deletions —
as records to that partition through the replica manager, with acks=all, answering only
once the write is replicated to the in-sync replicas and flushed to disk on the leader.
So a commit that was acknowledged survives the coordinator's crash: the next leader of
the partition reads it back.

Ownership follows leadership. When the broker becomes leader of a partition the
partition is LOADING: its log is read from start to end on the loader thread (the latest
record per key wins; a null value deletes), and until that is done every request for its
groups gets COORDINATOR_LOAD_IN_PROGRESS. When it stops leading the partition its groups
are unloaded (parked requests answered NOT_COORDINATOR) and requests get NOT_COORDINATOR.

Migration: before this store, the controller kept committed offsets in a journal of its
own. A partition whose log is still empty when it is first loaded takes over the
journal's offsets of the groups that hash to it (written as ordinary offset records), so a
data directory of an older pyq keeps its consumers' positions.

Threading: ``_lock`` guards the partition states and the group map; a group's own state is
guarded by the group's lock. Loads run on one loader thread, appends complete on whatever
thread completes the produce (a handler, a follower's fetch, the purgatory's timer).
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from ...common import SYSTEM_CLOCK, Clock
from ...protocol.errors import (
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    KafkaError,
    KafkaStorageError,
    MessageTooLarge,
    NotCoordinator,
    NotEnoughReplicas,
    NotEnoughReplicasAfterAppend,
    NotLeaderOrFollower,
    RecordListTooLarge,
    RequestTimedOut,
    UnknownServerError,
    UnknownTopicOrPartition,
)
from ...protocol.records.batch_header import iter_batches
from ...protocol.records.builder import RecordBatchBuilder
from ...protocol.records.reader import decode_records
from ..placement import OFFSETS_TOPIC, partition_for
from . import consumer_records, records
from .config import GroupConfig
from .group import CommittedOffset, GroupMetadata, GroupState
from .member import MemberMetadata

log = logging.getLogger(__name__)

Record = records.Record


class Appender(Protocol):
    """What the store needs from the replica manager."""

    def append(self, acks: int, timeout_ms: int, entries: list, respond: Callable) -> None: ...

    def partition(self, topic: str, index: int): ...  # noqa: ANN201 - a server Partition


class LegacyOffsets(Protocol):
    """The controller's journal of committed offsets, as older pyq versions kept them."""

    def legacy_groups(self) -> list[str]: ...

    def legacy_offsets(self, group: str) -> dict[tuple[str, int], CommittedOffset]: ...


class PartitionState(enum.Enum):
    LOADING = "loading"
    LOADED = "loaded"


def coordinator_error(e: KafkaError | None) -> KafkaError | None:
    """The error a group request reports for a failed write (Kafka's mapping)."""
    if e is None:
        return None
    if isinstance(e, (UnknownTopicOrPartition, NotEnoughReplicas, NotEnoughReplicasAfterAppend,
                      RequestTimedOut)):
        return CoordinatorNotAvailable(str(e))
    if isinstance(e, (NotLeaderOrFollower, KafkaStorageError)):
        return NotCoordinator(str(e))
    if isinstance(e, (MessageTooLarge, RecordListTooLarge)):
        return UnknownServerError(str(e))
    return e


class GroupStore:
    def __init__(self, config: GroupConfig, replicas: Appender, clock: Clock = SYSTEM_CLOCK,
                 legacy: LegacyOffsets | None = None) -> None:
        self.config = config
        self.replicas = replicas
        self.clock = clock
        self.legacy = legacy
        self._lock = threading.Lock()
        self._partitions: dict[int, tuple[int, PartitionState]] = {}  # index -> (epoch, state)
        self._num_partitions = 0
        self._groups: dict[str, GroupMetadata] = {}
        self._loader = ThreadPoolExecutor(1, thread_name_prefix="group-loader")
        self._shutdown = False
        self.on_loaded: Callable[[GroupMetadata], None] = lambda g: None
        self.on_unloaded: Callable[[GroupMetadata], None] = lambda g: None

    # ---- ownership ----------------------------------------------------------------------
    def partition_of(self, group_id: str) -> int:
        n = self._num_partitions or self.config.offsets_topic_num_partitions
        return partition_for(group_id, n)

    def ownership_error(self, group_id: str) -> KafkaError | None:
        """None if this broker coordinates ``group_id`` now, else the error to answer."""
        with self._lock:
            if self._shutdown or not self._num_partitions:
                return CoordinatorNotAvailable("the group coordinator is not available")
            p = partition_for(group_id, self._num_partitions)
            owned = self._partitions.get(p)
        if owned is None:
            return NotCoordinator(f"this broker does not coordinate group {group_id!r} "
                                  f"({OFFSETS_TOPIC}-{p})")
        if owned[1] is PartitionState.LOADING:
            return CoordinatorLoadInProgress(f"{OFFSETS_TOPIC}-{p} is loading")
        return None

    def any_loading(self) -> bool:
        with self._lock:
            return any(s is PartitionState.LOADING for _, s in self._partitions.values())

    def set_leadership(self, num_partitions: int, led: dict[int, int]) -> None:
        """The partitions of ``__consumer_offsets`` this broker leads now (index -> epoch)."""
        to_load, to_unload = [], []
        with self._lock:
            if self._shutdown:
                return
            self._num_partitions = num_partitions
            for p, (epoch, _) in list(self._partitions.items()):
                if led.get(p) != epoch:
                    del self._partitions[p]
                    to_unload.append(p)
            for p, epoch in led.items():
                if p not in self._partitions:
                    self._partitions[p] = (epoch, PartitionState.LOADING)
                    to_load.append((p, epoch))
        for p in to_unload:
            self._unload(p)
        for p, epoch in to_load:
            self._loader.submit(self._load, p, epoch)

    # ---- groups -------------------------------------------------------------------------
    def get(self, group_id: str) -> GroupMetadata | None:
        with self._lock:
            return self._groups.get(group_id)

    def get_or_create(self, group_id: str) -> GroupMetadata:
        with self._lock:
            group = self._groups.get(group_id)
            if group is None:
                group = GroupMetadata(group_id, self.clock.wall_ms())
                self._groups[group_id] = group
            return group

    def remove(self, group: GroupMetadata) -> None:
        with self._lock:
            if self._groups.get(group.group_id) is group:
                del self._groups[group.group_id]

    def groups(self) -> list[GroupMetadata]:
        with self._lock:
            return list(self._groups.values())

    # ---- writes -------------------------------------------------------------------------
    def append(self, group_id: str, recs: list[Record],
               callback: Callable[[KafkaError | None], None]) -> None:
        """Write ``recs`` to the group's partition (acks=all); ``callback(error)`` after."""
        self._append_to(self.partition_of(group_id), recs, callback)

    def _append_to(self, p: int, recs: list[Record],
                   callback: Callable[[KafkaError | None], None]) -> None:
        builder = RecordBatchBuilder()
        now = self.clock.wall_ms()
        for key, value in recs:
            builder.append(now, key, value)

        def respond(statuses: list) -> None:
            error = statuses[0].error if statuses else None
            if error is None:
                try:
                    self.replicas.partition(OFFSETS_TOPIC, p).log.flush()
                except KafkaError as e:
                    error = e
            callback(coordinator_error(error))

        self.replicas.append(-1, self.config.offsets_commit_timeout_ms,
                             [(OFFSETS_TOPIC, p, builder.build())], respond)

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
    def _still_loading(self, p: int, epoch: int) -> bool:
        with self._lock:
            return self._partitions.get(p) == (epoch, PartitionState.LOADING)

    def _load(self, p: int, epoch: int) -> None:
        try:
            if not self._still_loading(p, epoch):
                return
            partition = self.replicas.partition(OFFSETS_TOPIC, p)
            if partition.log.log_end_offset == 0 and self.legacy is not None:
                self._migrate(p)
            groups = self._read(partition)
        except Exception as e:  # noqa: BLE001 - retried: the partition stays LOADING
            log.warning("%s-%d: loading groups failed (%s); retrying", OFFSETS_TOPIC, p, e)
            time.sleep(0.5)
            if self._still_loading(p, epoch) and not self._shutdown:
                self._loader.submit(self._load, p, epoch)
            return
        with self._lock:
            if self._partitions.get(p) != (epoch, PartitionState.LOADING):
                return
            for group in groups:
                self._groups[group.group_id] = group
            self._partitions[p] = (epoch, PartitionState.LOADED)
        for group in groups:
            self.on_loaded(group)
        (log.info if groups else log.debug)("%s-%d: loaded %d group(s) in epoch %d", OFFSETS_TOPIC,
                                            p, len(groups), epoch)

    def _read(self, partition) -> list[GroupMetadata]:  # noqa: ANN001 - a server Partition
        offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        metadata: dict[str, object] = {}
        consumer: dict[str, dict[bytes, bytes]] = {}
        position = partition.log.log_start_offset
        end = partition.log.log_end_offset
        while position < end:
            data = partition.log.read(position, self.config.offsets_load_buffer_size).records
            if not data:
                break
            for pos, header in iter_batches(data):
                if not header.is_control:
                    for rec in decode_records(data, pos, header):
                        if rec.offset >= position and rec.key is not None:
                            self._replay(rec.key, rec.value, offsets, metadata, consumer)
                position = max(position, header.next_offset)
        now = self.clock.wall_ms()
        out = []
        for group_id in set(offsets) | set(metadata) | set(consumer):
            value = metadata.get(group_id)
            group = GroupMetadata(group_id, now)
            group.offsets = offsets.get(group_id, {})
            group.loaded_consumer_records = consumer.get(group_id, {})
            if value is not None:
                self._restore(group, value)
            if value is None and not group.offsets and not group.loaded_consumer_records:
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
    def _restore(group: GroupMetadata, value) -> None:  # noqa: ANN001 - a decoded record
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

    def _unload(self, p: int) -> None:
        with self._lock:
            gone = [g for g in self._groups.values() if partition_for(g.group_id, self._num_partitions) == p]
            for g in gone:
                del self._groups[g.group_id]
        for g in gone:
            self.on_unloaded(g)
        if gone:
            log.info("%s-%d: unloaded %d group(s)", OFFSETS_TOPIC, p, len(gone))

    def shutdown(self) -> None:
        with self._lock:
            self._shutdown = True
            partitions = list(self._partitions)
            self._partitions.clear()
        for p in partitions:
            self._unload(p)
        self._loader.shutdown(wait=True, cancel_futures=True)
