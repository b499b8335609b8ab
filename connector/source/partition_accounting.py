"""What one partition's bookkeeping reports: running totals, and what an operation changed."""

from __future__ import annotations

from dataclasses import dataclass

from .failed_offsets import DeadLetter


@dataclass
class PartitionCounters:
    """Running totals for one partition (kept in the state, so they survive a restart).

    Accounting identity, for any history::

        emitted_to == base_offset + delivered + skipped + lost - rewound
    """

    delivered: int = 0  # offsets planned for the first time (sum of the plans' new ranges)
    retried: int = 0  # retry deliveries planned
    skipped: int = 0  # never delivered: jumped over to stay within maxOffsetBehind
    lost: int = 0  # never delivered: out of range (retention gap, or jumped by policy latest)
    rewound: int = 0  # positions given back by a reset after the log was truncated
    dead_lettered: int = 0  # failed records given up (retries exhausted, too far behind, gone)
    dropped: int = 0  # planned offsets whose commit pyq stopped waiting for


@dataclass(frozen=True)
class FailOutcome:
    """What :meth:`PartitionManager.fail` did with each offset it was given."""

    scheduled: tuple[int, ...]  # will be delivered again after their backoff
    dead_letters: tuple[DeadLetter, ...]  # retry limit exhausted
    ignored: tuple[int, ...]  # not outstanding (already committed, given up, or never planned)


@dataclass(frozen=True)
class Adjustment:
    """What a maxOffsetBehind skip or an out-of-range reset changed in one partition."""

    topic: str
    partition: int
    cause: str  # "maxOffsetBehind" or "outOfRange"
    old_emitted_to: int
    new_emitted_to: int
    skipped: int = 0
    lost: int = 0
    rewound: int = 0
    dropped: int = 0
    dead_letters: tuple[DeadLetter, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.old_emitted_to != self.new_emitted_to or self.dropped or self.dead_letters)
