"""A half-open range of offsets in one topic-partition: the unit pyq plans, reads and splits.

``OffsetRange("clicks", 3, 10, 20)`` is the records at offsets 10..19 of partition 3 of topic
``clicks``. ``end`` is exclusive, as in Spark's Kafka source and in Kafka's fetch positions,
so ranges that meet (``[10, 20)`` and ``[20, 30)``) share no offset and an empty range has
``start == end``.

Splitting is a pure function of the range and the number of parts, so the same range always
gives the same pieces (Spark may plan a micro-batch again after a restart and must read the
same records into the same input partitions):

>>> r = OffsetRange("clicks", 3, 10, 20)
>>> [(p.start, p.end) for p in r.split(3)]
[(10, 14), (14, 17), (17, 20)]
>>> [(p.start, p.end) for p in ranges_from_offsets("clicks", 3, [7, 5, 6, 9])]
[(5, 8), (9, 10)]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from broker_sim.common import TopicPartition


@dataclass(frozen=True, order=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one topic-partition; JSON-able via :meth:`to_json`."""

    topic: str
    partition: int
    start: int
    end: int

    def __post_init__(self) -> None:
        if self.start < 0 or self.end < self.start:
            raise ValueError(
                f"invalid offset range [{self.start}, {self.end}) for {self.topic}-{self.partition}:"
                " need 0 <= start <= end"
            )

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def __contains__(self, offset: object) -> bool:
        return isinstance(offset, int) and self.start <= offset < self.end

    def with_bounds(self, start: int, end: int) -> OffsetRange:
        return OffsetRange(self.topic, self.partition, start, end)

    def split(self, parts: int) -> list[OffsetRange]:
        """``parts`` contiguous pieces whose sizes differ by at most one (larger ones first).

        Asking for more parts than offsets gives one piece per offset; an empty range gives
        no pieces.
        """
        if parts < 1:
            raise ValueError(f"cannot split into {parts} parts")
        parts = min(parts, self.size)
        if parts == 0:
            return []
        quotient, remainder = divmod(self.size, parts)
        pieces = []
        start = self.start
        for i in range(parts):
            end = start + quotient + (1 if i < remainder else 0)
            pieces.append(self.with_bounds(start, end))
            start = end
        return pieces

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "start": self.start, "end": self.end}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OffsetRange:
        return cls(str(data["topic"]), int(data["partition"]), int(data["start"]), int(data["end"]))


def ranges_from_offsets(topic: str, partition: int, offsets: Iterable[int]) -> list[OffsetRange]:
    """The fewest ranges that cover exactly the given offsets (duplicates ignored), in order."""
    ranges: list[OffsetRange] = []
    run_start = run_end = -1
    for offset in sorted(set(offsets)):
        if offset == run_end:
            run_end += 1
            continue
        if run_end > run_start:
            ranges.append(OffsetRange(topic, partition, run_start, run_end))
        run_start, run_end = offset, offset + 1
    if run_end > run_start:
        ranges.append(OffsetRange(topic, partition, run_start, run_end))
    return ranges
