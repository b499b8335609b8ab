"""Sharing maxOffsetsPerTrigger across partitions, splitting for minPartitions, plan_batch."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connector.source.offset_range import OffsetRange, TopicPartition
from connector.source.partition_manager import PartitionManager
from connector.source.planning import plan_batch, split_budget, split_ranges
from connector.source.retry_policy import RetryPolicy


@pytest.mark.parametrize(
    ("lags", "limit", "expected"),
    [
        ({"a": 100, "b": 300}, 100, {"a": 25, "b": 75}),
        ({"a": 1, "b": 1_000_000}, 10, {"a": 1, "b": 9}),  # the small partition is not starved
        ({"a": 5, "b": 7, "c": 9}, 2, {"a": 0, "b": 1, "c": 1}),  # fewer units than partitions
        ({"a": 5, "b": 0}, 100, {"a": 5, "b": 0}),  # everything fits
        ({"a": 5, "b": 3}, None, {"a": 5, "b": 3}),  # no limit
        ({"a": 5, "b": 3}, 0, {"a": 0, "b": 0}),
        ({}, 10, {}),
    ],
)
def test_split_budget_examples(lags: dict, limit: int | None, expected: dict) -> None:
    assert split_budget(lags, limit) == expected


lag_maps = st.dictionaries(st.integers(0, 30), st.integers(0, 10**9), max_size=12)


@given(lags=lag_maps, limit=st.integers(0, 10**9))
def test_split_budget_never_exceeds_limit_or_lag_and_is_proportional(lags: dict, limit: int) -> None:
    budget = split_budget(lags, limit)
    total = sum(lags.values())
    lagging = [k for k, lag in lags.items() if lag > 0]
    assert budget.keys() == lags.keys()
    assert sum(budget.values()) == min(limit, total)
    assert all(0 <= budget[k] <= lags[k] for k in lags)
    if total > limit >= len(lagging):
        assert all(budget[k] >= 1 for k in lagging)  # every lagging partition progresses
        rest, capacity = limit - len(lagging), total - len(lagging)
        for k in lagging:  # one each, then the rest in proportion to the remaining lag
            assert abs(budget[k] - (1 + rest * (lags[k] - 1) / capacity)) < 1


@given(lags=lag_maps, limit=st.integers(0, 10**6))
def test_split_budget_does_not_depend_on_dict_order(lags: dict, limit: int) -> None:
    reordered = dict(reversed(list(lags.items())))
    assert split_budget(lags, limit) == split_budget(reordered, limit)


def test_split_ranges_cuts_in_proportion_to_size() -> None:
    ranges = [OffsetRange("t", 0, 0, 900), OffsetRange("t", 1, 0, 100), OffsetRange("t", 2, 5, 5)]
    pieces = split_ranges(ranges, min_partitions=10)
    assert [(p.partition, p.start, p.end) for p in pieces] == (
        [(0, 100 * i, 100 * (i + 1)) for i in range(9)] + [(1, 0, 100)]
    )
    assert split_ranges(ranges, None) == ranges[:2]  # empty ranges are never read
    assert split_ranges(ranges, 2) == ranges[:2]


range_lists = st.lists(
    st.builds(lambda p, start, size: OffsetRange("t", p, start, start + size),
              st.integers(0, 5), st.integers(0, 10**9), st.integers(0, 5_000)),
    max_size=8,
)


@given(ranges=range_lists, min_partitions=st.none() | st.integers(1, 64))
def test_split_ranges_is_deterministic_exact_and_reaches_min_partitions(ranges, min_partitions) -> None:
    pieces = split_ranges(ranges, min_partitions)
    assert pieces == split_ranges(list(ranges), min_partitions)
    # the pieces, in order, are exactly the non-empty input ranges cut at some points
    rebuilt: list[OffsetRange] = []
    for p in pieces:
        assert p.size > 0
        if rebuilt and rebuilt[-1].topic_partition == p.topic_partition and rebuilt[-1].end == p.start:
            rebuilt[-1] = rebuilt[-1].with_bounds(rebuilt[-1].start, p.end)
        else:
            rebuilt.append(p)
    non_empty = [r for r in ranges if r.size]
    assert sum(p.size for p in pieces) == sum(r.size for r in non_empty)
    assert len(rebuilt) <= len(non_empty)
    if min_partitions:
        assert len(pieces) >= min(min_partitions, sum(r.size for r in non_empty))


def managers(*keys: TopicPartition) -> dict[TopicPartition, PartitionManager]:
    policy = RetryPolicy(max_retries=3, retry_backoff_ms=10)
    return {k: PartitionManager(k.topic, k.partition, 0, policy) for k in keys}


A, B, C = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_plan_batch_shares_the_limit_by_lag_and_splits_for_min_partitions() -> None:
    ms = managers(A, B, C)
    batch = plan_batch(ms, {A: 100, B: 300, C: 0}, max_offsets_per_trigger=100,
                       min_partitions=4, now_ms=0)
    assert {k: (p.new.start, p.new.end) for k, p in batch.plans.items()} == {
        A: (0, 25), B: (0, 75), C: (0, 0)}
    assert batch.size == 100
    # minPartitions=4: B holds 3/4 of the offsets, so it is cut in 3
    assert [(r.topic, r.partition, r.start, r.end) for r in batch.input_ranges] == [
        ("a", 0, 0, 25), ("a", 1, 0, 25), ("a", 1, 25, 50), ("a", 1, 50, 75)]
    assert ms[A].emitted_to == 25 and ms[A].pending == [OffsetRange("a", 0, 0, 25)]


def test_plan_batch_serves_retries_first_within_the_budget() -> None:
    ms = managers(A, B)
    first = plan_batch(ms, {A: 50, B: 50}, None, None, now_ms=0)
    ms[A].fail([3, 4, 9], "boom", now_ms=0)
    for key, plan in first.plans.items():
        ms[key].ack(plan)
    batch = plan_batch(ms, {A: 60, B: 60}, max_offsets_per_trigger=10, min_partitions=None,
                       now_ms=10)
    plan_a, plan_b = batch.plans[A], batch.plans[B]
    assert plan_a.retries == (3, 4, 9)  # lag of A = 3 retries + 10 new = 13; B = 10 new
    assert (plan_a.size, plan_b.size) == (6, 4) and plan_a.new.size == 3
    assert [(r.partition, r.start, r.end) for r in batch.input_ranges] == [
        (0, 3, 5), (0, 9, 10), (0, 50, 53), (1, 50, 54)]


def test_plan_batch_without_a_latest_offset_only_retries() -> None:
    ms = managers(A)
    ms[A].plan(10, None, 0)
    ms[A].fail([2], "x", 0)
    batch = plan_batch(ms, {}, None, None, now_ms=100)
    assert batch.plans[A].retries == (2,) and batch.plans[A].new.size == 0


def test_plan_batch_is_deterministic() -> None:
    def run() -> list:
        ms = managers(C, A, B)
        latest = {A: 1_000, B: 7, C: 333}
        return [plan_batch(ms, latest, 97, 5, now_ms=t) for t in range(3)]

    assert run() == run()


def test_plan_batch_rejects_negative_limit() -> None:
    with pytest.raises(ValueError, match="maxOffsetsPerTrigger"):
        plan_batch(managers(A), {A: 1}, -1, None, 0)
