"""One partition's share of one micro-batch.

A plan delivers the failed offsets that are due again (``retries``) and then a new range
``new = [emitted_to, emitted_to + n)`` of offsets never planned before. The driver stores it
with the batch's end offset, so a batch planned again after a restart reads exactly the same
records: the reader turns :meth:`PartitionPlan.ranges` into Spark input partitions.

>>> plan = PartitionPlan("clicks", 0, plan_id=5, retries=(42, 43, 57),
...                      new=OffsetRange("clicks", 0, 200, 250))
>>> [(r.start, r.end) for r in plan.ranges()], plan.size, plan.end_offset
([(42, 44), (57, 58), (200, 250)], 53, 250)
>>> PartitionPlan.from_json(plan.to_json()) == plan
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .offset_range import OffsetRange, ranges_from_offsets


@dataclass(frozen=True)
class PartitionPlan:
    topic: str
    partition: int
    plan_id: int
    retries: tuple[int, ...]
    new: OffsetRange

    @property
    def size(self) -> int:
        """How many records the plan delivers."""
        return len(self.retries) + self.new.size

    @property
    def is_empty(self) -> bool:
        return self.size == 0

    @property
    def end_offset(self) -> int:
        """The partition's next offset after this plan (its entry in the batch's end offset)."""
        return self.new.end

    def ranges(self) -> list[OffsetRange]:
        """Retries (adjacent offsets merged) first, then the new range if it is not empty."""
        ranges = ranges_from_offsets(self.topic, self.partition, self.retries)
        if self.new.size:
            ranges.append(self.new)
        return ranges

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "id": self.plan_id,
                "retries": list(self.retries), "start": self.new.start, "end": self.new.end}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PartitionPlan:
        topic, partition = str(data["topic"]), int(data["partition"])
        return cls(topic, partition, int(data["id"]), tuple(int(o) for o in data["retries"]),
                   OffsetRange(topic, partition, int(data["start"]), int(data["end"])))
