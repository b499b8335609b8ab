"""Property tests: random histories of plan/ack/fail/give-up/restart against a reference model.

The reference model tracks every owed offset individually in Python sets (the manager keeps
ranges), so the two representations check each other. After every step the invariants of
PartitionManager's docstring must hold; at the end, draining (no more failures, time moves
on, every batch acknowledged) must leave nothing owed.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from connector.source.partition_manager import PartitionManager
from connector.source.retry_policy import RetryPolicy
from connector.source.source_offsets import PartitionCheckpoint

FAR_FUTURE = 10**15


class PartitionManagerMachine(RuleBasedStateMachine):
    @initialize(
        start=st.integers(0, 1_000),
        max_retries=st.integers(0, 3),
        backoff=st.sampled_from([0, 10, 100]),
    )
    def setup(self, start: int, max_retries: int, backoff: int) -> None:
        self.policy = RetryPolicy(max_retries=max_retries, retry_backoff_ms=backoff,
                                  max_retry_backoff_ms=max(backoff, 300))
        self.pm = PartitionManager("t", 0, start, self.policy)
        self.now = 0
        self.log_start = start
        self.log_end = start
        self.base = start
        # reference model
        self.pending: dict[int, set[int]] = {}  # plan id -> offsets still awaited
        self.failed: dict[int, list] = {}  # offset -> [failures, due_ms, in-flight plan id]
        self.dead_in_pending: set[int] = set()  # dead-lettered, still inside a pending plan
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
        dt=st.sampled_from([0, 0, 1, 10, 50, 200]),
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
        self._forget_dead_outside_pending()

    @rule(data=st.data())
    def fail(self, data: st.DataObject) -> None:
        owing = sorted(set().union(*self.pending.values(), self.failed))
        # Mostly offsets still owed (2 in 3), else any offset (often not owed: ignored).
        picks = data.draw(st.lists(st.integers(0, 2**16), min_size=1, max_size=6))
        offsets = [owing[p % len(owing)] if owing and p % 3 else p % (self.pm.emitted_to + 5)
                   for p in picks]
        outcome = self.pm.fail(offsets, "boom", self.now)
        scheduled, dead, ignored = set(), set(), set()
        for o in sorted(set(offsets)):
            entry = self.failed.get(o)
            in_pending = any(o in s for s in self.pending.values())
            if entry is None:
                owed = in_pending and o not in self.dead_in_pending
            else:
                owed = entry[2] is not None
            if not owed:
                ignored.add(o)
                continue
            entry = self.failed.setdefault(o, [0, 0, None])
            entry[0] += 1
            entry[2] = None
            if entry[0] > self.policy.max_retries:
                del self.failed[o]
                dead.add(o)
                if in_pending:
                    self.dead_in_pending.add(o)
            else:
                entry[1] = self.now + self.policy.delay_ms(entry[0])
                scheduled.add(o)
        assert set(outcome.scheduled) == scheduled
        assert {d.offset for d in outcome.dead_letters} == dead
        assert set(outcome.ignored) == ignored
        assert all("maxRetries=" in d.reason for d in outcome.dead_letters)

    # -- giving up ---------------------------------------------------------------------------

    @rule(
        how=st.sampled_from(["maxOffsetBehind", "earliest", "latest"]),
        amount=st.integers(0, 100) | st.integers(0, 2_000),
    )
    def give_up(self, how: str, amount: int) -> None:
        """maxOffsetBehind=amount, or retention deleting up to amount offsets then a reset."""
        if how == "maxOffsetBehind":
            self._max_offset_behind(amount)
        else:
            self._retention(amount // 8, how)

    def _max_offset_behind(self, max_behind: int) -> None:
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

    def _retention(self, advance: int, policy: str) -> None:
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
        self._forget_dead_outside_pending()

    def _forget_dead_outside_pending(self) -> None:
        self.dead_in_pending = {o for o in self.dead_in_pending
                                if any(o in s for s in self.pending.values())}

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


@settings(max_examples=200, deadline=None)
@given(
    max_retries=st.integers(0, 3),
    ops=st.lists(
        st.tuples(st.sampled_from(["plan", "fail", "ack"]), st.integers(0, 30),
                  st.sampled_from([0, 0, 10, 100, 1_000])),
        max_size=40,
    ),
)
def test_retries_are_served_when_due_longest_waiting_first_and_never_forever(
    max_retries: int, ops: list[tuple[str, int, int]]
) -> None:
    """Only failures and retries (nothing given up): every failed record is either delivered
    again at or after its due time, or dead-lettered after exactly maxRetries retries."""
    pm = PartitionManager("t", 0, 0, RetryPolicy(max_retries=max_retries, retry_backoff_ms=100,
                                                 max_retry_backoff_ms=400))
    now, latest, open_plans = 0, 0, []
    deliveries: dict[int, int] = {}  # offset -> deliveries so far
    dead: set[int] = set()
    for op, n, dt in ops:
        now += dt
        if op == "plan":
            latest += n
            waiting = {f.offset: f.due_ms for f in pm.failed if not f.in_flight}
            plan = pm.plan(latest, n or None, now)
            assert all(waiting[o] <= now for o in plan.retries)
            not_taken = [due for o, due in waiting.items() if due <= now and o not in plan.retries]
            assert all(due >= waiting[o] for due in not_taken for o in plan.retries)
            for o in [*plan.retries, *range(plan.new.start, plan.new.end)]:
                deliveries[o] = deliveries.get(o, 0) + 1
            open_plans.append(plan)
        elif op == "fail" and open_plans:
            plan = open_plans[n % len(open_plans)]
            offsets = [o for o in [*plan.retries, plan.new.start + n] if o in plan.new or o in plan.retries]
            outcome = pm.fail(offsets, "boom", now)
            for letter in outcome.dead_letters:
                assert deliveries[letter.offset] == letter.failures == max_retries + 1
                dead.add(letter.offset)
        elif op == "ack" and open_plans:
            pm.ack(open_plans.pop(n % len(open_plans)))
    for plan in open_plans:
        pm.ack(plan)
    last = pm.plan(latest, None, 10**12)  # everything owed is due by now
    for o in [*last.retries, *range(last.new.start, last.new.end)]:
        deliveries[o] = deliveries.get(o, 0) + 1
    pm.ack(last)
    assert pm.failed == [] and pm.committed_to == pm.emitted_to == latest
    assert all(deliveries[o] >= 1 for o in range(latest))
    assert pm.counters.dead_lettered == len(dead)


TestPartitionManagerMachine = PartitionManagerMachine.TestCase
TestPartitionManagerMachine.settings = settings(
    max_examples=75, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _run(batches: list[tuple[int, int | None, int]], poison: frozenset[int], restarts: frozenset[int],
         max_retries: int, backoff: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]], int]:
    """Drive a manager the way the source driver does (plan; the batch runs and reports its
    failures; the next plan reads them, then acknowledges), restarting from the batch's
    checkpoint before the batches in ``restarts``. Returns (deliveries, dead letters,
    committed_to): each delivery is (offset, attempt)."""
    policy = RetryPolicy(max_retries=max_retries, retry_backoff_ms=backoff,
                         max_retry_backoff_ms=max(backoff, 300))
    pm = PartitionManager("t", 0, 0, policy)
    deliveries: list[tuple[int, int]] = []
    letters: list[tuple[int, int]] = []
    last = None  # (plan, checkpoint, in-flight retries, failure reports) of the previous batch
    now = 0
    for i, (latest, limit, dt) in enumerate([*batches, (None, None, 0)]):
        now += dt
        if last is not None:
            plan, checkpoint, in_flight, reports = last
            if i in restarts:  # a new driver: only the batch's offsets (JSON) survive
                stored = json.loads(json.dumps(checkpoint.to_json()))
                pm, plan_id = PartitionManager.resume(
                    "t", 0, pm.emitted_to, PartitionCheckpoint.from_json(stored, pm.emitted_to),
                    in_flight, policy)
            else:
                plan_id = plan.plan_id
            letters += [(d.offset, d.failures) for d in pm.fail(reports, "poison", now).dead_letters]
            pm.ack(plan_id)
        if latest is None:  # after the last batch: its reports are read and it is acknowledged
            break
        plan = pm.plan(latest, limit, now)
        attempts = {f.offset: f.failures for f in pm.failed}
        in_flight = [(o, attempts[o]) for o in plan.retries]
        rows = in_flight + [(o, 0) for o in range(plan.new.start, plan.new.end)]
        deliveries += rows
        last = (plan, pm.checkpoint(), in_flight, [o for o, _ in rows if o in poison])
    return deliveries, letters, pm.committed_to


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches=st.lists(st.tuples(st.integers(0, 120), st.none() | st.integers(0, 30),
                               st.sampled_from([0, 5, 50, 500])), min_size=1, max_size=25)
    .map(lambda bs: [(max(b[0] for b in bs[:i + 1]), b[1], b[2]) for i, b in enumerate(bs)]),
    poison=st.frozensets(st.integers(0, 120), max_size=15),
    restarts=st.frozensets(st.integers(1, 24)),
    max_retries=st.integers(0, 3),
    backoff=st.sampled_from([0, 10, 100]),
)
def test_a_driver_restarted_from_any_batch_checkpoint_behaves_as_one_that_never_stopped(
        batches, poison, restarts, max_retries, backoff) -> None:
    assert _run(batches, poison, restarts, max_retries, backoff) == \
        _run(batches, poison, frozenset(), max_retries, backoff)


def test_restart_keeps_a_poison_record_on_its_way_to_the_dead_letter_topic() -> None:
    # The scenario a driver without checkpointed retry state got wrong: with maxRetries=2 a
    # restart between the first and second retry forgot the record (never dead-lettered).
    batches: list[tuple[int, int | None, int]] = [
        (10, None, 0), (10, None, 100), (10, None, 1000), (10, None, 1000), (10, None, 1000)]
    deliveries, letters, committed = _run(batches, frozenset({3}), frozenset({1, 2, 3, 4}), 2, 10)
    assert [a for o, a in deliveries if o == 3] == [0, 1, 2]
    assert letters == [(3, 3)] and committed == 10
