"""Checkpoints written by earlier versions of the source keep working.

Spark stores the source's offsets in the query's checkpoint and hands them back after a
restart or an upgrade. The four literals below were written by the source before its
offsets became a typed :class:`SourceOffsets` (captured from real PartitionManagers, at
the commit that introduced this test). They must parse, re-serialize to the very same JSON
(Spark compares offsets as strings to tell whether a trigger has new data), and resume the
same retry bookkeeping.
"""

from __future__ import annotations

import json

import pytest

from broker_sim.common import TopicPartition
from connector.source.partition_manager import PartitionManager
from connector.source.retry_policy import RetryPolicy
from connector.source.source_offsets import PartitionCheckpoint, SourceOffsets, WaitingRetry

# initialOffset without a group: two topics, partitions in numeric order (2 before 10)
PLAIN = '{"offsets": {"audit": {"0": 7}, "clicks": {"0": 0, "1": 100, "2": 200, "10": 1000, "11": 1100}}}'
# initialOffset with a group: the failures topic position starts at 0
WITH_GROUP = '{"offsets": {"clicks": {"0": 0, "1": 0}}, "failures": 0}'
# a batch with two retries in flight, a retry waiting for its backoff (non-ASCII reason),
# a maxOffsetBehind skip ("from") and counters
BATCH = ('{"offsets": {"clicks": {"0": 1200, "1": 900, "2": 5000}}, "retries": {"clicks": {"0": '
         '[[17, 1], [42, 1]]}}, "failures": 3, "state": {"clicks": {"0": {"from": 1000, "counters": '
         '{"delivered": 1200, "retried": 2}}, "1": {"from": 800, "failed": [[5, 1, 11000, "timeout, '
         '\'quoted\' \\u00e9"]], "counters": {"delivered": 900}}, "2": {"from": 4000, "counters": '
         '{"delivered": 1800, "skipped": 3200}}}}, "from": {"clicks": {"2": 4000}}}')
# the idle trigger after it: same position and state, nothing in flight
IDLE = ('{"offsets": {"clicks": {"0": 1200, "1": 900, "2": 5000}}, "failures": 3, "state": {"clicks": '
        '{"0": {"from": 1000, "counters": {"delivered": 1200, "retried": 2}}, "1": {"from": 800, '
        '"failed": [[5, 1, 11000, "timeout, \'quoted\' \\u00e9"]], "counters": {"delivered": 900}}, '
        '"2": {"from": 4000, "counters": {"delivered": 1800, "skipped": 3200}}}}}')


@pytest.mark.parametrize("written", [PLAIN, WITH_GROUP, BATCH, IDLE])
def test_an_old_checkpoint_reserializes_to_the_same_json(written: str) -> None:
    parsed = SourceOffsets.from_json(json.loads(written))
    assert json.dumps(parsed.to_json()) == written


def test_an_old_checkpoint_parses_into_typed_parts() -> None:
    batch = SourceOffsets.from_json(json.loads(BATCH))
    c0, c1, c2 = (TopicPartition("clicks", p) for p in range(3))
    assert batch.offsets == {c0: 1200, c1: 900, c2: 5000}
    assert batch.retries == {c0: ((17, 1), (42, 1))}
    assert batch.failures == 3 and batch.moved_from == {c2: 4000}
    assert batch.state[c1] == PartitionCheckpoint(800, (WaitingRetry(5, 1, 11_000, "timeout, 'quoted' é"),),
                                                  {"delivered": 900})
    assert batch.without_batch().to_json() == json.loads(IDLE)
    assert SourceOffsets.from_json(json.loads(PLAIN)).failures is None


def test_a_driver_resumed_from_an_old_checkpoint_owes_the_same_records() -> None:
    """Partition 1 owes offset 5 (due at 11,000 ms wall time); partition 0's retries of 17
    and 42 were in flight in the batch, so they come back pending until it is acknowledged."""
    batch = SourceOffsets.from_json(json.loads(BATCH))
    policy = RetryPolicy(max_retries=3, retry_backoff_ms=1000)
    managers = {tp: PartitionManager.resume(tp.topic, tp.partition, batch.offsets[tp], batch.state[tp],
                                            batch.retries.get(tp, ()), policy)
                for tp in batch.offsets}
    p0, plan0 = managers[TopicPartition("clicks", 0)]
    p1, plan1 = managers[TopicPartition("clicks", 1)]
    assert [f.offset for f in p0.failed] == [17, 42] and p0.committed_to == 17
    assert [(f.offset, f.failures, f.due_ms) for f in p1.failed] == [(5, 1, 11_000)]
    p1.ack(plan1)
    assert p1.plan(900, None, now_ms=10_999).retries == ()  # not due yet
    assert p1.plan(900, None, now_ms=11_000).retries == (5,)
    p0.ack(plan0)  # the retries' batch committed with no new failure reports: done
    assert p0.failed == [] and p0.committed_to == 1200
    for tp, (pm, _) in managers.items():
        assert pm.counters.delivered == batch.state[tp].counters["delivered"]
