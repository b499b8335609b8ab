"""A Fetch that waits in the fetch purgatory for ``min_bytes`` until ``max_wait_ms``.

A consumer fetch that finds fewer than ``min_bytes`` below the high watermark (a follower
fetch: below the log end offset) does not answer at once: it is parked as a
:class:`DelayedFetch` watching each of its partitions. Whenever one of those partitions
changes (an append, a high watermark move, a deletion), ``check_and_complete`` on that
partition's key calls :meth:`try_complete`, which completes the fetch when

* enough bytes are now available across its partitions (``>= min_bytes``), or
* one of its partitions is no longer here (deleted topic, leadership moved away), or
  its fetch offset is no longer valid: the answer then carries that partition's error.

A follower's fetch naming a partition this broker does not lead yet, or not yet in the
follower's leader epoch (``await_metadata``: the follower applied the controller's newest
image first, and this broker's metadata poll is a moment behind), waits too instead of
being refused: the image's arrival checks the partition's key, and the fetch then goes on
as any other. Refused, the follower would back off and miss the first records.

Otherwise the timing wheel expires it at ``max_wait_ms`` and it answers with what there
is. Either way the read happens once, in :meth:`on_complete`, so the response reflects
the log at completion time. An idle consumer therefore costs the broker nothing but a
timer entry: no polling loop anywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..protocol.errors import KafkaError
from ..purgatory import DelayedOperation

if TYPE_CHECKING:
    from .replica_manager_types import FetchReader, FetchResult, FetchSpec


class DelayedFetch(DelayedOperation):
    def __init__(self, max_wait_ms: int, specs: list[FetchSpec], max_bytes: int, min_bytes: int,
                 is_follower: bool, replica_manager: FetchReader,
                 respond: Callable[[list[FetchResult]], None], read_committed: bool = False,
                 zero_copy: bool = False, await_metadata: bool = False) -> None:
        super().__init__(max_wait_ms)
        self.await_metadata = await_metadata
        self.zero_copy = zero_copy
        self.read_committed = read_committed
        self.specs = specs
        self.max_bytes = max_bytes
        self.min_bytes = min_bytes
        self.is_follower = is_follower
        self.replica_manager = replica_manager
        self.respond = respond

    def try_complete(self) -> bool:
        available = 0
        for spec in self.specs:
            try:
                p = self.replica_manager.partition(spec.topic, spec.partition)
            except KafkaError:
                if self.await_metadata:
                    continue  # not here yet: the image that brings it checks this key
                return self.force_complete()  # gone: answer with the error now
            if not p.is_leader or spec.current_leader_epoch > p.leader_epoch:
                if self.await_metadata:
                    continue  # this broker's image is behind the follower's
                return self.force_complete()  # leadership moved: answer NOT_LEADER now
            upper = p.log_end_offset if self.is_follower else p.high_watermark
            if spec.fetch_offset > upper or spec.fetch_offset < p.log_start_offset:
                return self.force_complete()  # out of range now: answer with the error
            if self.read_committed:
                upper = p.log.last_stable_offset  # a marker moves it (and checks this op)
            if spec.fetch_offset < upper:
                available += p.bytes_available(spec.fetch_offset, upper, self.min_bytes - available)
                if available >= self.min_bytes:
                    return self.force_complete()
        return False

    def on_expiration(self) -> None:
        pass

    def on_complete(self) -> None:
        self.respond(self.replica_manager.read(self.specs, self.max_bytes, self.is_follower,
                                               read_committed=self.read_committed,
                                               zero_copy=self.zero_copy))
