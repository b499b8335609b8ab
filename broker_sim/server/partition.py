"""One topic-partition hosted by this broker: its log, leader epoch and high watermark.

Invariant: ``log.high_watermark <= log.log_end_offset``; consumers only ever read below
the high watermark. With a single replica the high watermark follows the log end offset
at every append (the leader is the whole ISR). Replication replaces that rule with "the
minimum log end offset over the ISR".

Threading: appends are serialised by the log's own lock; reads run concurrently.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..log import Log
from ..protocol.errors import FencedLeaderEpoch, UnknownLeaderEpoch


@dataclass
class AppendResult:
    base_offset: int
    last_offset: int
    log_start_offset: int


class Partition:
    def __init__(self, topic: str, index: int, log: Log, broker_id: int, leader_epoch: int = 0) -> None:
        self.topic = topic
        self.index = index
        self.log = log
        self.leader_id = broker_id
        self.leader_epoch = leader_epoch
        self.replicas = [broker_id]
        self.isr = [broker_id]
        # A single replica's log is its own ISR: everything appended is committed.
        self.log.high_watermark = self.log.log_end_offset

    def append_records_to_leader(self, records: bytes | memoryview) -> AppendResult:
        info = self.log.append_as_leader(records, self.leader_epoch)
        self.log.high_watermark = self.log.log_end_offset
        return AppendResult(info.first_offset, info.last_offset, self.log.log_start_offset)

    def bytes_available(self, offset: int, upper: int, enough: int) -> int:
        """Bytes of whole batches in [offset, upper), counting no further than ``enough``
        (at least one batch is counted when there is one)."""
        if offset >= upper:
            return 0
        return len(self.log.read(offset, max(enough, 1), max_offset=upper, min_one_batch=True).records)

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """A request that names a leader epoch must name ours (-1: not checked)."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpoch(f"{self.topic}-{self.index}: epoch {current_leader_epoch} is older "
                                    f"than the current leader epoch {self.leader_epoch}")
        raise UnknownLeaderEpoch(f"{self.topic}-{self.index}: epoch {current_leader_epoch} is newer "
                                 f"than the current leader epoch {self.leader_epoch}")

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self.log.epochs.end_offset_for(epoch, self.log.log_end_offset)

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset
