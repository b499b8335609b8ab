"""One topic-partition hosted by this broker, as leader or follower.

State, all guarded by ``self.lock`` (appends, follower-fetch updates, leadership changes
and ISR changes all take it; reads of the log take no lock):

* ``leader_id``, ``leader_epoch``, ``partition_epoch``, ``replicas``, ``isr``: from the
  controller's image (the ISR also changes when the controller accepts our AlterPartition).
* on the leader, per follower: its log end offset and log start offset as of its last
  fetch and the last time it was caught up (``last_caught_up_ms``), which drive the high
  watermark, the low watermark and the ISR.

High watermark rule (leader): ``hw = min(LEO of every ISR member)``, never moving
backwards. With an ISR of one, every append moves it. A follower sets its HW from the
leader's (``min(leader hw, own LEO)``) on every fetch response. Consumers read only below
the HW, so they never see a record that a leader change could still discard.

ISR rules (leader): a follower whose ``last_caught_up_ms`` is older than
``replica.lag.time.max.ms`` leaves the ISR; a follower outside the ISR whose LEO has
reached the HW (and the start of the leader's current epoch) rejoins, unless its broker is
fenced (the controller would refuse it). A follower counts as
caught up when it fetched from at least the LEO the leader had at its previous fetch.

acks=all: an append is acknowledged once ``hw >= its last offset + 1``; if the ISR is
smaller than ``min.insync.replicas`` the append is refused up front (NOT_ENOUGH_REPLICAS).

DeleteRecords: the leader moves its log start offset (:meth:`Partition.delete_records_on_leader`);
followers take the leader's log start offset from each fetch response and report theirs in
the next fetch. The *low watermark* is the smallest log start offset over the ISR; a
DeleteRecords request is answered once it reached the requested offset.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import dataclass

from ..log import Log
from ..protocol.errors import (
    FencedLeaderEpoch,
    KafkaError,
    NotEnoughReplicas,
    NotEnoughReplicasAfterAppend,
    NotLeaderOrFollower,
    OffsetOutOfRange,
    PolicyViolation,
    UnknownLeaderEpoch,
)
from .partition_traffic import PartitionTraffic


@dataclass
class AppendResult:
    base_offset: int
    last_offset: int
    log_start_offset: int


@dataclass
class FollowerState:
    leo: int = -1
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = -1
    last_fetch_ms: int = 0
    log_start_offset: int = -1


class Partition:
    def __init__(self, topic: str, index: int, log: Log, broker_id: int, min_isr: int = 1) -> None:
        self.topic = topic
        self.index = index
        self.log = log
        self.broker_id = broker_id
        self.min_isr = min_isr
        self.lock = threading.RLock()
        self.leader_id = -1
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: list[int] = [broker_id]
        self.isr: list[int] = []
        self.followers: dict[int, FollowerState] = {}
        self.isr_change_pending = False
        #: bytes and records produced here as leader, bytes fetched by consumers
        self.traffic = PartitionTraffic()

    # ---- leadership ---------------------------------------------------------------------
    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    def make_leader(self, leader_epoch: int, partition_epoch: int, replicas: list[int], isr: list[int],
                    now_ms: int) -> bool:
        """Become (or stay) leader; returns True if this is a new leader epoch."""
        with self.lock:
            new_epoch = not self.is_leader or leader_epoch != self.leader_epoch
            self.leader_id = self.broker_id
            self.leader_epoch = leader_epoch
            self.partition_epoch = partition_epoch
            self.replicas = list(replicas)
            self.isr = list(isr)
            if new_epoch:
                # Followers must prove again that they are caught up with this leader.
                self.followers = {r: FollowerState(last_caught_up_ms=now_ms)
                                  for r in replicas if r != self.broker_id}
                self.isr_change_pending = False
            self.maybe_increment_hw()
            return new_epoch

    def make_follower(self, leader_id: int, leader_epoch: int, partition_epoch: int,
                      replicas: list[int], isr: list[int]) -> bool:
        """Follow ``leader_id``; returns True if the leader or its epoch changed."""
        with self.lock:
            changed = leader_id != self.leader_id or leader_epoch != self.leader_epoch
            self.leader_id = leader_id
            self.leader_epoch = leader_epoch
            self.partition_epoch = partition_epoch
            self.replicas = list(replicas)
            self.isr = list(isr)
            self.followers = {}
            return changed

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """A request naming a leader epoch must name ours (-1: not checked)."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpoch(f"{self.topic}-{self.index}: epoch {current_leader_epoch} is older "
                                    f"than the current leader epoch {self.leader_epoch}")
        raise UnknownLeaderEpoch(f"{self.topic}-{self.index}: epoch {current_leader_epoch} is newer "
                                 f"than the current leader epoch {self.leader_epoch}")

    def check_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderOrFollower(f"broker {self.broker_id} is not the leader of "
                                      f"{self.topic}-{self.index} (leader: {self.leader_id})")

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self.log.epochs.end_offset_for(epoch, self.log.log_end_offset)

    # ---- appends and the high watermark ---------------------------------------------------
    def append_records_to_leader(self, records: bytes | memoryview, required_acks: int, *,
                                 markers: bool = False, in_place: bool = False) -> AppendResult:
        with self.lock:
            self.check_leader()
            if required_acks == -1 and len(self.isr) < self.min_isr:
                raise NotEnoughReplicas(
                    f"{self.topic}-{self.index}: {len(self.isr)} in-sync replica(s) {self.isr}, "
                    f"fewer than min.insync.replicas={self.min_isr}")
            info = self.log.append_as_leader(records, self.leader_epoch, markers=markers,
                                             in_place=in_place)
            if not markers:
                self.traffic.record_in(len(records), info.num_records)
            self.maybe_increment_hw()
            return AppendResult(info.first_offset, info.last_offset, self.log.log_start_offset)

    def maybe_increment_hw(self) -> bool:
        """Move the HW to the minimum LEO over the ISR; True if it moved. Leader only."""
        with self.lock:
            if not self.is_leader:
                return False
            hw = self.log.log_end_offset
            for r in self.isr:
                if r != self.broker_id:
                    state = self.followers.get(r)
                    hw = min(hw, state.leo if state is not None else -1)
            if hw > self.log.high_watermark:
                self.log.high_watermark = hw
                return True
            return False

    def check_enough_replicas_reached(self, required_offset: int) -> tuple[bool, KafkaError | None]:
        """For a waiting acks=all append: (done, error)."""
        with self.lock:
            if not self.is_leader:
                return True, NotLeaderOrFollower(f"leadership of {self.topic}-{self.index} moved")
            if self.log.high_watermark >= required_offset:
                if len(self.isr) < self.min_isr:
                    return True, NotEnoughReplicasAfterAppend(
                        f"{self.topic}-{self.index}: appended, but the ISR shrank to {self.isr}")
                return True, None
            return False, None

    def update_follower_fetch(self, replica_id: int, fetch_offset: int, now_ms: int,
                              log_start_offset: int = -1) -> bool:
        """Record a follower's fetch (its LEO is ``fetch_offset``, its log start offset
        ``log_start_offset``, -1 if it did not say); True if the HW moved."""
        with self.lock:
            if not self.is_leader:
                return False
            state = self.followers.get(replica_id)
            if state is None:
                return False
            state.log_start_offset = log_start_offset
            leader_leo = self.log.log_end_offset
            if fetch_offset >= leader_leo:
                state.last_caught_up_ms = now_ms
            elif fetch_offset >= state.last_fetch_leader_leo >= 0:
                state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
            state.leo = fetch_offset
            state.last_fetch_leader_leo = leader_leo
            state.last_fetch_ms = now_ms
            if replica_id not in self.isr and self._can_join_isr(state):
                self.isr_change_pending = True
            return self.maybe_increment_hw()

    def _can_join_isr(self, state: FollowerState) -> bool:
        epoch_start = self.log.epochs.end_offset_for(self.leader_epoch - 1, self.log.log_end_offset)[1] \
            if self.leader_epoch > 0 else 0
        return state.leo >= self.log.high_watermark and state.leo >= max(epoch_start, 0)

    def proposed_isr(self, now_ms: int, lag_time_max_ms: int,
                     fenced: Collection[int] = ()) -> list[int] | None:
        """The ISR this leader wants now, or None if it is fine as it is. A follower joins
        only if it is caught up and its broker is not ``fenced``."""
        with self.lock:
            if not self.is_leader:
                return None
            isr = [self.broker_id]
            for r in self.replicas:
                if r == self.broker_id:
                    continue
                state = self.followers.get(r)
                if state is None:
                    continue
                if r in self.isr:
                    if now_ms - state.last_caught_up_ms <= lag_time_max_ms:
                        isr.append(r)
                elif r not in fenced and self._can_join_isr(state) \
                        and now_ms - state.last_caught_up_ms <= lag_time_max_ms:
                    isr.append(r)
            self.isr_change_pending = False
            if sorted(isr) == sorted(self.isr):
                return None
            return [r for r in self.replicas if r in isr]

    def apply_isr(self, isr: list[int], partition_epoch: int) -> None:
        with self.lock:
            self.isr = list(isr)
            self.partition_epoch = partition_epoch
            self.maybe_increment_hw()

    # ---- DeleteRecords ------------------------------------------------------------------
    def delete_records_on_leader(self, offset: int) -> tuple[int, int]:
        """Move the leader's log start offset up to ``offset`` (-1: the high watermark).

        Returns (the offset asked for, the low watermark now). Raises
        NOT_LEADER_OR_FOLLOWER, OFFSET_OUT_OF_RANGE (negative, or above the high
        watermark) or POLICY_VIOLATION (a log whose ``cleanup.policy`` lacks ``delete``,
        as Kafka refuses).
        """
        with self.lock:
            self.check_leader()
            if not self.log.config.deletes:
                raise PolicyViolation(f"records of {self.topic}-{self.index} cannot be deleted: "
                                      f"its cleanup.policy does not include delete")
            requested = self.log.high_watermark if offset == -1 else offset
            if requested < 0:
                raise OffsetOutOfRange(f"{self.topic}-{self.index}: cannot delete records before "
                                       f"offset {offset}")
            self.log.delete_records_before(requested)
            return requested, self._low_watermark()

    def _low_watermark(self) -> int:
        low = self.log.log_start_offset
        for r in self.isr:
            if r != self.broker_id:
                state = self.followers.get(r)
                low = min(low, state.log_start_offset if state is not None else -1)
        return low

    def check_low_watermark_reached(self, required_offset: int) -> tuple[bool, int, KafkaError | None]:
        """For a waiting DeleteRecords: (done, low watermark, error)."""
        with self.lock:
            if not self.is_leader:
                return True, -1, NotLeaderOrFollower(f"leadership of {self.topic}-{self.index} moved")
            low = self._low_watermark()
            return low >= required_offset, low, None

    # ---- reads ------------------------------------------------------------------------
    def bytes_available(self, offset: int, upper: int, enough: int) -> int:
        """Bytes of whole batches in [offset, upper), counting no further than ``enough``
        (at least one batch is counted when there is one)."""
        if offset >= upper:
            return 0
        # A zero-copy read only finds the batch boundaries: no bytes are read to be counted.
        records = self.log.read(offset, max(enough, 1), max_offset=upper, min_one_batch=True,
                                zero_copy=True).records
        n = len(records)
        if not isinstance(records, bytes):
            records.release()
        return n

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset
