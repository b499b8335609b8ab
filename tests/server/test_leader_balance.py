"""Automatic preferred-leader rebalance at the controller: after a broker was fenced and came
back in sync, its leaderships return to it (only where it is in the ISR, only above the
per-broker threshold), and the timer runs the check by itself every interval."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker_sim.controller.controller import Controller
from broker_sim.controller.leader_balance import (
    LeaderBalanceConfig,
    imbalance,
    imbalanced_partitions,
)
from broker_sim.protocol.errors import InvalidConfig
from broker_sim.timer import SystemTimer, TimerReaper
from tests.wire import wait_for

OFF = LeaderBalanceConfig(enable=False)


@pytest.fixture
def make_controller(tmp_path: Path) -> Iterator[Callable[[LeaderBalanceConfig], Controller]]:
    """Controllers with three live brokers, their timers driven by a reaper thread."""
    made: list[tuple[Controller, SystemTimer, TimerReaper]] = []

    def make(balance: LeaderBalanceConfig) -> Controller:
        timer = SystemTimer("test-leader-balance")
        reaper = TimerReaper(timer, "test-leader-balance-reaper", poll_ms=20)
        reaper.start()
        c = Controller(tmp_path / f"c{len(made)}", timer, session_timeout_ms=600_000,
                       leader_balance=balance)
        for b in range(3):
            c.heartbeat(b, "127.0.0.1", 9000 + b, f"inc-{b}")
        made.append((c, timer, reaper))
        return c

    yield make
    for c, timer, reaper in made:
        c.close()
        reaper.request_stop()
        timer.shutdown(wait=False)
        reaper.stop()


def leaders(c: Controller, topic: str) -> list[int]:
    return [p.leader for p in c.image.topics[topic].partitions]


def preferred(c: Controller, topic: str) -> list[int]:
    return [p.replicas[0] for p in c.image.topics[topic].partitions]


def fence_and_return(c: Controller, broker: int, lagging: frozenset[tuple[str, int]] = frozenset()
                     ) -> None:
    """``broker``'s session expires (its leaderships move), it registers again, and its
    leaders take it back into the ISR of every partition but the ``lagging`` ones."""
    c.expire_session(broker, c.image.brokers[broker].epoch)
    c.heartbeat(broker, "127.0.0.1", 9000 + broker, f"inc-{broker}-again")
    for name, topic in sorted(c.image.topics.items()):
        for index, p in enumerate(topic.partitions):
            if broker in p.replicas and broker not in p.isr and (name, index) not in lagging:
                leader = c.image.brokers[p.leader]
                c.alter_partition(p.leader, leader.epoch, name, index, p.leader_epoch,
                                  p.partition_epoch, [*p.isr, broker])


def test_a_returned_broker_gets_its_preferred_leaderships_back(make_controller) -> None:
    c = make_controller(OFF)
    c.create_topic("t", 6, 3, {})
    assert leaders(c, "t") == preferred(c, "t")
    fence_and_return(c, 1)
    assert 1 not in leaders(c, "t")  # nothing moves them back by itself (the check is off)
    assert imbalance(c.image)[1] == (2, 2)

    epochs = [p.leader_epoch for p in c.image.topics["t"].partitions]
    moved = c.rebalance_leaders()
    assert moved == [("t", i) for i, b in enumerate(preferred(c, "t")) if b == 1]
    assert leaders(c, "t") == preferred(c, "t")
    for (name, index) in moved:  # each election bumps the leader epoch, once
        assert c.image.topics[name].partitions[index].leader_epoch == epochs[index] + 1
    assert c.rebalance_leaders() == []  # balanced: nothing more to do


def test_only_partitions_whose_preferred_replica_is_in_sync_move(make_controller) -> None:
    c = make_controller(OFF)
    c.create_topic("t", 6, 3, {})
    first, second = [i for i, b in enumerate(preferred(c, "t")) if b == 1]
    fence_and_return(c, 1, lagging=frozenset({("t", second)}))
    assert c.rebalance_leaders() == [("t", first)]
    assert leaders(c, "t")[second] != 1  # electing it would lose records
    fence_and_return(c, 1)  # (fenced again, then in sync everywhere) the next check moves both
    assert c.rebalance_leaders() == [("t", first), ("t", second)]


def test_a_broker_at_or_under_the_threshold_keeps_its_misplaced_leaderships(make_controller) -> None:
    c = make_controller(LeaderBalanceConfig(enable=False, per_broker_percentage=50))
    c.create_topic("t", 6, 3, {})
    fence_and_return(c, 1)  # broker 1 leads none of its 2 preferred partitions: 100%
    c.create_topic("u", 6, 3, {})  # 2 more it leads: 2 of 4 misplaced, exactly 50%
    assert imbalance(c.image)[1] == (4, 2)
    assert imbalanced_partitions(c.image, 50) == []
    assert c.rebalance_leaders() == []
    assert [name for name, _ in imbalanced_partitions(c.image, 49)] == ["t", "t"]


def test_the_check_runs_by_itself_every_interval(make_controller) -> None:
    c = make_controller(LeaderBalanceConfig(check_interval_s=1))
    c.create_topic("t", 6, 3, {})
    fence_and_return(c, 2)
    assert 2 not in leaders(c, "t")
    wait_for(lambda: leaders(c, "t") == preferred(c, "t"), 10,
             what="the periodic check moving broker 2's leaderships back")


@pytest.mark.parametrize(("options", "named"), [
    ({"auto.leader.rebalance.enable": "yes"}, "auto.leader.rebalance.enable='yes'"),
    ({"leader.imbalance.check.interval.seconds": "0"}, "leader.imbalance.check.interval.seconds=0"),
    ({"leader.imbalance.per.broker.percentage": "101"}, "leader.imbalance.per.broker.percentage=101"),
    ({"leader.imbalance.per.broker.percentage": "ten"}, "whole numbers"),
    ({"leader.rebalance": "true"}, "unknown leader balance option"),
])
def test_bad_options_are_refused_naming_them(options: dict[str, str], named: str) -> None:
    with pytest.raises(InvalidConfig, match=named.replace(".", r"\.")):
        LeaderBalanceConfig.from_options(options)
    assert LeaderBalanceConfig.from_options({}) == LeaderBalanceConfig(True, 300, 10)
