"""An acks=all Produce that waits in the produce purgatory for the ISR to catch up.

After the leader appended a produce request's batches, the request cannot be answered
until every ISR member has the records, i.e. until the partition's high watermark reaches
each batch's last offset + 1. The request becomes a :class:`DelayedProduce` watching its
partitions; a follower fetch that moves a high watermark calls ``check_and_complete`` on
that partition, and :meth:`try_complete` answers once every partition is done (acked,
or failed: leadership moved away, or the ISR fell below ``min.insync.replicas`` meanwhile,
NOT_ENOUGH_REPLICAS_AFTER_APPEND). At the request's ``timeout_ms`` the timing wheel expires
it and the partitions still waiting answer REQUEST_TIMED_OUT.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..protocol.errors import KafkaError, RequestTimedOut
from ..purgatory import DelayedOperation
from .replica_manager_types import PartitionLookup


@dataclass
class ProduceStatus:
    topic: str
    partition: int
    required_offset: int            # last offset + 1; -1 when the append itself failed
    base_offset: int = -1
    log_start_offset: int = -1
    error: KafkaError | None = None
    done: bool = False


class DelayedProduce(DelayedOperation):
    def __init__(self, timeout_ms: int, statuses: list[ProduceStatus], partitions: PartitionLookup,
                 respond: Callable[[list[ProduceStatus]], None]) -> None:
        super().__init__(timeout_ms)
        self.statuses = statuses
        self.partitions = partitions
        self.respond = respond

    def try_complete(self) -> bool:
        for s in self.statuses:
            if s.done:
                continue
            try:
                done, error = self.partitions(s.topic, s.partition).check_enough_replicas_reached(
                    s.required_offset)
            except KafkaError as e:
                done, error = True, e
            if done:
                s.done, s.error = True, error
        if all(s.done for s in self.statuses):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        # Completed by the timer: whatever is still waiting timed out (as Kafka does, the
        # error is decided here, since on_expiration runs only after on_complete).
        for s in self.statuses:
            if not s.done:
                s.done = True
                s.error = RequestTimedOut(f"{s.topic}-{s.partition}: not replicated to the ISR in time")
        self.respond(self.statuses)
