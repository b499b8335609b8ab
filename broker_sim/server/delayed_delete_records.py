"""A DeleteRecords request that waits for the ISR to move its log start offsets.

The leader moves its own log start offset at once; its followers learn it from their next
fetch response and report their own in the fetch after that. Until the partition's *low
watermark* (the smallest log start offset over the ISR,
:meth:`~.partition.Partition.check_low_watermark_reached`) reaches the requested offset,
the request waits as a :class:`DelayedDeleteRecords` watching its partitions in the
delete-records purgatory; every follower fetch re-checks its partition. It answers once
every partition is done (reached, or failed: leadership moved away, NOT_LEADER_OR_FOLLOWER),
or at ``timeout_ms``, when the partitions still waiting answer REQUEST_TIMED_OUT with the
low watermark they had reached.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..protocol.errors import KafkaError, RequestTimedOut
from ..purgatory import DelayedOperation
from .replica_manager_types import PartitionLookup


@dataclass
class DeleteRecordsStatus:
    topic: str
    partition: int
    required_offset: int            # the new log start offset asked for; -1 on an early error
    low_watermark: int = -1
    error: KafkaError | None = None
    done: bool = False


class DelayedDeleteRecords(DelayedOperation):
    def __init__(self, timeout_ms: int, statuses: list[DeleteRecordsStatus], partitions: PartitionLookup,
                 respond: Callable[[list[DeleteRecordsStatus]], None]) -> None:
        super().__init__(timeout_ms)
        self.statuses = statuses
        self.partitions = partitions
        self.respond = respond

    def try_complete(self) -> bool:
        for s in self.statuses:
            if s.done:
                continue
            try:
                done, low, error = self.partitions(s.topic, s.partition).check_low_watermark_reached(
                    s.required_offset)
            except KafkaError as e:
                done, low, error = True, -1, e
            s.low_watermark = low
            if done:
                s.done, s.error = True, error
        if all(s.done for s in self.statuses):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        for s in self.statuses:
            if not s.done:
                s.done = True
                s.error = RequestTimedOut(f"{s.topic}-{s.partition}: the in-sync replicas did not "
                                          f"reach log start offset {s.required_offset} in time")
        self.respond(self.statuses)
