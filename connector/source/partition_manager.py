"""Driver-side bookkeeping of one topic-partition: what was planned, what is owed, what is given up.

Modelled on Storm's KafkaSpout ``PartitionManager`` (emitted offset, pending set, failed set,
last completed offset, ``maxOffsetBehind``), without its traps: see :class:`PartitionManager`.
Pure logic: no Spark, no network, no clock (every method that needs the time takes ``now_ms``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable
from typing import Any

from .failed_offsets import DeadLetter, FailedOffset, FailedOffsets
from .offset_range import OffsetRange, ranges_from_offsets
from .offset_reset import DataLossError, ResetPolicy
from .partition_accounting import Adjustment, FailOutcome, PartitionCounters
from .partition_plan import PartitionPlan
from .retry_policy import RetryPolicy
from .source_offsets import PartitionCheckpoint, WaitingRetry

logger = logging.getLogger(__name__)

__all__ = ["Adjustment", "FailOutcome", "PartitionCounters", "PartitionManager"]


class PartitionManager:
    """Plans one partition's records into micro-batches and tracks them until Spark commits.

    State, for offsets of the partition::

        base_offset      where this manager started (the query's starting offset)
        emitted_to       every offset below it has been planned into some micro-batch
                         (or was explicitly skipped or lost, and counted)
        pending          planned, not yet acknowledged: one range per plan (O(plans), not
                         O(offsets): a plan may cover millions of offsets)
        failed           single offsets (records) owed another delivery, each with its
                         failure count and the time it is due again (:class:`FailedOffsets`)
        committed_to     the lowest offset still owed: min(pending starts, failed), or
                         emitted_to when nothing is owed (Storm's lastCompletedOffset). The
                         driver commits it to the consumer group, so tools see the true lag.

    Operations:

    * :meth:`plan` serves failed offsets that are due first (Storm's ``fill``), then a new
      range ``[emitted_to, min(latest, emitted_to + limit - retries))``; both count against
      ``limit``.
    * :meth:`ack` (Spark committed the batch) ends the plan's pending range, and completes
      its retries unless they failed again.
    * :meth:`fail` schedules a record for another delivery after an exponential backoff
      (:class:`RetryPolicy`), or dead-letters it once ``maxRetries`` is exhausted.
    * :meth:`apply_max_offset_behind` gives up everything more than ``maxOffsetBehind``
      behind the latest offset; :meth:`reset_out_of_range` follows the configured policy
      when the log no longer holds the next offset. Both count and log what they give up.

    Worked example (``maxRetries = 2``, backoff 1 s doubling; the log holds offsets 0..249):

    >>> pm = PartitionManager("clicks", 0, start_offset=0, retry_policy=RetryPolicy(
    ...     max_retries=2, retry_backoff_ms=1_000, max_retry_backoff_ms=60_000))
    >>> p1 = pm.plan(latest_offset=250, limit=100, now_ms=0)     # batch 1: new offsets
    >>> p1.retries, (p1.new.start, p1.new.end), pm.emitted_to, pm.committed_to
    ((), (0, 100), 100, 0)
    >>> pm.fail([42], "bad json", now_ms=500).scheduled         # due again at 1500
    (42,)
    >>> pm.ack(p1); pm.committed_to                             # batch 1 committed; 42 owed
    42
    >>> p2 = pm.plan(250, 100, now_ms=1_000)                     # 42 not due: new data flows
    >>> p2.retries, (p2.new.start, p2.new.end)
    ((), (100, 200))
    >>> p3 = pm.plan(250, 100, now_ms=1_500)                     # 42 due: first, then new
    >>> p3.retries, (p3.new.start, p3.new.end)
    ((42,), (200, 250))
    >>> pm.ack(p2); pm.fail([42], "bad json", now_ms=1_600).scheduled   # due at 3600
    (42,)
    >>> pm.ack(p3); p4 = pm.plan(250, 100, now_ms=3_600); p4.retries
    (42,)
    >>> pm.fail([42], "bad json", now_ms=3_700).dead_letters[0].reason
    'maxRetries=2 exhausted: failed 3 times; last error: bad json'
    >>> pm.ack(p4); pm.committed_to, pm.counters.dead_lettered, pm.counters.retried
    (250, 1, 2)

    Invariants (checked by property tests):

    1. ``committed_to`` never moves backwards and never passes a pending or failed offset.
       The one exception is :meth:`reset_out_of_range` after the broker truncated the log
       below it: those offsets no longer exist, the move is logged and counted in
       ``rewound``.
    2. Every offset below ``emitted_to`` is delivered at least once, unless it was skipped
       (``maxOffsetBehind``) or lost (out of range), and then it is counted and logged.
       ``emitted_to == base_offset + delivered + skipped + lost - rewound``.
    3. Failed offsets that are due are delivered again before new data.
    4. A failed offset never stays forever: after ``maxRetries`` retries it is
       dead-lettered, and the dead-letter reason names the option and its value.
    5. Nothing stays pending forever: ``maxOffsetBehind`` and out-of-range resets drop what
       can no longer be completed, and count it in ``dropped``.

    Storm's traps, and what pyq does instead: a failed offset skipped by ``fail()`` stayed in
    the pending map, stalling commits and leaking memory (here it leaves ``failed`` when given
    up, so ``committed_to`` moves on); a record that always failed was retried for ever (here
    ``maxRetries``); an out-of-range fetch reset to a fixed position whatever the user had
    configured (here :class:`ResetPolicy`); the spout died after an unconfigured count of
    failures without any ack (here no such threshold exists).

    Threading: owned by the driver thread that plans micro-batches (the stream reader's
    ``latestOffset``/``commit`` calls); not thread-safe and takes no locks.
    """

    def __init__(self, topic: str, partition: int, start_offset: int,
                 retry_policy: RetryPolicy | None = None) -> None:
        if start_offset < 0:
            raise ValueError(f"{topic}-{partition}: start offset must be >= 0, got {start_offset}")
        self.topic = topic
        self.partition = partition
        self.retry_policy = retry_policy if retry_policy is not None else RetryPolicy()
        self.counters = PartitionCounters()
        self._base_offset = start_offset
        self._emitted_to = start_offset
        self._next_plan_id = 0
        self._pending: dict[int, OffsetRange] = {}  # plan id -> its range not yet acknowledged
        self._failed = FailedOffsets(topic, partition, self.retry_policy)
        # Offsets dead-lettered while a pending range still covers them: a repeated failure
        # report for them must not count (and dead-letter) them again. Bounded by dead letters.
        self._dead_in_pending: set[int] = set()
        self._planned_from = start_offset  # start of the latest plan's new range (checkpoint)

    def __repr__(self) -> str:
        return (f"PartitionManager({self.topic}-{self.partition} emitted_to={self._emitted_to}"
                f" committed_to={self.committed_to} pending={len(self._pending)} ranges"
                f" failed={len(self._failed)})")

    # -- views -------------------------------------------------------------------------------

    @property
    def base_offset(self) -> int:
        return self._base_offset

    @property
    def emitted_to(self) -> int:
        return self._emitted_to

    @property
    def committed_to(self) -> int:
        owed = [r.start for r in self._pending.values()]
        lowest_failed = self._failed.lowest()
        if lowest_failed is not None:
            owed.append(lowest_failed)
        return min(owed, default=self._emitted_to)

    @property
    def pending(self) -> list[OffsetRange]:
        """Planned ranges not yet acknowledged, by start offset."""
        return sorted(self._pending.values())

    @property
    def failed(self) -> list[FailedOffset]:
        """Failed offsets owed another delivery (waiting or in flight), by offset."""
        return [dataclasses.replace(e) for e in self._failed]

    def lag(self, latest_offset: int, now_ms: int) -> int:
        """How many records a plan could deliver now: due retries plus new offsets."""
        return self._failed.count_due(now_ms) + max(0, latest_offset - self._emitted_to)

    # -- planning and acknowledgement --------------------------------------------------------

    def plan(self, latest_offset: int, limit: int | None, now_ms: int) -> PartitionPlan:
        """Plan the next micro-batch: due retries first, then new offsets, ``limit`` in all.

        ``latest_offset`` is the log end (the offset the next produced record will get);
        ``limit`` None means no limit. The plan is pending until :meth:`ack`. A plan may be
        empty (nothing due, nothing new); acknowledging it is harmless.
        """
        if limit is not None and limit < 0:
            raise ValueError(f"{self.topic}-{self.partition}: limit must be >= 0 or None, got {limit}")
        plan_id = self._next_plan_id
        self._next_plan_id += 1
        retries = self._failed.take_due(now_ms, limit, plan_id)
        start = self._emitted_to
        end = max(start, latest_offset)
        if limit is not None:
            end = min(end, start + limit - len(retries))
        new = OffsetRange(self.topic, self.partition, start, end)
        if new.size:
            self._pending[plan_id] = new
            self._planned_from = start
        self._emitted_to = end
        self.counters.delivered += new.size
        self.counters.retried += len(retries)
        return PartitionPlan(self.topic, self.partition, plan_id, retries, new)

    def ack(self, plan: PartitionPlan | int) -> None:
        """Spark committed the batch holding ``plan``: it is no longer pending.

        Its retries that did not fail again are done. Acknowledging twice, or acknowledging a
        plan whose range was dropped meanwhile, does nothing.
        """
        if isinstance(plan, PartitionPlan):
            if (plan.topic, plan.partition) != (self.topic, self.partition):
                raise ValueError(f"plan for {plan.topic}-{plan.partition} acknowledged on"
                                 f" {self.topic}-{self.partition}")
            plan_id = plan.plan_id
        else:
            plan_id = plan
        if not 0 <= plan_id < self._next_plan_id:
            raise ValueError(f"{self.topic}-{self.partition}: no plan {plan_id} was issued")
        self._pending.pop(plan_id, None)
        self._failed.retries_succeeded(plan_id)
        self._forget_dead_outside_pending()

    def fail(self, offsets: Iterable[int], reason: str, now_ms: int) -> FailOutcome:
        """Records at ``offsets`` failed in their latest delivery: retry them later, or give up.

        Only offsets still owed can fail: offsets of a pending plan, or failed offsets whose
        retry is in flight. Report failures before acknowledging the batch that delivered
        them; a failure for an offset already committed cannot be honoured without moving
        ``committed_to`` backwards, so it is ignored (and logged). A second report for an
        offset already waiting for its retry, or already dead-lettered, is ignored too.
        """
        scheduled: list[int] = []
        dead: list[DeadLetter] = []
        ignored: list[int] = []
        for offset in sorted(set(offsets)):
            entry = self._failed.get(offset)
            in_pending = any(offset in r for r in self._pending.values())
            if entry is None:
                owed = in_pending and offset not in self._dead_in_pending
            else:
                owed = entry.in_flight
            if not owed:
                ignored.append(offset)
                continue
            letter = self._failed.record_failure(offset, reason, now_ms)
            if letter is None:
                scheduled.append(offset)
            else:
                dead.append(letter)
                if in_pending:
                    self._dead_in_pending.add(offset)
        self.counters.dead_lettered += len(dead)
        by_reason: dict[str, list[int]] = {}
        for letter in dead:
            by_reason.setdefault(letter.reason, []).append(letter.offset)
        for why, gone in by_reason.items():  # expected handling, counted: INFO, one line each
            logger.info("%s-%d: %d offset(s) dead-lettered (%s%s): %s", self.topic, self.partition,
                        len(gone), ", ".join(map(str, gone[:5])), ", ..." if len(gone) > 5 else "",
                        why)
        if ignored:
            logger.warning("%s-%d: failure of offsets %s ignored: not pending, already"
                           " scheduled for retry or already dead-lettered (report each failed"
                           " row once, from the batch that delivered it)", self.topic,
                           self.partition, ignored)
        return FailOutcome(tuple(scheduled), tuple(dead), tuple(ignored))

    # -- giving up ---------------------------------------------------------------------------

    def apply_max_offset_behind(self, latest_offset: int, max_offset_behind: int) -> Adjustment:
        """Give up everything more than ``max_offset_behind`` behind ``latest_offset``.

        With ``horizon = latest_offset - max_offset_behind``: if ``emitted_to < horizon`` the
        offsets ``[emitted_to, horizon)`` are skipped (never delivered); failed offsets below
        the horizon are dead-lettered with reason ``maxOffsetBehind``; pending ranges are cut
        at the horizon. Everything is counted and logged.
        """
        if max_offset_behind < 0:
            raise ValueError(f"maxOffsetBehind must be >= 0, got {max_offset_behind}")
        horizon = latest_offset - max_offset_behind
        old = self._emitted_to
        reason = (f"maxOffsetBehind={max_offset_behind}: more than {max_offset_behind} offsets"
                  f" behind latest offset {latest_offset}")
        dead = tuple(self._failed.dead_letter(e, reason)
                     for e in self._failed.remove_where(lambda o: o < horizon))
        dropped = self._trim_pending(horizon, None)
        skipped = max(0, horizon - old)
        self._emitted_to = old + skipped
        self._planned_from = max(self._planned_from, min(horizon, self._emitted_to))
        adjustment = Adjustment(self.topic, self.partition, "maxOffsetBehind", old,
                                self._emitted_to, skipped=skipped, dropped=dropped,
                                dead_letters=dead)
        self._count(adjustment)
        if adjustment.changed:
            logger.warning(
                "%s-%d: more than maxOffsetBehind=%d behind latest offset %d: skipped offsets"
                " [%d, %d) (%d), dropped %d pending, dead-lettered failed offsets %s",
                self.topic, self.partition, max_offset_behind, latest_offset, old,
                self._emitted_to, skipped, dropped, [d.offset for d in dead])
        return adjustment

    def reset_out_of_range(self, log_start: int, log_end: int,
                           policy: ResetPolicy | str) -> Adjustment:
        """Reconcile with a log that now holds only ``[log_start, log_end)``.

        If ``emitted_to`` is outside ``[log_start, log_end]`` it moves as ``policy`` says
        (:mod:`.offset_reset`): the offsets jumped over are ``lost``; after a truncation the
        positions given back are ``rewound`` and what is owed at or above the new position is
        dropped (it will be delivered again as new data). In every case, failed offsets
        outside the log are dead-lettered and pending ranges are cut to the log, so nothing
        waits for records that no longer exist. With policy ``fail``, raises
        :class:`DataLossError` naming the offsets instead, and changes nothing. Pending
        offsets do not count as data loss: they were delivered.
        """
        policy = ResetPolicy(policy)
        if not 0 <= log_start <= log_end:
            raise ValueError(f"{self.topic}-{self.partition}: invalid log bounds"
                             f" [{log_start}, {log_end})")
        old = self._emitted_to

        def out_of_log(offset: int) -> bool:
            return not log_start <= offset < log_end

        if policy is ResetPolicy.FAIL:
            self._raise_if_data_lost(log_start, log_end, out_of_log)
        reason = f"outOfRange: no longer in the log, which holds [{log_start}, {log_end})"
        dead = tuple(self._failed.dead_letter(e, reason)
                     for e in self._failed.remove_where(out_of_log))
        dropped = self._trim_pending(log_start, log_end)
        lost = rewound = 0
        if not log_start <= old <= log_end:
            target = log_start if policy is ResetPolicy.EARLIEST else log_end
            if target >= old:
                lost = target - old
            else:
                rewound = old - target
                dropped += self._trim_pending(0, target)
                dropped += len(self._failed.remove_where(lambda o: o >= target))
            self._emitted_to = target
        self._planned_from = min(max(self._planned_from, log_start), self._emitted_to)
        adjustment = Adjustment(self.topic, self.partition, "outOfRange", old, self._emitted_to,
                                lost=lost, rewound=rewound, dropped=dropped, dead_letters=dead)
        self._count(adjustment)
        if adjustment.changed:
            logger.warning(
                "%s-%d: next offset %d vs log [%d, %d), policy %s: resuming at %d; lost %d"
                " offsets, rewound %d, dropped %d pending, dead-lettered failed offsets %s",
                self.topic, self.partition, old, log_start, log_end, policy.value,
                self._emitted_to, lost, rewound, dropped, [d.offset for d in dead])
        return adjustment

    def _raise_if_data_lost(self, log_start: int, log_end: int,
                            out_of_log: Callable[[int], bool]) -> None:
        old = self._emitted_to
        spans: list[tuple[int, int]] = []
        causes: list[str] = []
        if old < log_start:
            spans.append((old, log_start))
            causes.append("deleted (retention, DeleteRecords) before they were read")
        elif old > log_end:
            spans.append((log_end, old))
            causes.append("truncated from the log after they were read")
        gone = [e.offset for e in self._failed if out_of_log(e.offset)]
        if gone:
            spans.extend((r.start, r.end) for r in ranges_from_offsets(self.topic, self.partition, gone))
            causes.append("failed records awaiting a retry are gone")
        if spans:
            raise DataLossError(self.topic, self.partition, spans,
                                f"the log now holds [{log_start}, {log_end}) ({'; '.join(causes)})")

    def _trim_pending(self, low: int, high: int | None) -> int:
        """Cut every pending range to ``[low, high)``; return how many offsets were dropped."""
        dropped = 0
        for plan_id, r in list(self._pending.items()):
            start = max(r.start, low)
            end = r.end if high is None else min(r.end, high)
            if end <= start:
                dropped += r.size
                del self._pending[plan_id]
            elif (start, end) != (r.start, r.end):
                dropped += r.size - (end - start)
                self._pending[plan_id] = r.with_bounds(start, end)
        self._forget_dead_outside_pending()
        return dropped

    def _forget_dead_outside_pending(self) -> None:
        if self._dead_in_pending:
            self._dead_in_pending = {o for o in self._dead_in_pending
                                     if any(o in r for r in self._pending.values())}

    def _count(self, adjustment: Adjustment) -> None:
        self.counters.skipped += adjustment.skipped
        self.counters.lost += adjustment.lost
        self.counters.rewound += adjustment.rewound
        self.counters.dropped += adjustment.dropped
        self.counters.dead_lettered += len(adjustment.dead_letters)

    # -- persistence -------------------------------------------------------------------------

    def checkpoint(self) -> PartitionCheckpoint:
        """What a micro-batch's source offsets carry so a restarted driver can :meth:`resume`.

        Taken right after a plan, once every earlier plan is acknowledged: the failed offsets
        waiting for a retry, the start of the latest plan's new range, and the counters. The
        retries in flight in the plan travel in the offsets' ``retries``. It is canonical: it
        changes only when the plan delivered something, a failure was recorded or something
        was given up, so an idle trigger reproduces the previous batch's checkpoint exactly.
        """
        return PartitionCheckpoint(
            planned_from=self._planned_from,
            failed=tuple(WaitingRetry(e.offset, e.failures, e.due_ms, e.reason)
                         for e in self._failed if not e.in_flight),
            counters={k: v for k, v in dataclasses.asdict(self.counters).items() if v})

    @classmethod
    def resume(cls, topic: str, partition: int, emitted_to: int, checkpoint: PartitionCheckpoint,
               in_flight: Iterable[tuple[int, int]] = (),
               retry_policy: RetryPolicy | None = None) -> tuple[PartitionManager, int]:
        """Rebuild a manager in a restarted driver from the last batch's source offsets.

        That batch is committed by Spark, but failure reports its pipeline wrote have not been
        read yet; so its plan comes back pending — new range ``[from, emitted_to)`` and its
        ``in_flight`` retries ``(offset, failures so far)`` — and its id is returned: read the
        reports, then :meth:`ack` it, exactly as a driver that never stopped would.
        """
        counters = PartitionCounters(**checkpoint.counters)
        base = emitted_to - (counters.delivered + counters.skipped + counters.lost - counters.rewound)
        manager = cls(topic, partition, max(0, base), retry_policy)
        manager.counters = counters
        manager._emitted_to = emitted_to
        planned_from = min(checkpoint.planned_from, emitted_to)
        manager._planned_from = planned_from
        plan_id = manager._next_plan_id
        manager._next_plan_id += 1
        if planned_from < emitted_to:
            manager._pending[plan_id] = OffsetRange(topic, partition, planned_from, emitted_to)
        rows: list[list[Any]] = [[w.offset, w.failures, w.due_ms, None, w.reason]
                                 for w in checkpoint.failed]
        rows += [[int(o), int(f), 0, plan_id, ""] for o, f in in_flight]
        manager._failed.restore(rows)
        return manager, plan_id
