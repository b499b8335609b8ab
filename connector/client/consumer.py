"""A consumer group member that hands out Arrow: ``subscribe``, ``poll``, ``commit``.

    with Consumer(bootstrap_servers="127.0.0.1:9092", group_id="billing",
                  auto_offset_reset="earliest") as consumer:          # doctest: +SKIP
        consumer.subscribe(["orders"], on_assign=print, on_revoke=print)
        while running:
            table = consumer.poll(1000)       # pyarrow.Table, Spark's Kafka schema
            handle(table)
            consumer.commit()                 # or commit_async(callback=...)

The group side (finding the coordinator, joining, heartbeats from a background thread,
commits as a member) is :class:`~.group_member.GroupMember` with ``group.protocol=classic``
(the default; JoinGroup/SyncGroup, the leader's assignment) and
:class:`~.consumer_group_member.ConsumerGroupMember` with ``group.protocol=consumer``
(KIP-848: ConsumerGroupHeartbeat, the coordinator assigns). This class owns the partitions
it was given:

* **rebalances**: ``on_revoke(partitions)`` is called with the partitions taken away (with
  ``enable.auto.commit`` their positions are committed first) and ``on_assign(partitions)``
  with those newly given. The classic protocol is eager: every rebalance takes everything
  away and gives a whole new assignment. The consumer protocol is incremental: only the
  partitions that move are revoked and assigned, and ``on_assign`` is called after every
  reconciliation, with the added partitions (maybe none), as Kafka's consumer does. A member
  fenced by the coordinator loses its partitions: ``on_revoke`` without a commit.
  Callbacks run on the thread that calls :meth:`poll`, inside it.
* **positions** start at the group's committed offset, or by ``auto.offset.reset``
  (earliest, latest; none raises) where there is none or it is out of range, and advance
  past every record :meth:`poll` returns (control batches are skipped).
* **poll** sends one Fetch per leader for all its assigned partitions, long-polling up to
  ``fetch.max.wait.ms`` (never beyond the poll's own timeout), and decodes the record sets
  straight into Arrow columns (:mod:`.columnar`), without a Python object per record.
  Partition errors send it back to the metadata (leader moved) or to the reset policy.
* **commits** are synchronous (:meth:`commit`) or not (:meth:`commit_async`, whose callback
  runs in a later poll); ``enable.auto.commit`` commits the positions asynchronously every
  ``auto.commit.interval.ms`` from :meth:`poll`, and synchronously on close.
  A commit refused because the group moved on raises
  :class:`~.group_member.CommitFailedError`.

Threading: one thread calls the consumer (like Kafka's); the heartbeat thread is internal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyarrow as pa

from broker_sim.common import SYSTEM_CLOCK, Clock
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    FencedMemberEpoch,
    OffsetOutOfRange,
    StaleMemberEpoch,
    UnknownMemberId,
    error_for_code,
)

from .aborted import AbortedTransactions
from .columnar import KAFKA_SCHEMA, KAFKA_SCHEMA_WITH_HEADERS, decode_columns
from .config import ConsumerConfig
from .consumer_group_member import ConsumerGroupMember
from .consumer_membership import Reconciliation
from .errors import ClientError, KafkaTimeoutError
from .fetcher import next_fetch_offset
from .group_member import CommitCallback, CommitFailedError, GroupMember
from .metadata import Metadata, TopicPartition
from .offsets import EARLIEST, LATEST, list_offsets
from .sync_client import SyncClient

log = logging.getLogger(__name__)

Listener = Callable[[list[TopicPartition]], None]
UNTIL_END = 2**63 - 1

__all__ = ["CommitFailedError", "Consumer", "NoOffsetForPartitionError"]


class NoOffsetForPartitionError(ClientError):
    """``auto.offset.reset=none`` and a partition has no committed offset (or it is out of
    range)."""


class Consumer:
    def __init__(self, config: ConsumerConfig | Mapping[str, Any] | None = None, *,
                 include_headers: bool = False, clock: Clock = SYSTEM_CLOCK, **options: Any) -> None:
        self.config = ConsumerConfig.coerce(config, **options)
        self.include_headers = include_headers
        self._schema = KAFKA_SCHEMA_WITH_HEADERS if include_headers else KAFKA_SCHEMA
        self._sync = SyncClient(self.config, Metadata(self.config), clock)
        self._member: GroupMember | ConsumerGroupMember = (
            ConsumerGroupMember(self.config, clock) if self.config.uses_consumer_protocol
            else GroupMember(self.config, clock))
        self._topics: list[str] = []
        self._on_assign: Listener | None = None
        self._on_revoke: Listener | None = None
        self._assignment: list[TopicPartition] = []
        self._positions: dict[TopicPartition, int] = {}
        self._next_auto_commit = 0.0
        self._started = False
        self._closed = False

    # ---- subscription -------------------------------------------------------------------
    def subscribe(self, topics: Iterable[str], on_assign: Listener | None = None,
                  on_revoke: Listener | None = None) -> None:
        """Join the group for ``topics`` at the next :meth:`poll`."""
        self._topics = sorted(set(topics))
        if not self._topics:
            raise ValueError("subscribe needs at least one topic")
        self._on_assign, self._on_revoke = on_assign, on_revoke
        self._sync.metadata.add_topics(*self._topics)
        if isinstance(self._member, ConsumerGroupMember):
            self._member.subscribe(self._topics)
        else:
            self._member.rejoin_needed = True
        if not self._started:
            self._member.start()
            self._started = True

    def assignment(self) -> list[TopicPartition]:
        return list(self._assignment)

    def position(self, tp: TopicPartition) -> int:
        """The offset of the next record :meth:`poll` returns for ``tp``."""
        return self._positions[tp]

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Read ``tp`` (assigned to this consumer) from ``offset`` on: the next :meth:`poll`
        fetches there (out of range: ``auto.offset.reset``). From ``on_assign``, this
        replaces the starting position the group's committed offset gave."""
        if tp not in self._positions:
            raise ValueError(f"cannot seek {tp}: not assigned to this consumer "
                             f"(assigned: {sorted(self._positions)})")
        if offset < 0:
            raise ValueError(f"cannot seek {tp} to {offset}: offsets are >= 0")
        self._positions[tp] = offset

    @property
    def member_id(self) -> str:
        return self._member.member_id

    @property
    def generation(self) -> int:
        return self._member.generation

    # ---- the poll loop ------------------------------------------------------------------
    def poll(self, timeout_ms: float = 1000) -> pa.Table:
        """Records of the assigned partitions, at most one fetch's worth; empty if none
        arrived within ``timeout_ms``. Rebalances and commit callbacks happen in here."""
        if self._closed:
            raise ClientError("the consumer is closed")
        if not self._topics:
            raise ClientError("poll before subscribe: call subscribe(topics) first")
        deadline = self._sync.now() + timeout_ms
        self._member.polled()
        if self._member.fatal is not None:
            raise self._member.fatal
        member = self._member
        if isinstance(member, ConsumerGroupMember):
            self._reconcile(member)
            if not self._assignment:
                self._await_assignment(member, deadline)
        elif member.rejoin_needed and not self._rebalance(deadline):
            return self._schema.empty_table()
        self._member.run_callbacks()
        self._maybe_auto_commit()
        if not self._assignment:
            self._sync.client.poll(max(0.0, deadline - self._sync.now()), self._sync.now())
            return self._schema.empty_table()
        return self._fetch(deadline)

    def _reconcile(self, member: ConsumerGroupMember) -> None:
        """The consumer protocol: give up what the coordinator takes away, then take what it
        gives, and report it done (the member acknowledges at once)."""
        rec = member.reconciliation(self._sync.metadata)
        if rec is None:
            return
        if rec.revoked:
            self._revoke(rec.revoked, lost=rec.lost)
            member.revoked(rec)
        if not rec.lost and not self._take(rec):
            return  # the starting offsets could not be fetched: again at the next poll
        member.reconciled(rec)

    def _take(self, rec: Reconciliation) -> bool:
        try:
            positions = self._starting_positions(rec.assigned)
        except (CommitFailedError, KafkaTimeoutError, StaleMemberEpoch, UnknownMemberId,
                FencedMemberEpoch) as e:
            log.info("group %s: starting offsets of %s not fetched: %s", self.config.group_id,
                     rec.assigned, e)
            return False
        if rec.assigned and not self._assignment:
            self._next_auto_commit = self._sync.now() + self.config.auto_commit_interval_ms
        self._assignment = sorted(set(self._assignment) | set(rec.assigned))
        self._positions.update(positions)
        if self._on_assign is not None:
            self._on_assign(list(rec.assigned))
        return True

    def _await_assignment(self, member: ConsumerGroupMember, deadline: float) -> None:
        """No partitions yet: wait within the poll's time for the coordinator's word, and
        take it (metadata for new topic ids is fetched meanwhile)."""
        while not self._assignment and self._sync.now() < deadline:
            if not member.wait_for_news(0):
                self._sync.client.poll(min(50.0, max(0.0, deadline - self._sync.now())),
                                       self._sync.now())
            self._reconcile(member)

    def _rebalance(self, deadline: float) -> bool:
        """Give up the partitions (once per rebalance) and take the rejoin forward; True
        once the new assignment is in place."""
        assert isinstance(self._member, GroupMember)
        if self._assignment:
            self._revoke(self._assignment)
        assigned = self._member.poll_join(self._topics, deadline)
        if assigned is None:
            return False
        self._assignment = assigned
        self._positions = self._starting_positions(assigned)
        self._next_auto_commit = self._sync.now() + self.config.auto_commit_interval_ms
        if self._on_assign is not None:
            self._on_assign(list(assigned))
        return True

    def _revoke(self, partitions: list[TopicPartition], lost: bool = False) -> None:
        """Give ``partitions`` up: commit their positions first (auto commit; not when they
        are ``lost``, as another member may own them already), tell ``on_revoke``."""
        positions = {tp: self._positions[tp] for tp in partitions if tp in self._positions}
        if self.config.enable_auto_commit and positions and not lost:
            try:
                self._member.commit(positions, self._sync.deadline())
            except (CommitFailedError, KafkaTimeoutError) as e:
                log.info("group %s: commit before giving up partitions failed: %s",
                         self.config.group_id, e)
        if self._on_revoke is not None:
            self._on_revoke(list(partitions))
        gone = set(partitions)
        self._assignment = [tp for tp in self._assignment if tp not in gone]
        self._positions = {tp: o for tp, o in self._positions.items() if tp not in gone}

    def _starting_positions(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        if not partitions:
            return {}
        deadline = self._sync.deadline()
        positions = self._member.committed(partitions, deadline)
        missing = [tp for tp in partitions if tp not in positions]
        positions.update(self._reset(missing, deadline))
        return positions

    def _reset(self, partitions: list[TopicPartition], deadline: float) -> dict[TopicPartition, int]:
        if not partitions:
            return {}
        policy = self.config.auto_offset_reset
        if policy == "none":
            raise NoOffsetForPartitionError(
                f"group {self.config.group_id!r} has no valid committed offset for {partitions} "
                "and auto.offset.reset is none")
        found = list_offsets(self._sync, dict.fromkeys(partitions, EARLIEST if policy == "earliest"
                                                       else LATEST), deadline,
                             self.config.read_committed)
        return {tp: o.offset for tp, o in found.items()}

    def _maybe_auto_commit(self) -> None:
        if self.config.enable_auto_commit and self._positions \
                and self._sync.now() >= self._next_auto_commit:
            self._next_auto_commit = self._sync.now() + self.config.auto_commit_interval_ms
            self._member.commit_async(dict(self._positions), None)

    def _fetch(self, deadline: float) -> pa.Table:
        sync, cfg = self._sync, self.config
        by_node: dict[int, list[TopicPartition]] = {}
        for tp in self._assignment:
            node = sync.metadata.cluster.leader_for(tp)
            if node is None or node < 0:
                sync.metadata.request_update()
                continue
            by_node.setdefault(node, []).append(tp)
        wait_ms = int(max(0, min(cfg.fetch_max_wait_ms, deadline - sync.now())))
        futures = []
        for node, tps in by_node.items():
            if not sync.client.ready(node, sync.now()):
                continue
            topics: dict[str, list[dict[str, Any]]] = {}
            for tp in tps:
                topics.setdefault(tp.topic, []).append({
                    "partition": tp.partition, "current_leader_epoch": -1,
                    "fetch_offset": self._positions[tp], "log_start_offset": -1,
                    "partition_max_bytes": cfg.max_partition_fetch_bytes})
            body = {"replica_id": -1, "max_wait_ms": wait_ms, "min_bytes": cfg.fetch_min_bytes,
                    "max_bytes": cfg.fetch_max_bytes,
                    "isolation_level": 1 if cfg.read_committed else 0, "session_id": 0,
                    "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
                    "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}
            futures.append(sync.client.send(node, ApiKey.FETCH, body, sync.now(),
                                            timeout_ms=cfg.request_timeout_ms + wait_ms))
        if not futures:
            sync.client.poll(max(0.0, min(deadline - sync.now(), cfg.retry_backoff_ms)), sync.now())
            return self._schema.empty_table()
        sync.poll_until(lambda: all(f.is_done for f in futures),
                        max(deadline, sync.now() + wait_ms) + cfg.request_timeout_ms, "fetch responses")
        batches = []
        for future in futures:
            if future.exception is not None:
                log.info("group %s: fetch failed: %s", cfg.group_id, future.exception)
                sync.metadata.request_update()
                continue
            for t in future.value.responses:
                for p in t.partitions:
                    batch = self._partition_records(TopicPartition(t.topic, p.partition_index), p)
                    if batch is not None:
                        batches.append(batch)
        return pa.Table.from_batches(batches, schema=self._schema)

    def _partition_records(self, tp: TopicPartition, data: Any) -> pa.RecordBatch | None:
        if tp not in self._positions:
            return None  # revoked while the fetch was out
        if data.error_code:
            error = error_for_code(data.error_code)(f"fetch of {tp}")
            if isinstance(error, OffsetOutOfRange):
                log.info("group %s: %s at offset %d is out of range; resetting (%s)",
                         self.config.group_id, tp, self._positions[tp], self.config.auto_offset_reset)
                self._positions.update(self._reset([tp], self._sync.deadline()))
            elif error.retriable:
                self._sync.metadata.request_update()
            else:
                raise error
            return None
        records, position = data.records, self._positions[tp]
        if not records:
            return None
        keep = (AbortedTransactions(data.aborted_transactions).keeps
                if self.config.read_committed else None)
        columns = decode_columns(tp.topic, tp.partition, records, position, UNTIL_END,
                                 self.include_headers, self.config.check_crcs, keep)
        self._positions[tp] = max(next_fetch_offset(records, position),
                                  columns.next_offset if columns is not None else position)
        return columns.to_arrow(self.include_headers) if columns is not None and len(columns) else None

    # ---- commits ------------------------------------------------------------------------
    def commit(self, offsets: Mapping[TopicPartition, int] | None = None,
               timeout_ms: float | None = None) -> None:
        """Commit ``offsets`` (the next offsets to read; default: the current positions)."""
        chosen = dict(self._positions if offsets is None else offsets)
        if chosen:
            self._member.commit(chosen, self._sync.deadline(timeout_ms))

    def commit_async(self, offsets: Mapping[TopicPartition, int] | None = None,
                     callback: CommitCallback | None = None) -> None:
        """Commit without waiting; ``callback(offsets, error)`` runs in a later poll."""
        chosen = dict(self._positions if offsets is None else offsets)
        if chosen:
            self._member.commit_async(chosen, callback)

    def committed(self, partitions: Iterable[TopicPartition],
                  timeout_ms: float | None = None) -> dict[TopicPartition, int]:
        return self._member.committed(list(partitions), self._sync.deadline(timeout_ms))

    # ---- lifecycle ----------------------------------------------------------------------
    def close(self) -> None:
        """Commit (with auto commit), give up the partitions, leave the group (a static
        member stays, to come back within its session timeout)."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._assignment and self._member.fatal is None:
                self._revoke(self._assignment)
        finally:
            self._member.close(leave=self._started)
            self._sync.close()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
