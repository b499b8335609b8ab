"""Small shared types of the replica manager, kept apart so that the modules around it
(delayed fetches, fetch sessions, the replica fetcher) need not import it back: the
partition lookup, a fetch's spec and result, and :class:`FetchReader`, the view a parked
fetch has of the replica manager."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..log.file_records import FileRecords
from ..protocol.errors import KafkaError

if TYPE_CHECKING:
    from .partition import Partition

#: (topic, partition) -> Partition, raising UnknownTopicOrPartition
PartitionLookup = Callable[[str, int], "Partition"]

EMPTY = b""


@dataclass
class FetchSpec:
    topic: str
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    #: a follower's log start offset (Fetch v5+), -1 if not sent
    log_start_offset: int = -1


@dataclass
class FetchResult:
    spec: FetchSpec
    error: KafkaError | None = None
    #: The batches read; a pinned segment file range with ``zero_copy`` (released by
    #: whoever sends the response, or by :func:`release_results`).
    records: bytes | FileRecords = EMPTY
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    last_stable_offset: int = -1
    #: read_committed only: (producer id, first offset) of aborted transactions in range.
    aborted: list[tuple[int, int]] | None = None


def release_results(results: list[FetchResult]) -> None:
    """Let go of the segment files pinned by zero-copy reads that will not be sent."""
    for r in results:
        if isinstance(r.records, FileRecords):
            r.records.release()


class FetchReader(Protocol):
    """What a parked fetch (:class:`~.delayed_fetch.DelayedFetch`) needs of the replica
    manager: find a partition to check whether enough bytes arrived, read them at the end."""

    def partition(self, topic: str, index: int) -> Partition: ...

    def read(self, specs: list[FetchSpec], max_bytes: int, is_follower: bool,
             min_one_batch: bool = True, read_committed: bool = False,
             zero_copy: bool = False) -> list[FetchResult]: ...
