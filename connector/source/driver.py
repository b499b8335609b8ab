"""Driver side of the source: which partitions, where to start, and what each batch reads.

:class:`SourceDriver` holds one :class:`PartitionManager` per topic-partition and turns
Spark's calls into plans (no Spark import here, so it is tested on its own):

* :meth:`initial_offsets` resolves ``startingOffsets`` (and by-timestamp variants, and
  ``committed``) to concrete offsets;
* :meth:`plan` — Spark's ``latestOffset(start, limit)`` — runs named steps:
  :meth:`_discover` (new partitions of subscribed topics start at their earliest offset),
  failure intake (:class:`~.failure_intake.FailureIntake`), :meth:`_check_ranges` (out of
  range: ``failOnDataLoss`` stops the query naming the partition and offsets, otherwise
  reset to ``outOfRangeReset`` (earliest, or latest) and count the loss; then ``maxOffsetBehind``), :meth:`_worth_a_batch`
  (``minOffsetsPerTrigger`` within ``maxTriggerDelay``), and :meth:`_end_offsets` building
  the batch's offsets within the read limit;
* :meth:`input_ranges` depends only on ``(start, end)``, so a replayed batch reads exactly
  the same records; :meth:`input_partitions` — Spark's ``partitions(start, end)`` — packs
  small ranges into shared Spark tasks (``minRecordsPerPartition``, by preferred leader:
  :func:`~.planning.pack_ranges`);
* :meth:`commit` marks the batch done (so does a :meth:`plan` starting where it ended:
  Spark does not commit the last batch of an AvailableNow run); its plans are
  acknowledged at the next :meth:`plan`, *after* the failure reports written while the
  batch ran have been read (a pipeline reports failures from inside the batch:
  acknowledging at once would discard them).
  ``committed_to`` per partition then goes to the consumer group, with metadata naming the
  query and carrying its counters.

The offsets Spark checkpoints are :class:`~.source_offsets.SourceOffsets` (their JSON is
described there). Their ``state`` is :meth:`PartitionManager.checkpoint` per partition, so
a driver restarted from the checkpoint rebuilds its managers from it
(:meth:`PartitionManager.resume`), reads the failure reports the last batch wrote, and goes
on as if it had never stopped: no retry is forgotten, none is granted twice.

Time: retry due times are **wall-clock** milliseconds (they travel in the checkpoint and
are compared after a restart); ``maxTriggerDelay`` is measured on the **monotonic** clock
(an in-process duration). Both come from the injected :class:`~broker_sim.common.Clock`.

Threading: Spark calls the stream reader from one thread; so is this class used.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from broker_sim.common import SYSTEM_CLOCK, Clock, TopicPartition
from connector.client import Admin, OffsetAndMetadata

from .failed_offsets import DeadLetter
from .failure_intake import FailureIntake
from .offset_range import OffsetRange
from .options import SourceOptions
from .partition_discovery import PartitionDiscovery
from .partition_manager import PartitionManager
from .planning import BatchPlan, pack_ranges, plan_batch, split_ranges
from .read import InputRange
from .retry_policy import RetryPolicy
from .source_offsets import PartitionCheckpoint, SourceOffsets

log = logging.getLogger(__name__)


def offsets_json(offsets: dict[TopicPartition, int], failures: int | None = None) -> dict[str, Any]:
    """Plain offsets (no batch, no state) as the source's JSON."""
    return SourceOffsets(offsets, failures=failures).to_json()


def parse_offsets(data: dict[str, Any]) -> dict[TopicPartition, int]:
    return dict(SourceOffsets.from_json(data).offsets)


class SourceDriver:
    """The source's planner; see the module docstring. Owned by Spark's driver thread."""

    def __init__(self, options: SourceOptions, clock: Clock = SYSTEM_CLOCK) -> None:
        self.options = options
        self.clock = clock
        self.admin = Admin(self.client_config())
        self.discovery = PartitionDiscovery(self.admin, options)
        self.failure_intake = FailureIntake(options, self.discovery)
        self.retry_policy = RetryPolicy(max_retries=options.max_retries,
                                        retry_backoff_ms=options.retry_backoff_ms,
                                        max_retry_backoff_ms=options.max_retry_backoff_ms)
        self.managers: dict[TopicPartition, PartitionManager] = {}
        self.plans: dict[str, BatchPlan] = {}
        self.latest: dict[TopicPartition, int] = {}
        self.available_now_target: dict[TopicPartition, int] | None = None
        self.last_batch_ms = clock.monotonic_ms()
        self.failures_position = 0
        # (partition, plan id) of batches Spark committed, acknowledged at the next plan()
        self._done: list[tuple[TopicPartition, int]] = []
        self._committed_sent: dict[TopicPartition, tuple[int, str]] = {}

    def client_config(self) -> dict[str, object]:
        """bootstrap.servers plus the connection settings (security, timeouts) of the query."""
        return self.options.client()

    # ---- partitions and offsets -----------------------------------------------------------
    def topic_partitions(self) -> list[TopicPartition]:
        return self.discovery.topic_partitions()

    def bounds(self, tps: list[TopicPartition]) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        """(earliest, latest) offsets: latest is the high watermark."""
        return self.discovery.bounds(tps)

    def initial_offsets(self) -> dict[TopicPartition, int]:
        return self.discovery.initial_offsets(self._query_name())

    def _query_name(self) -> str:
        return self.options.query_name or self.options.group_id or "pyq"

    # ---- planning -------------------------------------------------------------------------
    def ensure_managers(self, start: SourceOffsets) -> None:
        """Managers positioned at ``start``; rebuilt from its ``state`` after a restart."""
        for tp, offset in start.offsets.items():
            pm = self.managers.get(tp)
            if pm is not None and (pm.emitted_to == offset or pm.pending):
                continue
            self._done = [(t, plan_id) for t, plan_id in self._done if t != tp]
            if tp in start.state:
                self.managers[tp], plan_id = PartitionManager.resume(
                    tp.topic, tp.partition, offset, start.state[tp], start.retries.get(tp, ()),
                    self.retry_policy)
                self._done.append((tp, plan_id))
            else:
                self.managers[tp] = PartitionManager(tp.topic, tp.partition, offset, self.retry_policy)

    def _state(self) -> dict[TopicPartition, PartitionCheckpoint]:
        if not self.options.group_id:
            return {}  # no failure reports without a group: nothing to resume
        return {tp: pm.checkpoint() for tp, pm in self.managers.items()}

    def plan(self, start_json: dict[str, Any], max_rows: int | None, min_rows: int | None) -> dict[str, Any]:
        """Spark's ``latestOffset``: the offsets the next batch ends at (``start`` if none)."""
        start = SourceOffsets.from_json(start_json)
        now = self.clock.wall_ms()  # retry due times are wall-clock: they are checkpointed
        self.ensure_managers(start)
        # Spark asks for the batch after ``start`` only once the batch ending at ``start`` is
        # done; it calls commit(start) only if it then runs another batch, so the last batch
        # of an AvailableNow run is known to be done only here.
        self._batch_done(start_json)
        earliest, latest = self._discover()
        letters: list[DeadLetter] = []
        position = start.failures if start.failures is not None else self.failures_position
        failures = self.failures_position = self.failure_intake.ingest(position, self.managers, now, letters)
        self._ack_done()
        letters.extend(self._check_ranges(earliest, latest))
        self.failure_intake.dead_letter(letters)
        caps = self._caps(latest)
        if not self._worth_a_batch(caps, min_rows, now):
            return self._unchanged(start_json, failures)
        batch = plan_batch(self.managers, caps, max_rows, None, now)
        if batch.size == 0:
            for plan in batch.plans.values():
                self.managers[TopicPartition(plan.topic, plan.partition)].ack(plan)
            return self._unchanged(start_json, failures)
        self.last_batch_ms = self.clock.monotonic_ms()
        end = self._end_offsets(batch, start, failures).to_json()
        self.plans[json.dumps(end, sort_keys=True)] = batch
        return end

    def _discover(self) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        """Current bounds of every partition; a partition added mid-query is read from its start."""
        tps = self.topic_partitions()
        earliest, latest = self.bounds(tps)
        for tp in tps:
            if tp not in self.managers:
                log.info("new partition %s-%d: reading it from offset %d", tp.topic, tp.partition, earliest[tp])
                self.managers[tp] = PartitionManager(tp.topic, tp.partition, earliest[tp], self.retry_policy)
        self.latest = dict(latest)
        return earliest, latest

    def _check_ranges(self, earliest: dict[TopicPartition, int],
                      latest: dict[TopicPartition, int]) -> list[DeadLetter]:
        """Out-of-range resets, then ``maxOffsetBehind``; returns the records given up."""
        o = self.options
        letters: list[DeadLetter] = []
        for tp, pm in self.managers.items():
            if tp not in latest:
                continue
            policy = "fail" if o.fail_on_data_loss else o.out_of_range_reset
            adj = pm.reset_out_of_range(earliest[tp], latest[tp], policy)
            letters.extend(adj.dead_letters)
            if adj.changed:
                log.warning("%s-%d: out of range (log holds [%d, %d)): %s", tp.topic, tp.partition,
                            earliest[tp], latest[tp], adj)
            if o.max_offset_behind is not None:
                adj = pm.apply_max_offset_behind(latest[tp], o.max_offset_behind)
                letters.extend(adj.dead_letters)
                if adj.changed:
                    log.warning("%s-%d: more than maxOffsetBehind=%d behind %d: %s", tp.topic,
                                tp.partition, o.max_offset_behind, latest[tp], adj)
        return letters

    def _caps(self, latest: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """How far each partition may be read now (an AvailableNow run stops at its target)."""
        target = self.available_now_target
        return {tp: (min(latest.get(tp, 0), target.get(tp, pm.emitted_to)) if target is not None
                     else latest.get(tp, pm.emitted_to)) for tp, pm in self.managers.items()}

    def _worth_a_batch(self, caps: dict[TopicPartition, int], min_rows: int | None, now: int) -> bool:
        """``minOffsetsPerTrigger``: wait for enough rows, but no longer than ``maxTriggerDelay``."""
        if min_rows is None:
            return True
        lag = sum(pm.lag(caps[tp], now) for tp, pm in self.managers.items())
        waited = self.clock.monotonic_ms() - self.last_batch_ms
        return lag >= min_rows or waited >= self.options.max_trigger_delay_ms

    def _end_offsets(self, batch: BatchPlan, start: SourceOffsets, failures: int) -> SourceOffsets:
        retries: dict[TopicPartition, tuple[tuple[int, int], ...]] = {}
        for tp, plan in batch.plans.items():
            if plan.retries:
                attempts = {f.offset: f.failures for f in self.managers[tp].failed}
                retries[tp] = tuple((off, attempts.get(off, 1)) for off in plan.retries)
        # where a partition's new range begins when not at its start offset (maxOffsetBehind
        # skipped, or an out-of-range reset moved it): the batch must not read what was given up
        moved = {tp: plan.new.start for tp, plan in batch.plans.items()
                 if plan.new.size and tp in start.offsets and plan.new.start != start.offsets[tp]}
        return SourceOffsets({tp: pm.emitted_to for tp, pm in self.managers.items()}, retries,
                             failures if self.options.group_id else None, self._state(), moved)

    def _unchanged(self, start: dict[str, Any], failures: int) -> dict[str, Any]:
        """No new batch: ``start`` itself, minus its batch's retries (already delivered),
        with the new failures position and retry state. Equal to ``start`` when nothing moved."""
        previous = SourceOffsets.from_json(start)
        keep_failures = "failures" in start or failures
        # a partition an out-of-range reset or maxOffsetBehind moved with nothing to read
        # (outOfRangeReset=latest) moves on in an empty batch, reading none of what it skipped
        moved = {tp: pm.emitted_to for tp, pm in self.managers.items()
                 if tp in previous.offsets and pm.emitted_to != previous.offsets[tp] and not pm.pending}
        return SourceOffsets({**previous.offsets, **moved}, failures=failures if keep_failures else None,
                             state=self._state(), moved_from=moved).to_json()

    # ---- reading ---------------------------------------------------------------------------
    def input_ranges(self, start_json: dict[str, Any], end_json: dict[str, Any]) -> list[InputRange]:
        """Pure function of (start, end): the same batch always reads the same records."""
        o = self.options
        end = SourceOffsets.from_json(end_json)
        start_offsets = {**SourceOffsets.from_json(start_json).offsets, **end.moved_from}
        ranges = []
        for tp, stop in sorted(end.offsets.items()):
            begin = start_offsets.get(tp, stop if tp in start_offsets else self._new_partition_start(tp, stop))
            if stop > begin:
                ranges.append(OffsetRange(tp.topic, tp.partition, begin, stop))
        pieces = split_ranges(ranges, o.min_partitions)
        if o.max_records_per_partition:
            pieces = [q for r in pieces for q in r.split(-(-r.size // o.max_records_per_partition))]
        common: dict[str, Any] = dict(bootstrap_servers=o.bootstrap_servers, include_headers=o.include_headers,
                                      include_attempt=bool(o.group_id), fail_on_data_loss=o.fail_on_data_loss,
                                      client_options=dict(o.extra), poll_timeout_ms=o.poll_timeout_ms,
                                      formats=o.formats)
        out = [InputRange(topic=r.topic, partition=r.partition, start=r.start, end=r.end, **common)
               for r in pieces]
        for tp, rs in sorted(end.retries.items()):
            out.append(InputRange(topic=tp.topic, partition=tp.partition, start=0, end=0, retries=rs, **common))
        return out

    def input_partitions(self, start_json: dict[str, Any], end_json: dict[str, Any]
                         ) -> list[tuple[InputRange, ...]]:
        """The batch's ranges as Spark tasks: small ones packed (see the module docstring)."""
        ranges = self.input_ranges(start_json, end_json)
        o = self.options
        target = 0 if o.min_partitions else o.min_records_per_partition
        if target <= 0 or len(ranges) <= 1:
            return [(r,) for r in ranges]
        leaders = self._preferred_leaders({r.topic for r in ranges})
        packs = pack_ranges(ranges, target,
                            lambda r: leaders.get((r.topic, r.partition), r.topic))
        return [tuple(p) for p in packs]

    def _preferred_leaders(self, topics: set[str]) -> dict[tuple[str, int], int]:
        """(topic, partition) -> its first replica: stable, unlike the current leader."""
        try:
            described = self.admin.describe_topics(sorted(topics))
        except Exception as e:  # packing is an optimisation: pack by topic
            log.warning("pyq source: no replica assignment (%s); packing ranges by topic "
                        "instead of by leader (reads still work; grant Describe on the "
                        "topics to pack them by leader)", e)
            return {}
        return {(t, p.partition): (p.replicas[0] if p.replicas else -1)
                for t, d in described.items() for p in d.partitions}

    def _new_partition_start(self, tp: TopicPartition, stop: int) -> int:
        # A partition that appeared between start and end was planned from its earliest
        # offset; recorded in the manager's base offset, else the log's start now.
        pm = self.managers.get(tp)
        if pm is not None:
            return pm.base_offset
        earliest, _ = self.bounds([tp])
        return earliest.get(tp, stop)

    # ---- committing ------------------------------------------------------------------------
    def _batch_done(self, end: dict[str, Any]) -> None:
        batch = self.plans.pop(json.dumps(end, sort_keys=True), None)
        if batch is not None:
            self._done.extend((TopicPartition(p.topic, p.partition), p.plan_id) for p in batch.plans.values())

    def commit(self, end: dict[str, Any]) -> None:
        self._batch_done(end)
        if not self.options.group_id:
            self._ack_done()  # no failure reports without a group: nothing to wait for
        self._commit_group()

    def _ack_done(self) -> None:
        for tp, plan_id in self._done:
            self.managers[tp].ack(plan_id)
        self._done.clear()
        self._commit_group()

    def _commit_group(self) -> None:
        """Commit each partition's ``committed_to`` (and counters) if it changed."""
        if not self.options.group_id:
            return
        commits = {}
        # The dead-letter topic (when set) names where this query's dead letters go: the
        # console's pipelines page reads them by reason from there.
        where = {"dead_letter_topic": self.options.dead_letter_topic} \
            if self.options.dead_letter_topic else {}
        for tp, pm in self.managers.items():
            meta = json.dumps({"query": self._query_name(), **{
                k: getattr(pm.counters, k) for k in ("skipped", "lost", "retried", "dead_lettered")},
                **where})
            if self._committed_sent.get(tp) != (pm.committed_to, meta):
                commits[(tp.topic, tp.partition)] = OffsetAndMetadata(pm.committed_to, meta)
                self._committed_sent[tp] = (pm.committed_to, meta)
        if commits:
            self.admin.commit_offsets(self.options.group_id, commits)

    def close(self) -> None:
        """The query stops: commit the last batches' progress to the group if nothing can
        still fail in them (no unread failure reports), so tools see no false lag after an
        AvailableNow run. Otherwise the next run does it, after reading the reports."""
        try:
            if self._done and self.options.group_id and not self.failure_intake.unread(self.failures_position):
                self._ack_done()
        except Exception as e:  # best effort: the checkpoint has the truth
            log.warning("could not commit the last batches to group %s on stop: %s (nothing "
                        "is lost: the checkpoint holds the progress and the next run commits "
                        "it; until then pyq lag shows the group behind)",
                        self.options.group_id, e)
        finally:
            self.admin.close()
