"""The one name for a partition of a topic, used by the log, the client and the source."""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A partition of a topic: ``TopicPartition("orders", 3)`` prints as ``orders-3``.

    A named tuple, so it is hashable, ordered (topic first, then partition) and compares
    equal to the plain ``(topic, partition)`` tuple that decoded wire messages carry.

    >>> tp = TopicPartition("orders", 3)
    >>> str(tp), tp == ("orders", 3), sorted([TopicPartition("b", 0), tp])[0]
    ('orders-3', True, TopicPartition(topic='b', partition=0))
    """

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"
