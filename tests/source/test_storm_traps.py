"""Storm's KafkaSpout PartitionManager traps, one test each.

pyq's source keeps, per partition, the same bookkeeping as Storm's KafkaSpout
PartitionManager (emitted, pending, failed, committed offsets; see docs/architecture.md,
"The source"). That design had known traps in Storm; each test below replays the situation
that hurt Storm users (said in the test's docstring) and asserts what pyq does instead.
"""

from __future__ import annotations

from connector.source.failed_offsets import DeadLetter
from connector.source.partition_manager import PartitionManager
from connector.source.retry_policy import RetryPolicy


def test_trap1_failed_offset_does_not_sit_in_pending_forever() -> None:
    """Storm: a failed offset that was not retried stayed in the pending map, so the committed
    offset (lowest pending) stopped moving for good and the map kept growing.
    pyq: once the offset is given up (retries exhausted or too far behind), it leaves every
    structure and committed_to catches up with emitted_to."""
    pm = PartitionManager("orders", 1, 0, RetryPolicy(max_retries=1, retry_backoff_ms=10))
    batch = pm.plan(latest_offset=1_000, limit=None, now_ms=0)
    pm.fail([3], "poison", now_ms=0)
    pm.ack(batch)
    assert pm.committed_to == 3  # held back while a retry is owed: correct
    retry = pm.plan(1_000, None, now_ms=10)
    pm.fail([3], "poison", now_ms=11)  # retry limit reached: dead-lettered
    pm.ack(retry)
    assert pm.committed_to == pm.emitted_to == 1_000
    assert pm.pending == [] and pm.failed == []

    # The other way out: an owed offset that falls more than maxOffsetBehind behind.
    pm = PartitionManager("orders", 1, 0, RetryPolicy(max_retries=100, retry_backoff_ms=1_000))
    batch = pm.plan(1_000, None, now_ms=0)
    pm.fail([3], "poison", now_ms=0)
    pm.ack(batch)
    assert pm.committed_to == 3
    for step in range(1, 6):  # the log keeps growing; the retry is never due in this window
        pm.ack(pm.plan(1_000 * (step + 1), None, now_ms=step))
        pm.apply_max_offset_behind(latest_offset=pm.emitted_to, max_offset_behind=2_500)
    assert pm.committed_to == pm.emitted_to == 6_000
    assert pm.failed == [] and pm.counters.dead_lettered == 1


def test_trap2_a_record_that_always_fails_does_not_stall_its_partition() -> None:
    """Storm: while a failed message was outstanding the spout kept fetching from it and
    retried it without limit, so a poison message held its partition back.
    pyq: new data flows in every batch while the poison record waits out its backoff, and
    after maxRetries retries it is dead-lettered."""
    pm = PartitionManager("orders", 0, 0,
                          RetryPolicy(max_retries=3, retry_backoff_ms=100, max_retry_backoff_ms=10_000))
    latest, now, deliveries = 0, 0, 0
    dead: list[DeadLetter] = []
    for _ in range(20):
        latest += 50
        now += 150
        plan = pm.plan(latest, limit=100, now_ms=now)
        assert plan.new.size > 0  # new data every batch
        delivered = set(plan.retries) | ({7} if 7 in plan.new else set())
        if 7 in delivered:
            deliveries += 1
            dead += pm.fail([7], "cannot parse", now_ms=now).dead_letters
        pm.ack(plan)
    assert deliveries == 4  # first delivery + maxRetries retries
    assert [d.offset for d in dead] == [7] and "maxRetries=3" in dead[0].reason
    assert pm.emitted_to == latest and pm.committed_to == latest


def test_trap3_out_of_range_reset_honours_earliest() -> None:
    """Storm: an out-of-range offset was reset to a fixed position (latest, in the older
    storm-kafka spout), whatever the user had configured, silently skipping the log.
    pyq: with policy earliest it resumes at the log start and only the offsets retention
    actually deleted are counted as lost."""
    pm = PartitionManager("orders", 2, start_offset=100)
    adj = pm.reset_out_of_range(log_start=400, log_end=10_000, policy="earliest")
    assert adj.new_emitted_to == 400 and adj.lost == 300
    plan = pm.plan(latest_offset=10_000, limit=None, now_ms=0)
    assert (plan.new.start, plan.new.end) == (400, 10_000)  # the whole surviving log is read


def test_trap4_no_unexplained_too_many_failures_threshold() -> None:
    """Storm: with no ack yet, more failures than maxOffsetBehind killed the spout with a bare
    "Too many tuple failures" -- a limit borrowed from an unrelated setting.
    pyq: failures are never counted against anything but the explicit maxRetries option, per
    record, and the dead-letter reason names it."""
    pm = PartitionManager("orders", 0, 0, RetryPolicy(max_retries=2, retry_backoff_ms=0))
    pm.plan(latest_offset=5_000, limit=None, now_ms=0)
    outcome = pm.fail(range(5_000), "downstream timeout", now_ms=0)  # every record, no ack yet
    assert len(outcome.scheduled) == 5_000 and outcome.dead_letters == ()
    retry = pm.plan(5_000, None, now_ms=0)
    assert retry.retries == tuple(range(5_000))
    pm.fail(range(5_000), "downstream timeout", now_ms=0)
    pm.plan(5_000, None, now_ms=0)
    dead = pm.fail([0], "downstream timeout", now_ms=0).dead_letters
    assert dead[0].reason.startswith("maxRetries=2 exhausted: failed 3 times")
