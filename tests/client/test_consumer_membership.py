"""The consumer-protocol (KIP-848) member's state machine without I/O: heartbeat bodies in,
coordinator answers out, times given by the test (a manual clock in milliseconds)."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from broker_sim.protocol.errors import (
    FencedMemberEpoch,
    GroupAuthorizationFailed,
    NotCoordinator,
    UnknownMemberId,
)
from connector.client.consumer_membership import ConsumerMembership, MemberState
from connector.client.metadata import TopicPartition

A, B = uuid.uuid4(), uuid.uuid4()
NAMES = {A: "a", B: "b"}


def answer(epoch: int, assignment: dict[uuid.UUID, list[int]] | None = None, error: int = 0,
           interval: int = 500) -> SimpleNamespace:
    """A ConsumerGroupHeartbeat response as the codec decodes it."""
    return SimpleNamespace(
        error_code=error, error_message=None, member_id="m-1", member_epoch=epoch,
        heartbeat_interval_ms=interval,
        assignment=None if assignment is None else SimpleNamespace(topic_partitions=[
            SimpleNamespace(topic_id=t, partitions=ps) for t, ps in assignment.items()]))


def owned(body: dict) -> set[tuple[uuid.UUID, int]]:
    return {(t["topic_id"], p) for t in body["topic_partitions"] for p in t["partitions"]}


def member(**kwargs) -> ConsumerMembership:
    m = ConsumerMembership("g", "m-1", rebalance_timeout_ms=300_000, retry_backoff_ms=100, **kwargs)
    m.subscribe(["b", "a"], now=0)
    return m


def joined(m: ConsumerMembership, assignment: dict[uuid.UUID, list[int]], now: float = 0) -> None:
    """Join and take ``assignment`` (the application's part done at once)."""
    m.heartbeat_request(now)
    m.on_heartbeat(answer(1, assignment), now)
    reconciliation = m.reconciliation(NAMES.get)
    assert reconciliation is not None
    m.reconciled(reconciliation, now)
    m.heartbeat_request(now)
    m.on_heartbeat(answer(1, None), now)


def test_joining_heartbeats_at_once_with_epoch_0_and_then_at_the_coordinators_interval():
    m = member(server_assignor="range")
    body = m.heartbeat_request(now=0)
    assert body["member_epoch"] == 0 and body["member_id"] == "m-1"
    assert body["subscribed_topic_names"] == ["a", "b"] and body["topic_partitions"] == []
    assert (body["rebalance_timeout_ms"], body["server_assignor"]) == (300_000, "range")
    assert m.heartbeat_request(now=0) is None  # one at a time
    m.on_heartbeat(answer(1, {A: [0, 1]}), now=10)
    assert m.state is MemberState.RECONCILING and m.member_epoch == 1
    rec = m.reconciliation(NAMES.get)
    assert (rec.revoked, rec.assigned, rec.lost) == ([], [TopicPartition("a", 0), TopicPartition("a", 1)], False)
    assert owned(m.heartbeat_request(now=510)) == set()  # not yet taken: not reported
    m.on_heartbeat(answer(1, {A: [0, 1]}), now=520)
    m.reconciled(rec, now=600)
    ack = m.heartbeat_request(now=600)  # the acknowledgement goes at once, not at 1020
    assert owned(ack) == {(A, 0), (A, 1)} and ack["member_epoch"] == 1
    m.on_heartbeat(answer(1, None), now=610)
    assert m.state is MemberState.STABLE
    assert m.time_to_heartbeat(now=610) == 500
    assert m.heartbeat_request(now=1109) is None and m.heartbeat_request(now=1110) is not None


def test_partitions_taken_away_are_revoked_first_and_reported_released_before_the_rest():
    m = member()
    joined(m, {A: [0, 1], B: [0]})
    m.heartbeat_request(now=500)
    m.on_heartbeat(answer(1, {A: [0], B: [0, 1]}), now=500)  # a-1 goes, b-1 comes later
    rec = m.reconciliation(NAMES.get)
    assert (rec.revoked, rec.assigned) == ([TopicPartition("a", 1)], [TopicPartition("b", 1)])
    m.revoked(rec)  # given up (committed), b-1 not taken yet
    assert owned(m.heartbeat_request(now=500, force=True)) == {(A, 0), (B, 0)}
    m.on_heartbeat(answer(2, {A: [0], B: [0, 1]}), now=500)
    m.reconciled(rec, now=510)
    assert owned(m.heartbeat_request(now=510)) == {(A, 0), (B, 0), (B, 1)}


@pytest.mark.parametrize("error", [FencedMemberEpoch, UnknownMemberId])
def test_a_fenced_member_loses_its_partitions_then_joins_again_with_epoch_0(error):
    m = member()
    joined(m, {A: [0, 1]})
    m.heartbeat_request(now=500)
    m.on_heartbeat(answer(-1, error=error.code), now=500)
    assert m.state is MemberState.FENCED
    assert m.heartbeat_request(now=10_000) is None  # not before the partitions are given up
    rec = m.reconciliation(NAMES.get)
    assert (rec.revoked, rec.assigned, rec.lost) == ([TopicPartition("a", 0), TopicPartition("a", 1)], [], True)
    m.reconciled(rec, now=10_000)
    body = m.heartbeat_request(now=10_000)
    assert (body["member_epoch"], body["member_id"], body["topic_partitions"]) == (0, "m-1", [])


def test_a_fenced_member_without_partitions_joins_again_at_once():
    m = member()
    m.heartbeat_request(now=0)
    m.on_heartbeat(answer(0, error=FencedMemberEpoch.code), now=0)
    assert m.state is MemberState.JOINING and m.heartbeat_request(now=0)["member_epoch"] == 0


def test_partitions_taken_for_a_membership_fenced_meanwhile_are_lost_next():
    m = member()
    joined(m, {A: [0]})
    m.heartbeat_request(now=500)
    m.on_heartbeat(answer(2, {A: [0, 1]}), now=500)
    rec = m.reconciliation(NAMES.get)
    m.heartbeat_request(now=1000)
    m.on_heartbeat(answer(-1, error=FencedMemberEpoch.code), now=1000)
    m.reconciled(rec, now=1001)  # the application took a-1 as the member was fenced
    assert m.state is MemberState.FENCED and m.heartbeat_request(now=2000) is None
    lost = m.reconciliation(NAMES.get)
    assert lost.lost and lost.revoked == [TopicPartition("a", 0), TopicPartition("a", 1)]


def test_an_assignment_naming_an_unknown_topic_id_waits_for_metadata():
    m = member()
    m.heartbeat_request(now=0)
    m.on_heartbeat(answer(1, {A: [0], B: [0]}), now=0)
    known = {A: "a"}
    assert m.reconciliation(known.get) is None and m.unresolved(known.get)
    rec = m.reconciliation(NAMES.get)
    assert rec.assigned == [TopicPartition("a", 0), TopicPartition("b", 0)]


def test_a_moved_coordinator_is_looked_up_again_and_the_heartbeat_retried_after_a_backoff():
    m = member()
    joined(m, {A: [0]})
    m.heartbeat_request(now=500)
    assert m.on_heartbeat(answer(-1, error=NotCoordinator.code), now=500) is True
    assert m.state is MemberState.STABLE and m.owned == {(A, 0)}
    assert m.heartbeat_request(now=599) is None and m.heartbeat_request(now=600) is not None
    m.on_heartbeat_failed(now=700)  # no answer at all: the same
    assert m.time_to_heartbeat(now=700) == 100


def test_an_error_the_member_cannot_get_past_is_fatal_and_named():
    m = member()
    m.heartbeat_request(now=0)
    m.on_heartbeat(answer(-1, error=GroupAuthorizationFailed.code), now=0)
    assert m.state is MemberState.FATAL and isinstance(m.error, GroupAuthorizationFailed)
    assert "group 'g'" in str(m.error) and m.heartbeat_request(now=10_000) is None


@pytest.mark.parametrize(("instance_id", "epoch"), [(None, -1), ("i-1", -2)])
def test_closing_leaves_with_epoch_minus_1_or_minus_2_for_a_static_member(instance_id, epoch):
    m = member(instance_id=instance_id)
    joined(m, {A: [0]})
    body = m.leave_request()
    assert (body["member_epoch"], body["member_id"], body["instance_id"]) == (epoch, "m-1", instance_id)
    assert m.heartbeat_request(now=10_000) is None


def test_a_member_that_stops_polling_leaves_and_rejoins_when_it_polls_again():
    m = member()
    joined(m, {A: [0]})
    leave = m.poll_timer_expired()
    assert leave["member_epoch"] == -1 and m.state is MemberState.STALE
    assert m.poll_timer_expired() is None and m.heartbeat_request(now=10_000) is None
    m.polled(now=20_000)
    rec = m.reconciliation(NAMES.get)
    assert rec.lost and rec.revoked == [TopicPartition("a", 0)]
    m.reconciled(rec, now=20_000)
    assert m.heartbeat_request(now=20_000)["member_epoch"] == 0
