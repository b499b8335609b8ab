"""The consumer rebalance protocol (KIP-848) on a real coordinator, driven by a manual clock.

Each test sends ConsumerGroupHeartbeats the way a consumer does (epoch 0 to join, then the
epoch it was given, reporting what it owns) and checks what the coordinator answers.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from broker_sim.coordinator.group import GroupConfig, GroupCoordinator, consumer_records, records
from broker_sim.coordinator.group.consumer_protocol import ConsumerHeartbeat, HeartbeatAnswer
from broker_sim.coordinator.group.group import CommittedOffset
from broker_sim.protocol.errors import (
    CoordinatorLoadInProgress,
    FencedMemberEpoch,
    GroupIdNotFound,
    IllegalGeneration,
    InconsistentGroupProtocol,
    InvalidRequest,
    StaleMemberEpoch,
    UnknownMemberId,
    UnreleasedInstanceId,
    UnsupportedAssignor,
)
from tests.coordinator.group_harness import PARTITIONS, GroupHarness, Outcome

SESSION_MS = 6000
INTERVAL_MS = 500
ALL = {("t", p) for p in range(6)}


@pytest.fixture
def h(tmp_path) -> Iterator[GroupHarness]:
    harness = GroupHarness(tmp_path, GroupConfig(
        offsets_topic_num_partitions=PARTITIONS, group_consumer_session_timeout_ms=SESSION_MS,
        group_consumer_heartbeat_interval_ms=INTERVAL_MS), prepare=wire)
    yield harness
    harness.close()


TOPIC_ID = uuid.uuid5(uuid.NAMESPACE_DNS, "t")


def wire(coordinator: GroupCoordinator) -> None:
    """What the broker's API layer gives the protocol: topic sizes and ids."""
    coordinator.consumer.partitions_of = lambda topic: 6 if topic == "t" else 0
    coordinator.consumer.topic_names = lambda: ["t"]
    coordinator.consumer.topic_ids = lambda: {"t": TOPIC_ID}


class Member:
    """A consumer-protocol member as a client runs it: it owns what it was last given."""

    def __init__(self, h: GroupHarness, member_id: str, instance_id: str | None = None,
                 group: str = "g", rebalance_ms: int = 30_000) -> None:
        self.h, self.member_id, self.instance_id, self.group = h, member_id, instance_id, group
        self.rebalance_ms = rebalance_ms
        self.epoch = 0
        self.owned: set[tuple[str, int]] = set()

    def beat(self, **overrides: object) -> HeartbeatAnswer:
        joining = self.epoch == 0
        hb = ConsumerHeartbeat(
            group_id=self.group, member_id=self.member_id, member_epoch=self.epoch,
            instance_id=self.instance_id,
            rebalance_timeout_ms=self.rebalance_ms if joining else -1,
            subscribed_topic_names=["t"] if joining else None,
            owned=set() if joining else set(self.owned))
        for name, value in overrides.items():
            setattr(hb, name, value)
        out = Outcome()
        self.h.coordinator.consumer.heartbeat(hb, out)
        answer = out.value  # answered once its records are written
        if answer.error == 0:
            self.epoch = answer.member_epoch
            if answer.assignment is not None:
                self.owned = {(t, p) for t, ps in answer.assignment.items() for p in ps}
        return answer

    def leave(self) -> HeartbeatAnswer:
        return self.beat(member_epoch=-1 if self.instance_id is None else -2)


def settle(members: list[Member], rounds: int = 6) -> None:
    for _ in range(rounds):
        for m in members:
            assert m.beat().error == 0


def group(h: GroupHarness):  # the ConsumerGroup
    g = h.coordinator.store.get("g")
    assert g is not None and g.consumer is not None
    return g.consumer


def test_three_members_share_six_partitions_disjointly_and_the_group_is_stable(h) -> None:
    members = [Member(h, f"m{i}") for i in range(3)]
    settle(members)
    owned = [m.owned for m in members]
    assert all(len(o) == 2 for o in owned)
    assert set().union(*owned) == ALL
    cg = group(h)
    assert cg.state == "Stable"
    assert {m.epoch for m in members} == {cg.assignment_epoch}


def test_a_partition_moves_only_after_its_owner_gives_it_up(h) -> None:
    first = Member(h, "first")
    first.beat()
    assert first.owned == ALL
    second = Member(h, "second")
    joined = second.beat()
    assert joined.assignment == {}  # nothing free yet: first still owns all six
    epoch_before = first.epoch
    shrink = first.beat()  # first is told to keep only its half ...
    assert len(first.owned) == 3 and first.epoch == epoch_before  # ... at its old epoch
    assert group(h).state == "Reconciling"
    assert second.beat().assignment in (None, {})  # first has not confirmed yet
    assert shrink.assignment is not None
    first.beat()  # reports owning only the three it keeps: the revocation is done
    got = second.beat()
    assert got.assignment is not None and second.owned == ALL - first.owned
    settle([first, second])
    assert group(h).state == "Stable"


def test_a_clean_leave_hands_the_partitions_on_at_the_next_heartbeat(h) -> None:
    members = [Member(h, f"m{i}") for i in range(3)]
    settle(members)
    epoch = group(h).group_epoch
    answer = members[2].leave()
    assert answer.error == 0 and answer.member_epoch == -1
    assert group(h).group_epoch == epoch + 1
    settle(members[:2])
    assert members[0].owned | members[1].owned == ALL
    assert len(members[0].owned) == len(members[1].owned) == 3


def test_a_silent_member_is_removed_after_the_session_timeout(h) -> None:
    members = [Member(h, f"m{i}") for i in range(3)]
    settle(members)
    for _ in range(SESSION_MS // INTERVAL_MS - 1):
        h.advance(INTERVAL_MS)
        settle(members[:2], rounds=1)
    assert "m2" in group(h).members  # not yet
    h.advance(2 * INTERVAL_MS)
    settle(members[:2], rounds=1)
    assert "m2" not in group(h).members
    settle(members[:2])
    assert members[0].owned | members[1].owned == ALL
    assert members[2].beat().error == UnknownMemberId.code


def test_a_member_that_keeps_revoked_partitions_past_its_rebalance_timeout_is_fenced(h) -> None:
    first = Member(h, "first", rebalance_ms=5000)
    first.beat()
    second = Member(h, "second")
    second.beat()
    first.beat()  # told to give up three; it never confirms
    first.beat(owned=set(ALL))
    h.advance(5001)
    assert "first" not in group(h).members
    settle([second])
    assert second.owned == ALL
    assert first.beat().error == UnknownMemberId.code


def test_a_restarted_static_member_gets_its_partitions_back_without_a_new_group_epoch(h) -> None:
    members = [Member(h, f"m{i}", instance_id=f"i{i}") for i in range(3)]
    settle(members)
    before, epoch = set(members[1].owned), group(h).group_epoch
    assert members[1].leave().member_epoch == -2
    # while it is away the others keep what they have; its instance id is released
    settle([members[0], members[2]])
    back = Member(h, "m1-restarted", instance_id="i1")
    answer = back.beat()
    assert answer.error == 0
    assert back.owned == before
    assert group(h).group_epoch == epoch
    assert members[1].beat().error != 0  # the old incarnation is gone


def test_a_static_instance_id_still_in_use_is_refused(h) -> None:
    Member(h, "a", instance_id="same").beat()
    answer = Member(h, "b", instance_id="same").beat()
    assert answer.error == UnreleasedInstanceId.code


def test_epochs_the_coordinator_never_gave_are_fenced(h) -> None:
    m = Member(h, "m")
    m.beat()
    assert m.beat(member_epoch=m.epoch + 1).error == FencedMemberEpoch.code
    # rejoining with epoch 0 under the same id starts afresh, with the same partitions
    m.epoch = 0
    answer = m.beat()
    assert answer.error == 0 and m.owned == ALL


def test_offset_commits_of_a_member_carry_its_current_epoch(h) -> None:
    m = Member(h, "m")
    m.beat()

    def commit(member_id: str, epoch: int) -> int:
        out = Outcome()
        h.coordinator.commit_offsets("g", member_id, None, epoch, {("t", 0): CommittedOffset(5)}, out)
        return out.value[("t", 0)]

    assert commit("m", m.epoch) == 0
    assert commit("m", m.epoch - 1) == StaleMemberEpoch.code
    assert commit("stranger", m.epoch) == UnknownMemberId.code
    assert commit("", -1) == UnknownMemberId.code  # a simple commit while members consume
    assert h.coordinator.fetch_offsets("g", None, "m", m.epoch)[0] == 0
    assert h.coordinator.fetch_offsets("g", None, "m", m.epoch + 1)[0] == StaleMemberEpoch.code
    m.leave()
    assert commit("", -1) == 0  # empty again: tools may reset offsets


def commit_codes(h: GroupHarness, member: Member, epoch: int, partitions: list[int],
                 transaction: tuple[int, int] | None = None) -> set[int]:
    out = Outcome()
    h.coordinator.commit_offsets("g", member.member_id, None, epoch,
                                 {("t", p): CommittedOffset(7) for p in partitions}, out,
                                 transaction)
    return set(out.value.values())


def test_a_commit_sent_before_an_epoch_bump_counts_for_the_partitions_the_member_kept(h) -> None:
    """KIP-1251: the member's commit raced the heartbeat that moved it to a new epoch."""
    first = Member(h, "first")
    first.beat()
    old = first.epoch
    second = Member(h, "second")
    second.beat()
    first.beat()  # told to give three up, at its old epoch
    kept = sorted(p for _, p in first.owned)
    revoking = sorted(set(range(6)) - set(kept))
    assert commit_codes(h, first, old, revoking) == {0}  # still its own while it revokes
    first.beat()  # reports them gone: moves to the new epoch
    settle([first, second])
    assert first.epoch > old and sorted(p for _, p in second.owned) == revoking

    def check() -> None:
        assert commit_codes(h, first, old, kept) == {0}  # held since the old epoch
        assert commit_codes(h, first, first.epoch, kept) == {0}
        assert commit_codes(h, first, old, revoking) == {StaleMemberEpoch.code}  # second's now
        assert commit_codes(h, first, old, kept + revoking[:1]) == {StaleMemberEpoch.code}
        assert commit_codes(h, first, first.epoch + 1, kept) == {StaleMemberEpoch.code}
        assert commit_codes(h, second, second.epoch, revoking) == {0}
        assert commit_codes(h, second, old, revoking) == {StaleMemberEpoch.code}
        # a transactional commit is refused as Kafka refuses it, ILLEGAL_GENERATION
        assert commit_codes(h, first, old, revoking, transaction=(1000, 0)) \
            == {IllegalGeneration.code}
        # OffsetFetch still wants the current epoch
        assert h.coordinator.fetch_offsets("g", None, "first", old)[0] == StaleMemberEpoch.code

    check()
    h.restart_coordinator()  # the assignment epochs are in the log: a new coordinator agrees
    check()


def test_a_current_assignment_record_without_assignment_epochs_counts_from_the_member_epoch(
        ) -> None:
    """A record written before KIP-1251: its partitions count as given at the member's
    epoch, so only commits at that epoch cover them."""
    ids = {TOPIC_ID: "t"}
    raw = {
        records.consumer_key(records.CONSUMER_MEMBER_KEY_VERSION, "g", "m"):
            records.consumer_value(records.CONSUMER_MEMBER_KEY_VERSION, {
                "client_id": "c", "client_host": "h", "subscribed_topic_names": ["t"]}),
        records.consumer_key(records.CURRENT_ASSIGNMENT_KEY_VERSION, "g", "m"):
            records.consumer_value(records.CURRENT_ASSIGNMENT_KEY_VERSION, {
                "member_epoch": 5, "previous_member_epoch": 4, "state": 0,
                "assigned_partitions": [{"topic_id": TOPIC_ID, "partitions": [0, 1]}],
                "partitions_pending_revocation": []}),
    }
    m = consumer_records.restore("g", raw, ids, lambda member: ("t",)).members["m"]
    assert m.assignment_epochs == {("t", 0): 5, ("t", 1): 5}
    assert m.may_commit(5, [("t", 0)]) and not m.may_commit(4, [("t", 0)])


def test_one_group_uses_one_protocol_at_a_time(h) -> None:
    Member(h, "m").beat()
    join = h.join("g")
    assert join.value.error == InconsistentGroupProtocol.code
    h.form_group("classic", 1)
    answer = Member(h, "x", group="classic").beat()
    assert answer.error == GroupIdNotFound.code
    listed = {g: (s, k) for g, _, s, k in h.coordinator.list_groups()[1]}
    assert listed["g"] == ("Stable", "consumer")
    assert listed["classic"] == ("Stable", "classic")


def test_malformed_heartbeats_are_refused_with_a_reason(h) -> None:
    m = Member(h, "m")
    no_topics = m.beat(subscribed_topic_names=[])
    assert no_topics.error == InvalidRequest.code
    assert no_topics.message is not None and "SubscribedTopicNames" in no_topics.message
    assert m.beat(server_assignor="sticky").error == UnsupportedAssignor.code
    assert m.beat(member_epoch=-7).error == InvalidRequest.code
    assert m.beat(owned={("t", 0)}).error == InvalidRequest.code


def test_the_range_assignor_can_be_chosen_by_the_members(h) -> None:
    members = [Member(h, f"m{i}") for i in range(2)]
    for m in members:
        m.beat(server_assignor="range")
    settle(members)
    assert members[0].owned == {("t", p) for p in range(3)}
    assert members[1].owned == {("t", p) for p in range(3, 6)}
    assert group(h).assignor_name == "range"


def test_a_new_coordinator_restores_the_group_from_the_log(h) -> None:
    members = [Member(h, f"m{i}", instance_id="static" if i == 0 else None) for i in range(3)]
    settle(members)
    members[2].leave()
    settle(members[:2])
    before = {m.member_id: set(m.owned) for m in members[:2]}
    epochs = (group(h).group_epoch, group(h).assignment_epoch)

    h.restart_coordinator()  # a new leader of the partition reads the group back
    restored = group(h)
    assert (restored.group_epoch, restored.assignment_epoch) == epochs
    assert set(restored.members) == {"m0", "m1"}
    assert restored.members["m0"].instance_id == "static"
    for m in members[:2]:  # the members go on with their epochs: nothing is reassigned
        answer = m.beat()
        assert answer.error == 0 and answer.member_epoch == epochs[1]
        assert m.owned == before[m.member_id]
    assert restored.state == "Stable"
    assert members[2].beat().error == UnknownMemberId.code  # its leave was written too


def test_requests_racing_the_restore_are_told_to_retry_not_that_the_member_is_unknown(h) -> None:
    """A member retries at once while its group's new coordinator loads; a heartbeat or
    commit that lands after the log is read but before the group is restored must wait
    (COORDINATOR_LOAD_IN_PROGRESS). Answered UNKNOWN_MEMBER_ID, a librdkafka member gave up
    its partitions and rejoined, its pending commit refused."""
    members = [Member(h, f"m{i}") for i in range(2)]
    settle(members)
    epoch, owned = members[0].epoch, set(members[0].owned)
    raced: list[object] = []

    def racing(coordinator: GroupCoordinator) -> None:
        wire(coordinator)
        restore = coordinator.store.on_loaded

        def on_loaded(g) -> None:  # the GroupMetadata being restored
            if g.group_id == "g":  # what a request sees in the middle of the restore
                raced.append(members[0].beat().error)
                raced.append(commit_codes(h, members[0], epoch, [p for _, p in owned]))
            restore(g)
        coordinator.store.on_loaded = on_loaded

    h.prepare = racing
    h.restart_coordinator()
    assert raced == [CoordinatorLoadInProgress.code, {CoordinatorLoadInProgress.code}]
    answer = members[0].beat()  # once restored, the member carries on where it was
    assert answer.error == 0 and members[0].epoch == epoch and members[0].owned == owned
    assert commit_codes(h, members[0], epoch, [p for _, p in owned]) == {0}


def test_a_restored_member_that_stays_silent_still_expires(h) -> None:
    members = [Member(h, f"m{i}") for i in range(2)]
    settle(members)
    h.restart_coordinator()
    for _ in range(SESSION_MS // INTERVAL_MS + 2):
        h.advance(INTERVAL_MS)
        assert members[0].beat().error == 0
    assert set(group(h).members) == {"m0"}
    settle(members[:1])
    assert members[0].owned == ALL


def test_deleting_an_empty_consumer_group_removes_it_from_the_log(h) -> None:
    m = Member(h, "m")
    m.beat()
    m.leave()
    out = Outcome()
    h.coordinator.delete_groups(["g"], out)
    assert out.value == {"g": 0}
    h.restart_coordinator()
    assert h.coordinator.store.get("g") is None


def test_an_empty_consumer_group_turns_classic_for_good_when_a_classic_member_joins(h) -> None:
    m = Member(h, "m")
    m.beat()
    m.leave()
    h.form_group("g", 1)
    h.restart_coordinator()
    listed = {g: (s, k) for g, _, s, k in h.coordinator.list_groups()[1]}
    assert listed["g"] == ("Stable", "classic")
