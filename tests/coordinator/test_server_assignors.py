"""The consumer protocol's server-side assignors: balance, coverage and stickiness."""

from __future__ import annotations

import random

import pytest

from broker_sim.coordinator.group.server_assignors import range_, uniform


def flat(assignment: dict) -> list[tuple[str, int]]:
    return [(t, p) for t, ps in assignment.items() for p in ps]


@pytest.mark.parametrize("seed", range(20))
def test_uniform_covers_every_partition_once_and_balances_within_one(seed: int) -> None:
    rng = random.Random(seed)
    partitions = {f"t{i}": rng.randint(1, 12) for i in range(rng.randint(1, 4))}
    members = {f"m{i}": tuple(partitions) for i in range(rng.randint(1, 9))}
    previous = uniform(dict(list(members.items())[:-1]) or members, partitions, {})
    out = uniform(members, partitions, previous)
    every = [tp for a in out.values() for tp in flat(a)]
    assert sorted(every) == sorted((t, p) for t, n in partitions.items() for p in range(n))
    counts = [len(flat(a)) for a in out.values()]
    assert max(counts) - min(counts) <= 1


def test_uniform_moves_only_what_balance_needs_when_a_member_joins() -> None:
    partitions = {"t": 12}
    three = {f"m{i}": ("t",) for i in range(3)}
    before = uniform(three, partitions, {})
    four = {**three, "m3": ("t",)}
    after = uniform(four, partitions, before)
    moved = sum(len(set(flat(before[m])) - set(flat(after[m]))) for m in three)
    assert moved == 3  # each of the three gives exactly one to the newcomer
    assert len(flat(after["m3"])) == 3


def test_uniform_with_different_subscriptions_gives_each_topic_to_its_subscribers() -> None:
    out = uniform({"a": ("x",), "b": ("x", "y")}, {"x": 2, "y": 4}, {})
    assert set(out["a"]) <= {"x"}
    assert sorted(flat(out["a"]) + flat(out["b"])) == \
        [("x", 0), ("x", 1), ("y", 0), ("y", 1), ("y", 2), ("y", 3)]


def test_range_gives_co_partitioned_topics_the_same_numbers() -> None:
    out = range_({"b": ("x", "y"), "a": ("x", "y")}, {"x": 5, "y": 5}, {})
    assert out["a"] == {"x": frozenset({0, 1, 2}), "y": frozenset({0, 1, 2})}
    assert out["b"] == {"x": frozenset({3, 4}), "y": frozenset({3, 4})}
