"""Driver side of the source: which partitions, where to start, and what each batch reads.

:class:`SourceDriver` holds one :class:`PartitionManager` per topic-partition and turns
Spark's calls into plans (no Spark import here, so it is tested on its own):

* :meth:`initial_offsets` resolves ``startingOffsets`` (and by-timestamp variants, and
  ``committed``) to concrete offsets;
* :meth:`plan` — Spark's ``latestOffset(start, limit)`` — discovers partitions (new
  partitions of subscribed topics start at their earliest offset), ingests failure reports,
  checks every partition against the log's current range (out of range: ``failOnDataLoss``
  stops the query naming the partition and offsets, otherwise reset to earliest and count
  the loss), applies ``maxOffsetBehind``, and plans the batch within the read limit;
* :meth:`input_ranges` — Spark's ``partitions(start, end)`` — depends only on
  ``(start, end)``, so a replayed batch reads exactly the same records;
* :meth:`commit` marks the batch done (so does a :meth:`plan` starting where it ended:
  Spark does not commit the last batch of an AvailableNow run); its plans are
  acknowledged at the next :meth:`plan`, *after* the failure reports written while the
  batch ran have been read (a pipeline reports failures from inside the batch:
  acknowledging at once would discard them).
  ``committed_to`` per partition then goes to the consumer group, with metadata naming the
  query and carrying its counters.

Offsets, as Spark stores them in the checkpoint::

    {"offsets": {"clicks": {"0": 1200, "1": 1187}},      next new offset per partition
     "retries": {"clicks": {"0": [[42, 1]]}},            redeliveries in this batch (offset, attempt)
     "failures": 3,                                      position in the failures topic
     "from": {"clicks": {"1": 1100}},                    a new range not beginning at the start
                                                         offset (maxOffsetBehind skip, reset)
     "state": {"clicks": {"0": {"from": 1100,            retry bookkeeping (with a groupId):
                                "failed": [[17, 1, 1732240000000, "bad json"]],
                                "counters": {"delivered": 1200, "retried": 4}}}}}

``state`` is :meth:`PartitionManager.checkpoint` per partition: the failed offsets waiting
for their retry (offset, failures, due time, reason), where the batch's new range began,
and the counters. A driver restarted from the checkpoint rebuilds its managers from it
(:meth:`PartitionManager.resume`), reads the failure reports the last batch wrote, and goes
on as if it had never stopped: no retry is forgotten, none is granted twice.

Threading: Spark calls the stream reader from one thread; so is this class used.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from typing import Any

from .offset_range import OffsetRange, TopicPartition
from .options import SourceOptions
from .partition_manager import PartitionManager
from .planning import plan_batch, split_ranges
from .read import InputRange
from .retry_policy import RetryPolicy

log = logging.getLogger(__name__)

EARLIEST, LATEST = -2, -1


def offsets_json(offsets: dict[TopicPartition, int], retries: dict[TopicPartition, list] | None = None,
                 failures: int | None = None,
                 state: dict[TopicPartition, dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"offsets": {}}
    for tp in sorted(offsets):
        out["offsets"].setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    if retries:
        out["retries"] = {}
        for tp in sorted(retries):
            if retries[tp]:
                out["retries"].setdefault(tp.topic, {})[str(tp.partition)] = [list(x) for x in retries[tp]]
    if failures is not None:
        out["failures"] = failures
    if state:
        out["state"] = {}
        for tp in sorted(state):
            out["state"].setdefault(tp.topic, {})[str(tp.partition)] = state[tp]
    return out


def parse_offsets(data: dict[str, Any]) -> dict[TopicPartition, int]:
    return {TopicPartition(t, int(p)): int(o) for t, ps in data.get("offsets", {}).items() for p, o in ps.items()}


def parse_retries(data: dict[str, Any]) -> dict[TopicPartition, tuple[tuple[int, int], ...]]:
    return {TopicPartition(t, int(p)): tuple((int(o), int(a)) for o, a in rs)
            for t, ps in data.get("retries", {}).items() for p, rs in ps.items()}


def parse_state(data: dict[str, Any]) -> dict[TopicPartition, dict[str, Any]]:
    return {TopicPartition(t, int(p)): st for t, ps in data.get("state", {}).items() for p, st in ps.items()}


class SourceDriver:
    def __init__(self, options: SourceOptions, now_ms: Callable[[], int] | None = None) -> None:
        from connector.client import Admin

        self.options = options
        self.now_ms = now_ms or (lambda: int(time.time() * 1000))
        self.admin = Admin(self.client_config())
        self.retry_policy = RetryPolicy(max_retries=options.max_retries,
                                        retry_backoff_ms=options.retry_backoff_ms)
        self.managers: dict[TopicPartition, PartitionManager] = {}
        self.plans: dict[str, Any] = {}
        self.latest: dict[TopicPartition, int] = {}
        self.available_now_target: dict[TopicPartition, int] | None = None
        self.last_batch_ms = self.now_ms()
        self.failures_position = 0
        # (partition, plan id) of batches Spark committed, acknowledged at the next plan()
        self._done: list[tuple[TopicPartition, int]] = []
        self._committed_sent: dict[TopicPartition, tuple[int, str]] = {}

    def client_config(self) -> dict[str, str]:
        """bootstrap.servers plus the ``kafka.*`` options an admin client understands."""
        from connector.client.config import AdminConfig

        names = AdminConfig.option_names()
        config = {k.removeprefix("kafka."): v for k, v in self.options.extra.items()
                  if k.removeprefix("kafka.") in names}
        return {**config, "bootstrap.servers": self.options.bootstrap_servers}

    # ---- partitions and offsets -----------------------------------------------------------
    def topic_partitions(self) -> list[TopicPartition]:
        o = self.options
        if o.assign is not None:
            return sorted(TopicPartition(t, p) for t, ps in o.assign.items() for p in ps)
        if o.subscribe:
            names = list(o.subscribe)
        else:
            pattern = re.compile(o.subscribe_pattern or "")
            names = sorted(t for t in self.admin.list_topics() if pattern.fullmatch(t)
                           and not t.endswith(".pyq-failures"))
        if not names:
            return []
        described = self.admin.describe_topics(names)
        return sorted(TopicPartition(t, p.partition) for t, d in described.items() for p in d.partitions)

    def bounds(self, tps: list[TopicPartition]) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        """(earliest, latest) offsets: latest is the high watermark."""
        if not tps:
            return {}, {}
        earliest = self.admin.list_offsets({tp: "earliest" for tp in tps})
        latest = self.admin.list_offsets({tp: "latest" for tp in tps})
        return ({TopicPartition(tp.topic, tp.partition): v.offset for tp, v in earliest.items()},
                {TopicPartition(tp.topic, tp.partition): v.offset for tp, v in latest.items()})

    def initial_offsets(self) -> dict[TopicPartition, int]:
        o = self.options
        tps = self.topic_partitions()
        earliest, latest = self.bounds(tps)
        result: dict[TopicPartition, int] = {}
        by_ts: dict[TopicPartition, int] = {}
        if o.starting_timestamp is not None:
            by_ts = {tp: o.starting_timestamp for tp in tps}
        elif o.starting_by_timestamp is not None:
            by_ts = {TopicPartition(t, p): ts for t, ps in o.starting_by_timestamp.items() for p, ts in ps.items()}
        if by_ts:
            found = self.admin.list_offsets({tp: ts for tp, ts in by_ts.items()})
            for tp, v in found.items():
                key = TopicPartition(tp.topic, tp.partition)
                result[key] = v.offset if v.offset >= 0 else latest[key]
        committed = {}
        if o.starting == "committed":
            committed = self._committed(tps)
        for tp in tps:
            if tp in result:
                continue
            if isinstance(o.starting, dict):
                value = o.starting.get(tp.topic, {}).get(tp.partition, EARLIEST)
                result[tp] = earliest[tp] if value == EARLIEST else latest[tp] if value == LATEST else value
            elif o.starting == "committed":
                result[tp] = committed.get(tp, earliest[tp])
            else:
                result[tp] = earliest[tp] if o.starting == "earliest" else latest[tp]
        return result

    def _query_name(self) -> str:
        return self.options.query_name or self.options.group_id or "pyq"

    def _committed(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        """The group's committed offsets; refuses metadata naming another query."""
        out: dict[TopicPartition, int] = {}
        if self.options.group_id is None:  # options refuse startingOffsets=committed without one
            return out
        for tp, om in self.admin.fetch_offsets(self.options.group_id, tps).items():
            key = TopicPartition(tp.topic, tp.partition)
            query = None
            try:
                query = json.loads(om.metadata).get("query") if om.metadata else None
            except (ValueError, AttributeError):
                query = None
            if query is not None and query != self._query_name():
                raise ValueError(
                    f"group {self.options.group_id!r} has offsets for {key.topic}-{key.partition} "
                    f"committed by query {query!r}, not {self._query_name()!r}; set queryName to "
                    f"{query!r} to resume it, or use another groupId")
            out[key] = om.offset
        return out

    # ---- planning -------------------------------------------------------------------------
    def ensure_managers(self, start: dict[str, Any]) -> None:
        """Managers positioned at ``start``; rebuilt from its ``state`` after a restart."""
        states, in_flight = parse_state(start), parse_retries(start)
        for tp, offset in parse_offsets(start).items():
            pm = self.managers.get(tp)
            if pm is not None and (pm.emitted_to == offset or pm.pending):
                continue
            self._done = [(t, plan_id) for t, plan_id in self._done if t != tp]
            if tp in states:
                self.managers[tp], plan_id = PartitionManager.resume(
                    tp.topic, tp.partition, offset, states[tp], in_flight.get(tp, ()), self.retry_policy)
                self._done.append((tp, plan_id))
            else:
                self.managers[tp] = PartitionManager(tp.topic, tp.partition, offset, self.retry_policy)

    def _state(self) -> dict[TopicPartition, dict[str, Any]] | None:
        if not self.options.group_id:
            return None  # no failure reports without a group: nothing to resume
        return {tp: pm.checkpoint() for tp, pm in self.managers.items()}

    def plan(self, start: dict[str, Any], max_rows: int | None, min_rows: int | None) -> dict[str, Any]:
        o = self.options
        now = self.now_ms()
        self.ensure_managers(start)
        # Spark asks for the batch after ``start`` only once the batch ending at ``start`` is
        # done; it calls commit(start) only if it then runs another batch, so the last batch
        # of an AvailableNow run is known to be done only here.
        self._batch_done(start)
        start_offsets = parse_offsets(start)
        failures = int(start.get("failures", self.failures_position))
        tps = self.topic_partitions()
        earliest, latest = self.bounds(tps)
        for tp in tps:
            if tp not in self.managers:  # a partition added mid-query: read it from its start
                log.info("new partition %s-%d: reading it from offset %d", tp.topic, tp.partition, earliest[tp])
                self.managers[tp] = PartitionManager(tp.topic, tp.partition, earliest[tp], self.retry_policy)
        self.latest = dict(latest)
        target = self.available_now_target
        letters: list[Any] = []
        failures = self.failures_position = self._ingest_failures(failures, now, letters)
        self._ack_done()
        for tp, pm in self.managers.items():
            if tp not in latest:
                continue
            adj = pm.reset_out_of_range(earliest[tp], latest[tp], "fail" if o.fail_on_data_loss else "earliest")
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
        self._dead_letter(letters)
        caps = {tp: (min(latest.get(tp, 0), target.get(tp, pm.emitted_to)) if target is not None
                     else latest.get(tp, pm.emitted_to)) for tp, pm in self.managers.items()}
        lag = sum(pm.lag(caps[tp], now) for tp, pm in self.managers.items())
        if min_rows is not None and lag < min_rows and now - self.last_batch_ms < o.max_trigger_delay_ms:
            return self._unchanged(start, failures)
        batch = plan_batch(self.managers, caps, max_rows, None, now)
        if batch.size == 0:
            for plan in batch.plans.values():
                self.managers[TopicPartition(plan.topic, plan.partition)].ack(plan)
            return self._unchanged(start, failures)
        self.last_batch_ms = now
        retries = {}
        for tp, plan in batch.plans.items():
            if plan.retries:
                attempts = {f.offset: f.failures for f in self.managers[tp].failed}
                retries[tp] = [(off, attempts.get(off, 1)) for off in plan.retries]
        end = offsets_json({tp: pm.emitted_to for tp, pm in self.managers.items()}, retries,
                           failures if o.group_id else None, self._state())
        # where a partition's new range begins when not at its start offset (maxOffsetBehind
        # skipped, or an out-of-range reset moved it): the batch must not read what was given up
        moved = {tp: plan.new.start for tp, plan in batch.plans.items()
                 if plan.new.size and tp in start_offsets and plan.new.start != start_offsets[tp]}
        if moved:
            end["from"] = offsets_json(moved)["offsets"]
        self.plans[json.dumps(end, sort_keys=True)] = batch
        return end

    def _unchanged(self, start: dict[str, Any], failures: int) -> dict[str, Any]:
        """No new batch: ``start`` itself, minus its batch's retries (already delivered),
        with the new failures position and retry state. Equal to ``start`` when nothing moved."""
        end = {k: v for k, v in start.items() if k not in ("retries", "state", "from")}
        if "failures" in start or failures:
            end["failures"] = failures
        state = self._state()
        if state:
            end["state"] = offsets_json({}, state=state)["state"]
        return end

    def _dead_letter(self, letters: list[Any]) -> None:
        if not letters:
            return
        o = self.options
        if o.dead_letter_topic:
            from .failures import dead_letter
            dead_letter(o.bootstrap_servers, o.dead_letter_topic, letters)
        else:
            log.warning("%d record(s) given up (%s) and no deadLetterTopic is set: dropped and counted",
                        len(letters), letters[0].reason)

    def _ingest_failures(self, position: int, now: int, letters: list[Any]) -> int:
        """Hand new failure reports to the partition managers; returns the new position."""
        o = self.options
        if not o.group_id:
            return position
        from .failures import failures_topic, read_reports

        topic = failures_topic(o.group_id)
        try:
            _, latest = self.bounds([TopicPartition(topic, 0)])
        except Exception:  # noqa: BLE001 - no failures topic yet: nothing reported
            return position
        end = latest.get(TopicPartition(topic, 0), position)
        by_tp: dict[TopicPartition, list[dict]] = {}
        for report in read_reports(o.bootstrap_servers, o.group_id, position, end):
            by_tp.setdefault(TopicPartition(report["topic"], int(report["partition"])), []).append(report)
        for tp, reports in by_tp.items():
            pm = self.managers.get(tp)
            if pm is None:
                continue
            for report in reports:
                outcome = pm.fail([int(report["offset"])], report.get("reason", ""), now)
                letters.extend(outcome.dead_letters)
        self.failures_position = end
        return end

    def input_ranges(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputRange]:
        """Pure function of (start, end): the same batch always reads the same records."""
        o = self.options
        start_offsets = parse_offsets(start)
        start_offsets.update(parse_offsets({"offsets": end.get("from", {})}))
        end_offsets = parse_offsets(end)
        retries = parse_retries(end)
        ranges = []
        for tp, stop in sorted(end_offsets.items()):
            begin = start_offsets.get(tp, stop if tp in start_offsets else self._new_partition_start(tp, stop))
            if stop > begin:
                ranges.append(OffsetRange(tp.topic, tp.partition, begin, stop))
        pieces = split_ranges(ranges, o.min_partitions)
        if o.max_records_per_partition:
            pieces = [q for r in pieces for q in r.split(-(-r.size // o.max_records_per_partition))]
        common: dict[str, Any] = dict(bootstrap_servers=o.bootstrap_servers, include_headers=o.include_headers,
                      include_attempt=bool(o.group_id), fail_on_data_loss=o.fail_on_data_loss,
                      client_options=dict(o.extra))
        out = [InputRange(topic=r.topic, partition=r.partition, start=r.start, end=r.end, **common)
               for r in pieces]
        for tp, rs in sorted(retries.items()):
            out.append(InputRange(topic=tp.topic, partition=tp.partition, start=0, end=0, retries=rs, **common))
        return out

    def _new_partition_start(self, tp: TopicPartition, stop: int) -> int:
        # A partition that appeared between start and end was planned from its earliest
        # offset; recorded in the manager's base offset, else the log's start now.
        pm = self.managers.get(tp)
        if pm is not None:
            return pm.base_offset
        earliest, _ = self.bounds([tp])
        return earliest.get(tp, stop)

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
        from connector.client import OffsetAndMetadata

        commits = {}
        for tp, pm in self.managers.items():
            meta = json.dumps({"query": self._query_name(), **{
                k: getattr(pm.counters, k) for k in ("skipped", "lost", "retried", "dead_lettered")}})
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
            if self._done and self.options.group_id and not self._unread_failure_reports():
                self._ack_done()
        except Exception as e:  # noqa: BLE001 - best effort: the checkpoint has the truth
            log.warning("could not commit the last batches to group %s on stop: %s",
                        self.options.group_id, e)
        finally:
            self.admin.close()

    def _unread_failure_reports(self) -> bool:
        from .failures import failures_topic

        topic = failures_topic(self.options.group_id or "")
        if topic not in self.admin.list_topics():
            return False
        _, latest = self.bounds([TopicPartition(topic, 0)])
        return latest.get(TopicPartition(topic, 0), 0) > self.failures_position
