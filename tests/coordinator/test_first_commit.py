"""A group that an OffsetCommit creates exists once that commit is written, as in Kafka
(whose coordinator reads groups at the last committed offset and reverts a failed
write): not listed or described while the write replicates, gone if it fails. Driven by
a manual clock over real logs; broker 1 of ``__consumer_offsets`` never fetches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_sim.coordinator.group.group import CommittedOffset
from broker_sim.protocol.errors import (
    CoordinatorNotAvailable,
    GroupIdNotFound,
    OffsetMetadataTooLarge,
)
from tests.coordinator.group_harness import GroupHarness, Outcome
from tests.wire import wait_for


def listed(h: GroupHarness) -> set[str]:
    error, groups = h.coordinator.list_groups()
    assert error == 0
    return {g for g, *_ in groups}


def commit(h: GroupHarness, group: str, offset: int) -> Outcome:
    out = Outcome()
    h.coordinator.commit_offsets(group, "", None, -1, {("t", 0): CommittedOffset(offset)}, out)
    return out


@pytest.fixture
def waiting(tmp_path: Path) -> Iterator[GroupHarness]:
    """Writes to __consumer_offsets wait for broker 1, which never fetches."""
    h = GroupHarness(tmp_path, offsets_isr=(0, 1))
    yield h
    h.close()


def test_a_group_is_not_listed_while_its_first_commit_replicates_and_is_gone_if_it_fails(
        waiting):
    h = waiting
    first = commit(h, "new", 5)
    assert not first.done
    assert "new" not in listed(h)
    assert h.coordinator.describe_group("new").state == "Dead"
    h.clock.advance(h.config.offsets_commit_timeout_ms)  # the produce purgatory's reaper
    wait_for(lambda: first.done, what="the commit timed out")
    assert first.value == {("t", 0): CoordinatorNotAvailable.code}
    assert "new" not in listed(h)
    assert h.coordinator.store.get("new") is None
    h.coordinator.delete_groups(["new"], deleted := Outcome())
    assert deleted.value == {"new": GroupIdNotFound.code}


def test_a_second_first_commit_in_flight_keeps_the_group_when_the_first_fails(tmp_path):
    h = GroupHarness(tmp_path, offsets_isr=(0, 1))
    try:
        first = commit(h, "raced", 5)
        h.clock.advance(h.config.offsets_commit_timeout_ms // 2)
        second = commit(h, "raced", 6)
        h.clock.advance(h.config.offsets_commit_timeout_ms // 2)
        wait_for(lambda: first.done, what="the first commit timed out")
        assert h.coordinator.store.get("raced") is not None  # the second is under way
        h.clock.advance(h.config.offsets_commit_timeout_ms)
        wait_for(lambda: second.done, what="the second commit timed out")
        assert h.coordinator.store.get("raced") is None
    finally:
        h.close()


def test_a_group_whose_first_commit_is_refused_for_too_few_replicas_does_not_exist(tmp_path):
    h = GroupHarness(tmp_path, offsets_isr=(0,), offsets_min_isr=2)
    try:
        assert commit(h, "refused", 5).value == {("t", 0): CoordinatorNotAvailable.code}
        assert "refused" not in listed(h) and h.coordinator.store.get("refused") is None
        assert h.coordinator.describe_group("refused").state == "Dead"
    finally:
        h.close()


def test_a_group_whose_first_commit_is_refused_before_writing_does_not_exist(tmp_path):
    h = GroupHarness(tmp_path)
    try:
        out = Outcome()
        too_large = "x" * (h.config.offset_metadata_max_bytes + 1)
        h.coordinator.commit_offsets("oversized", "", None, -1,
                                     {("t", 0): CommittedOffset(5, metadata=too_large)}, out)
        assert out.value == {("t", 0): OffsetMetadataTooLarge.code}
        assert "oversized" not in listed(h) and h.coordinator.store.get("oversized") is None
    finally:
        h.close()


def test_a_written_first_commit_makes_the_group_listed_empty_with_its_offset(tmp_path):
    h = GroupHarness(tmp_path)
    try:
        assert commit(h, "simple", 5).value == {("t", 0): 0}
        assert "simple" in listed(h)
        assert h.coordinator.describe_group("simple").state == "Empty"
    finally:
        h.close()


def test_a_member_joining_while_the_first_commit_waits_makes_the_group_its_own(waiting):
    h = waiting
    first = commit(h, "joined", 5)
    h.join("joined")  # parked in the first rebalance's delay
    assert "joined" in listed(h)  # a member's group: PreparingRebalance
    h.clock.advance(h.config.offsets_commit_timeout_ms)
    wait_for(lambda: first.done, what="the commit timed out")
    assert h.coordinator.store.get("joined") is not None
