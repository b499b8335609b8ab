"""PartitionManager: planning, acknowledgement, failures and retries, giving up, persistence."""

from __future__ import annotations

import json
import logging

import pytest

from connector.source.offset_reset import DataLossError, ResetPolicy
from connector.source.partition_manager import PartitionManager
from connector.source.retry_policy import RetryPolicy
from connector.source.source_offsets import PartitionCheckpoint

POLICY = RetryPolicy(max_retries=2, retry_backoff_ms=100, max_retry_backoff_ms=1_000)


def manager(start: int = 0, policy: RetryPolicy = POLICY) -> PartitionManager:
    return PartitionManager("clicks", 3, start_offset=start, retry_policy=policy)


def bounds(plan) -> tuple[int, int]:
    return plan.new.start, plan.new.end


# -- planning ------------------------------------------------------------------------------


def test_plan_takes_new_offsets_up_to_limit_and_latest() -> None:
    pm = manager(start=10)
    assert bounds(pm.plan(latest_offset=100, limit=30, now_ms=0)) == (10, 40)
    assert bounds(pm.plan(100, 1_000, 0)) == (40, 100)
    assert bounds(pm.plan(100, 1_000, 0)) == (100, 100)  # nothing new
    assert bounds(pm.plan(150, None, 0)) == (100, 150)  # no limit
    assert pm.emitted_to == 150
    assert [(r.start, r.end) for r in pm.pending] == [(10, 40), (40, 100), (100, 150)]
    assert pm.committed_to == 10


def test_plan_below_emitted_to_plans_nothing() -> None:
    pm = manager()
    pm.plan(100, None, 0)
    plan = pm.plan(latest_offset=60, limit=None, now_ms=0)  # broker reports a smaller end
    assert plan.is_empty and pm.emitted_to == 100


def test_empty_plan_is_not_pending_and_ack_is_harmless() -> None:
    pm = manager()
    plan = pm.plan(0, 10, 0)
    assert plan.is_empty and pm.pending == []
    pm.ack(plan)
    assert pm.committed_to == 0


def test_plan_ids_are_unique_even_for_empty_plans() -> None:
    pm = manager()
    ids = [pm.plan(5 * i, 5, 0).plan_id for i in range(4)]
    assert len(set(ids)) == 4


def test_lag_counts_due_retries_and_new_offsets() -> None:
    pm = manager()
    pm.plan(100, 50, now_ms=0)
    pm.fail([3, 4], "boom", now_ms=0)
    assert pm.lag(latest_offset=100, now_ms=0) == 50  # retries not due yet
    assert pm.lag(latest_offset=100, now_ms=100) == 52


# -- acknowledgement and committed_to ------------------------------------------------------


def test_ack_moves_committed_to_to_the_next_pending_range_then_emitted_to() -> None:
    pm = manager()
    p1, p2 = pm.plan(100, 40, 0), pm.plan(100, 40, 0)
    pm.ack(p1)
    assert pm.committed_to == 40
    pm.ack(p2.plan_id)  # by id
    assert pm.committed_to == pm.emitted_to == 80


def test_out_of_order_ack_does_not_pass_an_older_pending_range() -> None:
    pm = manager()
    p1, p2 = pm.plan(100, 40, 0), pm.plan(100, 40, 0)
    pm.ack(p2)
    assert pm.committed_to == 0
    pm.ack(p1)
    assert pm.committed_to == 80


def test_ack_twice_is_a_no_op_and_unknown_plans_are_refused() -> None:
    pm = manager()
    p1 = pm.plan(100, 40, 0)
    pm.ack(p1)
    pm.ack(p1)
    assert pm.committed_to == 40
    with pytest.raises(ValueError, match="no plan 7 was issued"):
        pm.ack(7)
    other = PartitionManager("other", 0, 0).plan(10, None, 0)
    with pytest.raises(ValueError, match="other-0"):
        pm.ack(other)


# -- failures and retries ------------------------------------------------------------------


def test_failed_offset_holds_committed_to_after_its_batch_is_acked() -> None:
    pm = manager()
    p1 = pm.plan(100, None, 0)
    assert pm.fail([42, 57], "bad json", now_ms=0).scheduled == (42, 57)
    pm.ack(p1)
    assert pm.committed_to == 42
    assert [(f.offset, f.failures, f.due_ms) for f in pm.failed] == [(42, 1, 100), (57, 1, 100)]


def test_failed_offsets_wait_for_backoff_then_come_before_new_data() -> None:
    pm = manager()
    p1 = pm.plan(100, 50, now_ms=0)
    pm.fail([7], "boom", now_ms=0)
    pm.ack(p1)
    early = pm.plan(100, 10, now_ms=99)
    assert early.retries == () and bounds(early) == (50, 60)
    due = pm.plan(100, 10, now_ms=100)
    assert due.retries == (7,) and bounds(due) == (60, 69)  # the retry counts against the limit
    assert [(r.start, r.end) for r in due.ranges()] == [(7, 8), (60, 69)]


def test_backoff_doubles_with_each_failure() -> None:
    pm = manager(policy=RetryPolicy(max_retries=5, retry_backoff_ms=100, max_retry_backoff_ms=250))
    pm.plan(10, None, 0)
    pm.fail([1], "x", now_ms=0)
    due_times = [pm.failed[0].due_ms]
    for now in (100, 300, 550):
        assert pm.plan(10, None, now).retries == (1,)
        pm.fail([1], "x", now_ms=now)
        due_times.append(pm.failed[0].due_ms)
    assert due_times == [100, 300, 550, 800]  # +100, +200, +250 (cap), +250


def test_longest_waiting_retries_go_first_when_the_limit_is_small() -> None:
    pm = manager()
    pm.plan(100, None, 0)
    pm.fail([50], "x", now_ms=0)  # due at 100
    assert pm.plan(100, None, now_ms=100).retries == (50,)
    pm.fail([50], "x", now_ms=100)  # second failure: due at 300
    pm.fail([10], "x", now_ms=150)  # due at 250
    pm.fail([30], "x", now_ms=160)  # due at 260
    plan = pm.plan(100, limit=2, now_ms=1_000)
    assert plan.retries == (10, 30) and plan.new.size == 0  # 50 was due last: it waits
    assert pm.plan(100, limit=2, now_ms=1_000).retries == (50,)


def test_retry_that_succeeds_is_done_when_its_batch_is_acked() -> None:
    pm = manager()
    p1 = pm.plan(100, None, 0)
    pm.fail([42], "x", 0)
    pm.ack(p1)
    p2 = pm.plan(100, None, 100)
    assert p2.retries == (42,)
    pm.ack(p2)
    assert pm.failed == [] and pm.committed_to == 100


def test_retry_that_fails_again_survives_the_ack_of_its_batch() -> None:
    pm = manager()
    p1 = pm.plan(100, None, 0)
    pm.fail([42], "x", 0)
    pm.ack(p1)
    p2 = pm.plan(100, None, 100)
    assert pm.fail([42], "again", now_ms=150).scheduled == (42,)
    pm.ack(p2)
    assert [(f.offset, f.failures, f.due_ms, f.reason) for f in pm.failed] == [(42, 2, 350, "again")]
    assert pm.committed_to == 42


def test_dead_letter_after_max_retries_names_the_option() -> None:
    pm = manager()  # maxRetries=2: three deliveries fail, then give up
    pm.plan(100, None, 0)
    now = 0
    for _ in range(2):
        assert pm.fail([9], "poison", now).scheduled == (9,)
        now += 10_000
        assert pm.plan(100, None, now).retries == (9,)
    outcome = pm.fail([9], "poison", now)
    assert outcome.scheduled == ()
    (letter,) = outcome.dead_letters
    assert (letter.topic, letter.partition, letter.offset, letter.failures) == ("clicks", 3, 9, 3)
    assert letter.reason == "maxRetries=2 exhausted: failed 3 times; last error: poison"
    assert pm.counters.dead_lettered == 1 and pm.failed == []


def test_a_dead_lettered_offset_is_not_dead_lettered_twice() -> None:
    pm = manager(policy=RetryPolicy(max_retries=0))
    p1 = pm.plan(10, None, 0)
    assert [d.offset for d in pm.fail([4], "x", 0).dead_letters] == [4]
    again = pm.fail([4], "reported twice", 1)  # its batch is still pending
    assert again.ignored == (4,) and again.dead_letters == ()
    pm.ack(p1)
    assert pm.fail([4], "late", 2).ignored == (4,)
    assert pm.counters.dead_lettered == 1 and pm.failed == []


def test_max_retries_zero_dead_letters_on_first_failure() -> None:
    pm = manager(policy=RetryPolicy(max_retries=0))
    pm.plan(10, None, 0)
    assert [d.offset for d in pm.fail([4], "x", 0).dead_letters] == [4]


def test_failures_for_offsets_not_owed_are_ignored_and_logged(caplog) -> None:
    pm = manager()
    p1 = pm.plan(100, 50, 0)
    pm.fail([5], "x", 0)
    pm.ack(p1)
    with caplog.at_level(logging.WARNING, "connector.source.partition_manager"):
        outcome = pm.fail([5, 20, 70, 500], "late", now_ms=1)
    # 5 already waits for its retry, 20 was committed, 70 and 500 were never planned
    assert outcome.ignored == (5, 20, 70, 500) and outcome.scheduled == ()
    assert pm.failed[0].failures == 1
    assert "[5, 20, 70, 500]" in caplog.text


def test_long_failure_reasons_are_truncated_in_state() -> None:
    pm = manager()
    pm.plan(10, None, 0)
    pm.fail([1], "x" * 10_000, 0)
    assert len(pm.failed[0].reason) == 200


# -- maxOffsetBehind -----------------------------------------------------------------------


def test_max_offset_behind_skips_ahead_and_counts_and_logs(caplog) -> None:
    pm = manager(start=100)
    with caplog.at_level(logging.WARNING, "connector.source.partition_manager"):
        adj = pm.apply_max_offset_behind(latest_offset=10_000, max_offset_behind=1_000)
    assert (adj.old_emitted_to, adj.new_emitted_to, adj.skipped) == (100, 9_000, 8_900)
    assert pm.emitted_to == pm.committed_to == 9_000
    assert pm.counters.skipped == 8_900
    assert "clicks-3" in caplog.text and "[100, 9000)" in caplog.text
    assert bounds(pm.plan(10_000, None, 0)) == (9_000, 10_000)


def test_max_offset_behind_gives_up_failed_and_pending_work_below_the_horizon() -> None:
    pm = manager()
    p1 = pm.plan(1_000, 600, 0)  # [0, 600) pending
    pm.fail([10, 550], "x", 0)
    adj = pm.apply_max_offset_behind(latest_offset=1_500, max_offset_behind=1_000)  # horizon 500
    assert [d.offset for d in adj.dead_letters] == [10]
    assert adj.dead_letters[0].reason.startswith("maxOffsetBehind=1000:")
    assert adj.dropped == 500 and adj.skipped == 0
    assert [(r.start, r.end) for r in pm.pending] == [(500, 600)]
    assert pm.committed_to == 500
    pm.ack(p1)
    assert pm.committed_to == 550  # the failed offset above the horizon is still owed


def test_max_offset_behind_within_bound_changes_nothing() -> None:
    pm = manager()
    pm.plan(100, None, 0)
    adj = pm.apply_max_offset_behind(latest_offset=150, max_offset_behind=150)
    assert not adj.changed and pm.committed_to == 0
    with pytest.raises(ValueError):
        pm.apply_max_offset_behind(100, -1)


# -- out of range --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "resume", "lost"),
    [(ResetPolicy.EARLIEST, 50, 40), ("latest", 200, 190)],
)
def test_retention_gap_resets_by_policy_and_counts_lost(policy, resume: int, lost: int) -> None:
    pm = manager(start=10)
    adj = pm.reset_out_of_range(log_start=50, log_end=200, policy=policy)
    assert (adj.new_emitted_to, adj.lost, adj.rewound) == (resume, lost, 0)
    assert pm.emitted_to == pm.committed_to == resume and pm.counters.lost == lost


def test_fail_policy_raises_naming_topic_partition_and_offsets_and_changes_nothing() -> None:
    pm = manager(start=10)

    def observed() -> tuple:
        return pm.emitted_to, pm.committed_to, pm.counters, pm.failed, pm.checkpoint()

    before = observed()
    with pytest.raises(DataLossError) as info:
        pm.reset_out_of_range(50, 200, ResetPolicy.FAIL)
    assert str(info.value).startswith("Data loss on clicks-3: offsets [10, 50) are no longer available")
    assert (info.value.topic, info.value.partition, info.value.ranges) == ("clicks", 3, [(10, 50)])
    assert observed() == before


def test_fail_policy_raises_for_failed_records_that_are_gone() -> None:
    pm = manager()
    p1 = pm.plan(100, None, 0)
    pm.fail([5, 6, 9], "x", 0)
    pm.ack(p1)
    with pytest.raises(DataLossError) as info:
        pm.reset_out_of_range(log_start=8, log_end=100, policy="fail")
    assert info.value.ranges == [(5, 7)]


@pytest.mark.parametrize(("policy", "resume"), [("earliest", 20), ("latest", 80)])
def test_truncation_rewinds_by_policy_and_drops_what_is_gone(policy: str, resume: int) -> None:
    pm = manager()
    pm.ack(pm.plan(90, None, 0))
    p2 = pm.plan(100, None, 0)  # [90, 100) pending
    pm.fail([95], "x", 0)
    adj = pm.reset_out_of_range(log_start=20, log_end=80, policy=policy)
    assert (adj.new_emitted_to, adj.rewound, adj.lost) == (resume, 100 - resume, 0)
    assert [d.offset for d in adj.dead_letters] == [95]
    assert pm.pending == [] and pm.failed == [] and pm.committed_to == resume
    pm.ack(p2)  # the batch still completes in Spark: harmless
    assert bounds(pm.plan(150, None, 0)) == (resume, 150)
    with pytest.raises(DataLossError, match=r"offsets \[80, 100\)"):
        manager(start=100).reset_out_of_range(20, 80, "fail")


def test_in_range_reset_only_cleans_what_the_log_no_longer_has() -> None:
    pm = manager()
    p1 = pm.plan(100, None, 0)
    pm.fail([3, 60], "x", 0)
    adj = pm.reset_out_of_range(log_start=50, log_end=300, policy="earliest")
    assert adj.new_emitted_to == 100 and adj.lost == 0
    assert [d.offset for d in adj.dead_letters] == [3]
    assert adj.dead_letters[0].reason.startswith("outOfRange:")
    assert adj.dropped == 50 and pm.committed_to == 50
    pm.ack(p1)
    assert pm.committed_to == 60
    assert not pm.reset_out_of_range(50, 300, "latest").changed


def test_reset_rejects_bad_bounds_and_policies() -> None:
    with pytest.raises(ValueError):
        manager().reset_out_of_range(10, 5, "earliest")
    with pytest.raises(ValueError):
        manager().reset_out_of_range(0, 5, "sometimes")


# -- persistence ---------------------------------------------------------------------------


def test_checkpoint_round_trips_through_json_and_resumes_identically() -> None:
    """A driver restarted from a batch's checkpoint plans exactly what one that never
    stopped would (the checkpoint is taken right after a plan, earlier plans acknowledged)."""
    pm = manager(start=5)
    p1 = pm.plan(100, 40, 0)
    pm.fail([7, 8], "bad", 10)
    pm.ack(p1)
    p2 = pm.plan(100, 40, 200)  # retries 7, 8 in flight, new [45, 83)
    in_flight = [(o, 1) for o in p2.retries]
    stored = json.loads(json.dumps(pm.checkpoint().to_json()))
    restored, plan_id = PartitionManager.resume(
        "clicks", 3, pm.emitted_to, PartitionCheckpoint.from_json(stored, pm.emitted_to),
        in_flight, POLICY)
    assert restored.checkpoint() == pm.checkpoint()
    assert restored.committed_to == pm.committed_to and restored.counters == pm.counters
    for mgr, pid in ((pm, p2.plan_id), (restored, plan_id)):
        mgr.fail([8], "bad again", 250)
        mgr.ack(pid)
    a, b = pm.plan(300, 20, 10_000), restored.plan(300, 20, 10_000)
    assert (a.retries, a.new) == (b.retries, b.new)
    assert pm.checkpoint() == restored.checkpoint()


def test_checkpoint_is_small_even_for_huge_ranges() -> None:
    pm = manager()
    for _ in range(3):
        pm.plan(10**12, 10**10, 0)
    assert len(json.dumps(pm.checkpoint().to_json())) < 500
