"""OffsetRange, plan serialisation and retry policy: the small value types of the source."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker_sim.protocol.errors import InvalidConfig
from connector.source.offset_range import OffsetRange, ranges_from_offsets
from connector.source.partition_plan import PartitionPlan
from connector.source.retry_policy import RetryPolicy


def test_range_rejects_negative_or_reversed_bounds() -> None:
    with pytest.raises(ValueError, match=r"\[5, 3\) for t-0"):
        OffsetRange("t", 0, 5, 3)
    with pytest.raises(ValueError):
        OffsetRange("t", 0, -1, 3)


def test_range_contains_is_half_open() -> None:
    r = OffsetRange("t", 0, 10, 12)
    assert [o in r for o in (9, 10, 11, 12)] == [False, True, True, False]


@given(start=st.integers(0, 10**12), size=st.integers(0, 10_000), parts=st.integers(1, 50))
def test_split_covers_range_exactly_with_near_equal_pieces(start: int, size: int, parts: int) -> None:
    r = OffsetRange("t", 1, start, start + size)
    pieces = r.split(parts)
    assert pieces == r.split(parts)  # deterministic
    assert len(pieces) == min(parts, size)
    offsets = [(p.start, p.end) for p in pieces]
    assert all(a_end == b_start for (_, a_end), (b_start, _) in pairwise(offsets))
    if pieces:
        assert (pieces[0].start, pieces[-1].end) == (r.start, r.end)
        sizes = [p.size for p in pieces]
        assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1


@given(st.sets(st.integers(0, 300)))
def test_ranges_from_offsets_covers_exactly_the_offsets(offsets: set[int]) -> None:
    ranges = ranges_from_offsets("t", 0, offsets)
    covered = [o for r in ranges for o in range(r.start, r.end)]
    assert covered == sorted(offsets)
    assert all(a.end < b.start for a, b in pairwise(ranges))  # maximal runs


def test_range_and_plan_round_trip_through_json() -> None:
    r = OffsetRange("clicks", 2, 5, 9)
    assert OffsetRange.from_json(json.loads(json.dumps(r.to_json()))) == r
    plan = PartitionPlan("clicks", 2, 7, (1, 2, 4), OffsetRange("clicks", 2, 9, 20))
    assert PartitionPlan.from_json(json.loads(json.dumps(plan.to_json()))) == plan
    assert [(x.start, x.end) for x in plan.ranges()] == [(1, 3), (4, 5), (9, 20)]
    assert (plan.size, plan.end_offset, plan.is_empty) == (14, 20, False)


def test_retry_delay_doubles_per_failure_up_to_the_cap() -> None:
    policy = RetryPolicy(max_retries=10, retry_backoff_ms=50, max_retry_backoff_ms=1_000)
    assert [policy.delay_ms(n) for n in range(1, 8)] == [50, 100, 200, 400, 800, 1000, 1000]
    assert policy.delay_ms(10**6) == 1000  # no overflow, no huge ints
    assert RetryPolicy(retry_backoff_ms=0, max_retry_backoff_ms=0).delay_ms(5) == 0


def test_retry_limit_counts_retries_not_deliveries() -> None:
    assert RetryPolicy(max_retries=0).exhausted(1)
    policy = RetryPolicy(max_retries=2)
    assert [policy.exhausted(n) for n in (1, 2, 3)] == [False, False, True]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_retries": -1}, "maxRetries"),
        ({"max_retries": True}, "maxRetries"),
        ({"retry_backoff_ms": -5}, "retryBackoffMs"),
        ({"retry_backoff_ms": 500, "max_retry_backoff_ms": 100}, "must be >= retryBackoffMs"),
    ],
)
def test_retry_policy_rejects_bad_values_naming_the_option(kwargs: dict, message: str) -> None:
    with pytest.raises(InvalidConfig, match=message):
        RetryPolicy(**kwargs)
