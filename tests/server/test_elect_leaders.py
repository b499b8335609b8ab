"""ElectLeaders at the controller: preferred and unclean elections, each partition's outcome."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_sim.controller.controller import Controller
from broker_sim.protocol.errors import (
    ElectionNotNeeded,
    EligibleLeadersNotAvailable,
    InvalidRequest,
    PreferredLeaderNotAvailable,
    UnknownTopicOrPartition,
)
from broker_sim.timer import SystemTimer

PREFERRED, UNCLEAN = 0, 1


@pytest.fixture
def controller(tmp_path: Path) -> Iterator[Controller]:
    timer = SystemTimer("test-elect-leaders")
    c = Controller(tmp_path, timer, session_timeout_ms=600_000)
    for b in range(3):
        c.heartbeat(b, "127.0.0.1", 9000 + b, f"inc-{b}")
    yield c
    c.close()
    timer.shutdown(wait=False)


def epoch_of(c: Controller, broker: int) -> int:
    return c.image.brokers[broker].epoch


def test_preferred_election_waits_for_the_preferred_replica_to_be_in_sync(controller: Controller) -> None:
    c = controller
    c.create_topic("t", 1, 3, {})
    p = c.image.topics["t"].partitions[0]
    preferred = p.replicas[0]
    assert isinstance(c.elect_leaders(PREFERRED, [("t", 0)])[("t", 0)], ElectionNotNeeded)

    c.expire_session(preferred, epoch_of(c, preferred))  # it dies: another replica leads
    p = c.image.topics["t"].partitions[0]
    assert p.leader != preferred and preferred not in p.isr
    c.heartbeat(preferred, "127.0.0.1", 9000 + preferred, "inc-again")  # back, not yet in sync
    outcome = c.elect_leaders(PREFERRED, [("t", 0)])[("t", 0)]
    assert isinstance(outcome, PreferredLeaderNotAvailable) and "not in the ISR" in outcome.message

    p = c.image.topics["t"].partitions[0]
    leader, leader_epoch = p.leader, p.leader_epoch
    c.alter_partition(leader, epoch_of(c, leader), "t", 0, p.leader_epoch, p.partition_epoch,
                      [*p.isr, preferred])  # its leader saw it catch up
    assert c.elect_leaders(PREFERRED, [("t", 0)]) == {("t", 0): None}
    p = c.image.topics["t"].partitions[0]
    assert (p.leader, p.leader_epoch) == (preferred, leader_epoch + 1)
    assert sorted(p.isr) == [0, 1, 2]


def test_electing_every_partition_reports_only_those_that_needed_it(controller: Controller) -> None:
    c = controller
    c.create_topic("a", 3, 3, {})
    assert c.elect_leaders(PREFERRED, None) == {}
    with pytest.raises(InvalidRequest):
        c.elect_leaders(7, None)
    assert isinstance(c.elect_leaders(PREFERRED, [("nope", 0)])[("nope", 0)], UnknownTopicOrPartition)
    assert isinstance(c.elect_leaders(PREFERRED, [("a", 3)])[("a", 3)], UnknownTopicOrPartition)


def test_unclean_election_takes_a_live_replica_outside_the_isr_only_when_asked(
        controller: Controller) -> None:
    c = controller
    c.create_topic("u", 1, 3, {})
    p = c.image.topics["u"].partitions[0]
    last, *others = p.replicas
    for b in others:  # the ISR shrinks to one, then that one dies
        c.expire_session(b, epoch_of(c, b))
    for b in others:
        c.heartbeat(b, "127.0.0.1", 9000 + b, f"inc-{b}-again")
    assert isinstance(c.elect_leaders(UNCLEAN, [("u", 0)])[("u", 0)], ElectionNotNeeded)
    c.expire_session(last, epoch_of(c, last))
    p = c.image.topics["u"].partitions[0]
    assert (p.leader, p.isr) == (-1, [last])  # offline: no clean candidate
    assert isinstance(c.elect_leaders(PREFERRED, [("u", 0)])[("u", 0)], PreferredLeaderNotAvailable)
    epoch = p.leader_epoch

    assert c.elect_leaders(UNCLEAN, [("u", 0)]) == {("u", 0): None}
    p = c.image.topics["u"].partitions[0]
    assert p.leader in others and p.isr == [p.leader] and p.leader_epoch == epoch + 1


def test_unclean_election_without_a_live_replica_is_refused(controller: Controller) -> None:
    c = controller
    c.create_topic("v", 1, 1, {})
    [only] = c.image.topics["v"].partitions[0].replicas
    c.expire_session(only, epoch_of(c, only))
    outcome = c.elect_leaders(UNCLEAN, [("v", 0)])[("v", 0)]
    assert isinstance(outcome, EligibleLeadersNotAvailable)
    assert c.image.topics["v"].partitions[0].leader == -1
