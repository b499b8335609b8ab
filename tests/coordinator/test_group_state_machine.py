"""The classic group protocol, driven by a manual clock: no sleeps, real logs."""

from __future__ import annotations

import pytest

from broker_sim.coordinator.group import GroupConfig
from broker_sim.protocol.errors import (
    FencedInstanceId,
    GroupIdNotFound,
    GroupSubscribedToTopic,
    IllegalGeneration,
    InvalidSessionTimeout,
    MemberIdRequired,
    NonEmptyGroup,
    RebalanceInProgress,
    UnknownMemberId,
)
from tests.coordinator.group_harness import PARTITIONS, SESSION_MS, GroupHarness


@pytest.fixture
def h(tmp_path):
    harness = GroupHarness(tmp_path)
    yield harness
    harness.close()


def test_member_id_required_then_join_sync_stable(h):
    first = h.join("g", require_known_member_id=True)
    assert first.value.error == MemberIdRequired.code and first.value.member_id.startswith("client-")
    join = h.join("g", member_id=first.value.member_id, require_known_member_id=True)
    assert not join.done  # the first rebalance of an empty group waits for more members
    h.advance(2999)
    assert not join.done
    h.advance(1)
    r = join.value
    assert (r.error, r.generation_id, r.leader_id, r.protocol_name) == (0, 1, r.member_id, "range")
    assert r.members == [(r.member_id, None, b"sub")]
    sync = h.sync("g", 1, r.member_id, {r.member_id: b"mine"})
    assert sync.value.error == 0 and sync.value.assignment == b"mine"
    summary = h.coordinator.describe_group("g")
    assert summary.state == "Stable" and summary.members[0][5] == b"mine"


def test_initial_delay_is_extended_while_members_keep_arriving(h):
    a = h.join("g")
    h.advance(2000)
    b = h.join("g")
    h.advance(1000)  # the first delay ran out, but a member arrived meanwhile: wait again
    assert not a.done and not b.done
    h.advance(3000)
    assert a.value.generation_id == b.value.generation_id == 1
    assert len(a.value.members) + len(b.value.members) == 2  # only the leader gets the list


def test_join_storm_of_500_members_forms_one_generation(h):
    joins, syncs = h.form_group("storm", 500)
    assert {j.error for j in joins} == {0} and {j.generation_id for j in joins} == {1}
    leaders = [j for j in joins if j.members]
    assert len(leaders) == 1 and len(leaders[0].members) == 500
    assert len({j.member_id for j in joins}) == 500
    assert sorted(s.assignment for s in syncs) == sorted(f"part-{i}".encode() for i in range(500))
    # one session timer per member, however often they heartbeat
    for _ in range(3):
        assert {h.heartbeat("storm", j.member_id, 1) for j in joins} == {0}
    assert h.coordinator.heartbeat_purgatory.num_delayed() == 500


def test_expired_members_are_swept_and_the_rest_rebalance(h):
    joins, _ = h.form_group("g", 5)
    alive, dead = joins[:2], joins[2:]
    for _ in range(3):
        h.advance(SESSION_MS // 2)
        for j in alive:
            assert h.heartbeat("g", j.member_id, 1) in (0, RebalanceInProgress.code)
    assert h.coordinator.describe_group("g").state == "PreparingRebalance"
    assert {m[0] for m in h.coordinator.describe_group("g").members} == {j.member_id for j in alive}
    assert h.heartbeat("g", dead[0].member_id, 1) == UnknownMemberId.code
    assert h.commit("g", {("t", 0): 5}, dead[0].member_id, 1) == {("t", 0): UnknownMemberId.code}
    rejoins = [h.join("g", member_id=j.member_id) for j in alive]
    results = [r.value for r in rejoins]
    assert {r.generation_id for r in results} == {2}


def test_everyone_expiring_empties_the_group(h):
    h.form_group("g", 20)
    h.advance(SESSION_MS + 1)
    h.advance(30_000)  # the rebalance waits for rejoins until the rebalance timeout
    summary = h.coordinator.describe_group("g")
    assert summary.state == "Empty" and summary.members == []


def test_leave_rebalances_at_once_without_waiting_for_the_session(h):
    joins, _ = h.form_group("g", 3)
    code, members = h.coordinator.leave_group("g", [(joins[0].member_id, None)])
    assert code == 0 and members == [(joins[0].member_id, None, 0)]
    assert h.heartbeat("g", joins[1].member_id, 1) == RebalanceInProgress.code
    rejoins = [h.join("g", member_id=j.member_id) for j in joins[1:]]
    assert [r.value.generation_id for r in rejoins] == [2, 2]  # no clock movement needed


def test_static_member_restarted_in_time_keeps_its_place_without_rebalance(h):
    a = h.join("g", instance_id="pod-a", client_id="a")
    b = h.join("g", instance_id="pod-b", client_id="b")
    h.advance(3000)
    h.advance(3000)  # b arrived during the initial delay: it is extended once
    ra, rb = a.value, b.value
    leader = ra if ra.members else rb
    h.sync("g", 1, ra.member_id, {ra.member_id: b"A", rb.member_id: b"B"} if leader is ra else None)
    h.sync("g", 1, rb.member_id, {ra.member_id: b"A", rb.member_id: b"B"} if leader is rb else None)
    # pod-b restarts: a new join with no member id but the same instance id
    h.advance(SESSION_MS // 2)
    again = h.join("g", instance_id="pod-b", client_id="b").value
    assert again.error == 0 and again.generation_id == 1 and again.member_id != rb.member_id
    sync = h.sync("g", 1, again.member_id, instance_id="pod-b").value
    assert sync.assignment == b"B"
    assert h.coordinator.describe_group("g").state == "Stable"
    assert h.heartbeat("g", ra.member_id, 1) == 0  # no rebalance for the other member
    # the old incarnation is fenced
    assert h.heartbeat("g", rb.member_id, 1, instance_id="pod-b") == FencedInstanceId.code


def test_offset_commit_checks_generation_member_and_rebalance(h):
    assert h.commit("simple", {("t", 0): 10}) == {("t", 0): 0}
    assert h.coordinator.fetch_offsets("simple", None)[1][("t", 0)].offset == 10
    joins, _ = h.form_group("g", 2)
    m = joins[0].member_id
    assert h.commit("g", {("t", 1): 7}, m, 1) == {("t", 1): 0}
    assert h.commit("g", {("t", 1): 8}, m, 9) == {("t", 1): IllegalGeneration.code}
    assert h.commit("g", {("t", 1): 8}, "nobody", 1) == {("t", 1): UnknownMemberId.code}
    assert h.commit("g", {("t", 1): 8}) == {("t", 1): UnknownMemberId.code}  # not simple any more
    h.coordinator.leave_group("g", [(joins[1].member_id, None)])
    assert h.join("g", member_id=m).value.generation_id == 2  # CompletingRebalance until the sync
    assert h.commit("g", {("t", 1): 8}, m, 2) == {("t", 1): RebalanceInProgress.code}
    assert h.coordinator.fetch_offsets("g", [("t", 1)])[1][("t", 1)].offset == 7


def test_session_timeout_outside_the_brokers_range_is_refused(h):
    assert h.join("g", session_ms=1000).value.error == InvalidSessionTimeout.code


def test_groups_and_offsets_survive_a_new_coordinator(h):
    joins, _ = h.form_group("g", 3)
    assert h.commit("g", {("t", 0): 42}, joins[0].member_id, 1) == {("t", 0): 0}
    assert h.commit("simple", {("t", 3): 9}) == {("t", 3): 0}
    h.restart_coordinator()
    summary = h.coordinator.describe_group("g")
    assert summary.state == "Stable" and len(summary.members) == 3
    assert sorted(m[5] for m in summary.members) == [b"part-0", b"part-1", b"part-2"]
    assert h.coordinator.fetch_offsets("g", None)[1][("t", 0)].offset == 42
    assert h.coordinator.fetch_offsets("simple", None)[1][("t", 3)].offset == 9
    # loaded members are on the clock again: silent ones expire
    h.advance(SESSION_MS // 2)
    assert h.heartbeat("g", joins[0].member_id, 1) == 0
    h.advance(SESSION_MS // 2 + 1)
    summary = h.coordinator.describe_group("g")
    assert summary.state == "PreparingRebalance"
    assert [m[0] for m in summary.members] == [joins[0].member_id]


def test_delete_groups_and_offsets(h):
    h.commit("old", {("t", 0): 1, ("t", 1): 2})
    joins, _ = h.form_group("busy", 1)
    results = []
    h.coordinator.delete_groups(["old", "busy", "missing"], results.append)
    assert results == [{"old": 0, "busy": NonEmptyGroup.code, "missing": GroupIdNotFound.code}]
    assert h.coordinator.describe_group("old").state == "Dead"
    h.restart_coordinator()
    assert h.coordinator.fetch_offsets("old", None) == (0, {})
    # OffsetDelete refuses topics a consumer member is subscribed to
    sub = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\xff\xff\xff\xff"
    cfg_joins = [h.join("c", protocols=[("range", sub)])]
    h.advance(3000)
    j = cfg_joins[0].value
    h.sync("c", 1, j.member_id, {j.member_id: b""})
    h.commit("c", {("t", 0): 5}, j.member_id, 1)
    out = []
    h.coordinator.delete_offsets("c", [("t", 0)], lambda code, parts: out.append((code, parts)))
    assert out == [(0, {("t", 0): GroupSubscribedToTopic.code})]


def test_groups_spread_over_the_offsets_partitions(h):
    partitions = {h.store.partition_of(f"group-{i}") for i in range(100)}
    assert partitions == set(range(PARTITIONS))


def test_group_config_rejects_inconsistent_session_bounds():
    with pytest.raises(ValueError, match="group.max.session.timeout.ms=10 is not allowed"):
        GroupConfig(group_min_session_timeout_ms=100, group_max_session_timeout_ms=10)
