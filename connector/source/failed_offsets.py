"""The failed set of one partition: records owed another delivery, and the dead-letter record.

Storm's spout kept this in a separate retry manager; pyq does too. Each entry is one offset
(a record), in one of two states:

* *waiting*: it failed and may be delivered again from ``due_ms`` on (:class:`RetryPolicy`
  backoff after its latest failure);
* *in flight*: a retry of it was planned into the micro-batch ``plan_id`` and that batch has
  not been acknowledged yet.

Lifecycle of one offset (``max_retries = 1``, backoff 100 ms)::

    record_failure(7, now=0)     -> waiting, failures=1, due at 100
    take_due(now=50)             -> nothing (not due)
    take_due(now=100, plan 4)    -> [7], in flight in plan 4
    record_failure(7, now=120)   -> failures=2 > max_retries: removed, DeadLetter returned
    (or) retries_succeeded(4)    -> removed: the retry went through

An entry leaves only by succeeding, by being dead-lettered, or by being removed by the owner
(:meth:`remove_where`, used when the record is gone or given up), so the set cannot grow
without bound while records keep failing.

>>> failed = FailedOffsets("clicks", 0, RetryPolicy(max_retries=1, retry_backoff_ms=100))
>>> failed.record_failure(7, "bad json", now_ms=0) is None
True
>>> failed.take_due(now_ms=50, limit=None, plan_id=4), failed.take_due(100, None, 4)
((), (7,))
>>> failed.record_failure(7, "bad json", now_ms=120)
DeadLetter(topic='clicks', partition=0, offset=7, failures=2, reason='maxRetries=1 exhausted: failed 2 times; last error: bad json')

Owned by the driver thread that owns the :class:`PartitionManager`; not thread-safe.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .retry_policy import RetryPolicy

# A failure reason is kept for the dead-letter entry and in the JSON state: keep it short.
MAX_REASON_CHARS = 200


@dataclass(frozen=True)
class DeadLetter:
    """A record pyq gave up delivering, and why (returned to the caller, who reports it)."""

    topic: str
    partition: int
    offset: int
    failures: int
    reason: str


@dataclass
class FailedOffset:
    offset: int
    failures: int
    due_ms: int
    reason: str
    plan_id: int | None = None  # the plan retrying it, while that retry is in flight

    @property
    def in_flight(self) -> bool:
        return self.plan_id is not None


class FailedOffsets:
    def __init__(self, topic: str, partition: int, policy: RetryPolicy) -> None:
        self.topic = topic
        self.partition = partition
        self.policy = policy
        self._entries: dict[int, FailedOffset] = {}
        self._by_plan: dict[int, set[int]] = {}  # plan id -> offsets it retries

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, offset: object) -> bool:
        return offset in self._entries

    def __iter__(self) -> Iterator[FailedOffset]:
        return iter(sorted(self._entries.values(), key=lambda e: e.offset))

    def get(self, offset: int) -> FailedOffset | None:
        return self._entries.get(offset)

    def lowest(self) -> int | None:
        return min(self._entries) if self._entries else None

    def dead_letter(self, entry: FailedOffset, reason: str) -> DeadLetter:
        return DeadLetter(self.topic, self.partition, entry.offset, entry.failures, reason)

    def record_failure(self, offset: int, reason: str, now_ms: int) -> DeadLetter | None:
        """Count one more failed delivery of ``offset``: schedule a retry, or give up on it.

        Returns the dead-letter entry when the retry limit is exhausted, else None.
        """
        reason = reason[:MAX_REASON_CHARS]
        entry = self._entries.get(offset)
        if entry is None:
            entry = self._entries[offset] = FailedOffset(offset, 0, now_ms, reason)
        self._leave_plan(entry)
        entry.failures += 1
        entry.reason = reason
        if self.policy.exhausted(entry.failures):
            del self._entries[offset]
            return self.dead_letter(
                entry,
                f"maxRetries={self.policy.max_retries} exhausted: failed {entry.failures} times;"
                f" last error: {reason}",
            )
        entry.due_ms = now_ms + self.policy.delay_ms(entry.failures)
        return None

    def count_due(self, now_ms: int) -> int:
        return sum(1 for e in self._entries.values() if not e.in_flight and e.due_ms <= now_ms)

    def take_due(self, now_ms: int, limit: int | None, plan_id: int) -> tuple[int, ...]:
        """Mark up to ``limit`` waiting offsets that are due as in flight in ``plan_id``.

        The longest-waiting ones go first (earliest ``due_ms``, then lowest offset); the result
        is sorted by offset.
        """
        due = [(e.due_ms, e.offset) for e in self._entries.values()
               if not e.in_flight and e.due_ms <= now_ms]
        if limit is not None:
            due = heapq.nsmallest(limit, due)
        taken = sorted(offset for _, offset in due)
        for offset in taken:
            self._entries[offset].plan_id = plan_id
        if taken:
            self._by_plan.setdefault(plan_id, set()).update(taken)
        return tuple(taken)

    def retries_succeeded(self, plan_id: int) -> int:
        """The plan was acknowledged: its retries that did not fail again are done."""
        offsets = self._by_plan.pop(plan_id, set())
        for offset in offsets:
            del self._entries[offset]
        return len(offsets)

    def remove_where(self, predicate: Callable[[int], bool]) -> list[FailedOffset]:
        """Remove and return (by offset) every entry whose offset matches ``predicate``."""
        removed = [e for e in self._entries.values() if predicate(e.offset)]
        for entry in removed:
            self._leave_plan(entry)
            del self._entries[entry.offset]
        return sorted(removed, key=lambda e: e.offset)

    def _leave_plan(self, entry: FailedOffset) -> None:
        if entry.plan_id is not None:
            offsets = self._by_plan[entry.plan_id]
            offsets.discard(entry.offset)
            if not offsets:
                del self._by_plan[entry.plan_id]
            entry.plan_id = None

    def restore(self, rows: list[list[Any]]) -> None:
        self._entries.clear()
        self._by_plan.clear()
        for offset, failures, due_ms, plan_id, reason in rows:
            entry = FailedOffset(int(offset), int(failures), int(due_ms), str(reason),
                                 None if plan_id is None else int(plan_id))
            self._entries[entry.offset] = entry
            if entry.plan_id is not None:
                self._by_plan.setdefault(entry.plan_id, set()).add(entry.offset)
