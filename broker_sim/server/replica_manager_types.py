"""Small shared types of the replica manager (kept apart to avoid import cycles)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .partition import Partition

#: (topic, partition) -> Partition, raising UnknownTopicOrPartition
PartitionLookup = Callable[[str, int], "Partition"]
