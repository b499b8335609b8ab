"""Property tests: random histories of plan/ack/fail/skip/reset/restart against a reference model.

The reference model tracks every owed offset individually in Python sets (the manager keeps
ranges), so the two representations check each other. After every step the invariants of
PartitionManager's docstring must hold; at the end, draining (no more failures, time moves
on, every batch acknowledged) must leave nothing owed.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from connector.source.partition_manager import PartitionManager
from connector.source.retry_policy import RetryPolicy

FAR_FUTURE = 10**15


class PartitionManagerMachine(RuleBasedStateMachine):
    @initialize(
        start=st.integers(0, 1_000),
        max_retries=st.integers(0, 3),
        backoff=st.sampled_from([0, 5, 20]),
    )
    def setup(self, start: int, max_retries: int, backoff: int) -> None:
        self.policy = RetryPolicy(max_retries=max_retries, retry_backoff_ms=backoff,
                                  max_retry_backoff_ms=max(backoff, 50))
        self.pm = PartitionManager("t", 0, start, self.policy)
        self.now = 0
        self.log_start = start
        self.log_end = start
        self.base = start
        # reference model
        self.pending: dict[int, set[int]] = {}  # plan id -> offsets still awaited
        self.failed: dict[int, list] = {}  # offset -> [failures, due_ms, in-flight plan id]
        self.open_plans: list[int] = []
        # Offsets below covered_to were each planned once (delivered) or given up (skipped or
        # lost), in order: emitted_to only moves forward in this machine.
        self.covered_to = start
        self.delivered = 0
        self.given_up = 0
        self.last_committed = start

    # -- planning (the log grows and the clock moves between batches) -----------------------

    @rule(
        limit=st.none() | st.integers(0, 40),
        produced=st.integers(0, 60),
        dt=st.sampled_from([0, 1, 5, 20, 60]),
    )
    def plan(self, limit: int | None, produced: int, dt: int) -> None:
        self.log_end += produced
        self.now += dt
        before = self.pm.emitted_to
        due = {o for o, (_, due_ms, inflight) in self.failed.items()
               if inflight is None and due_ms <= self.now}
        plan = self.pm.plan(self.log_end, limit, self.now)
        assert set(plan.retries) <= due
        assert plan.new.start == before == self.covered_to
        if limit is not None:
            assert plan.size <= limit
        if plan.new.size:  # failed offsets first: new data only once every due retry is served
            assert set(plan.retries) == due
        if len(plan.retries) < len(due):  # the longest-waiting retries were chosen
            taken = max(self.failed[o][1] for o in plan.retries) if plan.retries else -1
            assert all(self.failed[o][1] >= taken for o in due - set(plan.retries))
        for o in plan.retries:
            self.failed[o][2] = plan.plan_id
        self.covered_to = plan.new.end
        self.delivered += plan.new.size
        if plan.new.size:
            self.pending[plan.plan_id] = set(range(plan.new.start, plan.new.end))
        self.open_plans.append(plan.plan_id)

    @precondition(lambda self: self.open_plans)
    @rule(data=st.data())
    def ack(self, data: st.DataObject) -> None:
        plan_id = data.draw(st.sampled_from(self.open_plans))
        self.open_plans.remove(plan_id)
        self.pm.ack(plan_id)
        self.pending.pop(plan_id, None)
        for o in [o for o, entry in self.failed.items() if entry[2] == plan_id]:
            del self.failed[o]

    @rule(data=st.data())
    def fail(self, data: st.DataObject) -> None:
        owed = sorted(set().union(*self.pending.values(), self.failed))
        candidates = st.integers(0, self.pm.emitted_to + 5)
        if owed:
            candidates = st.sampled_from(owed) | st.sampled_from(owed) | candidates
        offsets = data.draw(st.lists(candidates, min_size=1, max_size=6))
        outcome = self.pm.fail(offsets, "boom", self.now)
        scheduled, dead, ignored = set(), set(), set()
        for o in sorted(set(offsets)):
            entry = self.failed.get(o)
            in_pending = any(o in s for s in self.pending.values())
            if (entry is not None and entry[2] is None) or (entry is None and not in_pending):
                ignored.add(o)
                continue
            entry = self.failed.setdefault(o, [0, 0, None])
            entry[0] += 1
            entry[2] = None
            if entry[0] > self.policy.max_retries:
                del self.failed[o]
                dead.add(o)
            else:
                entry[1] = self.now + self.policy.delay_ms(entry[0])
                scheduled.add(o)
        assert set(outcome.scheduled) == scheduled
        assert {d.offset for d in outcome.dead_letters} == dead
        assert set(outcome.ignored) == ignored
        assert all("maxRetries=" in d.reason for d in outcome.dead_letters)

    # -- giving up ---------------------------------------------------------------------------

    @rule(max_behind=st.integers(0, 200))
    def max_offset_behind(self, max_behind: int) -> None:
        horizon = self.log_end - max_behind
        old = self.pm.emitted_to
        adj = self.pm.apply_max_offset_behind(self.log_end, max_behind)
        expected_dead = {o for o in self.failed if o < horizon}
        assert {d.offset for d in adj.dead_letters} == expected_dead
        for o in expected_dead:
            del self.failed[o]
        self._trim_pending(lambda o: o >= horizon)
        assert adj.skipped == max(0, horizon - old)
        self._given_up(old, adj.new_emitted_to)

    @rule(advance=st.integers(0, 150), policy=st.sampled_from(["earliest", "latest"]))
    def retention(self, advance: int, policy: str) -> None:
        self.log_start = min(self.log_end, self.log_start + advance)
        old = self.pm.emitted_to
        adj = self.pm.reset_out_of_range(self.log_start, self.log_end, policy)

        def in_log(o: int) -> bool:
            return self.log_start <= o < self.log_end

        expected_dead = {o for o in self.failed if not in_log(o)}
        assert {d.offset for d in adj.dead_letters} == expected_dead
        for o in expected_dead:
            del self.failed[o]
        self._trim_pending(in_log)
        if old < self.log_start:
            target = self.log_start if policy == "earliest" else self.log_end
            assert (adj.new_emitted_to, adj.lost) == (target, target - old)
        else:
            assert (adj.new_emitted_to, adj.lost) == (old, 0)
        self._given_up(old, adj.new_emitted_to)

    def _given_up(self, old: int, new: int) -> None:
        assert old == self.covered_to <= new
        self.given_up += new - old
        self.covered_to = new

    def _trim_pending(self, keep) -> None:
        for plan_id in list(self.pending):
            self.pending[plan_id] = {o for o in self.pending[plan_id] if keep(o)}
            if not self.pending[plan_id]:
                del self.pending[plan_id]

    @rule()
    def restart(self) -> None:
        state = json.loads(json.dumps(self.pm.state()))
        restored = PartitionManager.from_state(state, self.policy)
        assert restored.state() == self.pm.state()
        self.pm = restored

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def committed_to_is_lowest_owed_offset_and_never_moves_back(self) -> None:
        owed = [min(s) for s in self.pending.values()] + list(self.failed)
        committed = self.pm.committed_to
        assert committed == min(owed, default=self.pm.emitted_to)
        assert committed >= self.last_committed
        self.last_committed = committed

    @invariant()
    def every_offset_below_emitted_to_is_delivered_or_counted(self) -> None:
        c = self.pm.counters
        assert self.pm.emitted_to == self.base + c.delivered + c.skipped + c.lost - c.rewound
        assert c.rewound == 0  # no truncation in this machine
        assert self.pm.emitted_to == self.covered_to
        assert (c.delivered, c.skipped + c.lost) == (self.delivered, self.given_up)

    @invariant()
    def failed_offsets_are_bounded_by_the_retry_limit(self) -> None:
        assert {f.offset for f in self.pm.failed} == set(self.failed)
        assert all(1 <= f.failures <= self.policy.max_retries for f in self.pm.failed)

    def teardown(self) -> None:
        if not hasattr(self, "pm"):
            return
        # Drain: no more failures; every retry becomes due; every batch is acknowledged.
        for plan_id in self.open_plans:
            self.pm.ack(plan_id)
        self.pm.ack(self.pm.plan(self.pm.emitted_to, None, FAR_FUTURE))
        assert self.pm.pending == [] and self.pm.failed == []
        assert self.pm.committed_to == self.pm.emitted_to


TestPartitionManagerMachine = PartitionManagerMachine.TestCase
TestPartitionManagerMachine.settings = settings(
    max_examples=100, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
