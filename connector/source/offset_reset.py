"""What to do when a partition's next offset is no longer in the log.

The log of a partition holds offsets ``[log_start, log_end)``. The next offset to read falls
outside it in two ways:

* **retention** (``next < log_start``): the broker deleted old segments before pyq read them;
  offsets ``[next, log_start)`` are gone for good;
* **truncation** (``next > log_end``): the log was cut back (topic re-created, unclean leader
  election); offsets ``[log_end, next)`` no longer hold the records pyq delivered, and new
  records will reuse them.

:class:`ResetPolicy` is what the user configured, and pyq does exactly that (Storm's spout
jumped to a fixed position whatever the user had asked for)::

    policy     retention gap                         truncation
    earliest   resume at log_start                   resume at log_start (re-reads the log)
    latest     resume at log_end                     resume at log_end (reads the new records)
    fail       raise DataLossError                   raise DataLossError

>>> ResetPolicy("earliest") is ResetPolicy.EARLIEST
True
>>> str(DataLossError("clicks", 0, [(10, 50)], "the log now holds [50, 200)"))
'Data loss on clicks-0: offsets [10, 50) are no longer available: the log now holds [50, 200)'
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from broker_sim.protocol.errors import PyqError


class ResetPolicy(str, Enum):
    EARLIEST = "earliest"
    LATEST = "latest"
    FAIL = "fail"


class DataLossError(PyqError):
    """Offsets of a partition are no longer available and the policy says to stop.

    Carries the topic, the partition and the lost ``[start, end)`` ranges, so the message a
    user sees names exactly what was lost.
    """

    def __init__(self, topic: str, partition: int, ranges: Sequence[tuple[int, int]],
                 detail: str) -> None:
        self.topic = topic
        self.partition = partition
        self.ranges = [tuple(r) for r in ranges]
        spans = ", ".join(f"[{start}, {end})" for start, end in self.ranges)
        super().__init__(
            f"Data loss on {topic}-{partition}: offsets {spans} are no longer available: {detail}"
        )
