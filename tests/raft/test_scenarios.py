"""Targeted scenarios of the Raft core in the deterministic simulator, each stating what a
controller quorum built on it can rely on."""

from __future__ import annotations

import doctest
import random

import pytest

import broker_sim.raft
from broker_sim.raft import (
    FOLLOWER,
    LEADER,
    PROSPECTIVE,
    VOTERS,
    RaftConfig,
    RaftCore,
    RaftError,
    VoteRequest,
    VoteResponse,
)
from tests.raft.sim import CONFIG, Simulation


def elected(sim: Simulation) -> int:
    sim.run_until(sim.stable_leader, 400, "a first leader")
    leader = sim.leader()
    assert leader is not None
    return leader.node_id


def commit(sim: Simulation, value: str) -> None:
    sim.run_until(lambda: sim.committed_everywhere(value), 400, f"{value!r} committed")


def test_isolated_leader_loses_no_committed_entry_and_drops_its_uncommitted_ones() -> None:
    sim = Simulation(seed=1, voters=3)
    old = elected(sim)
    for i in range(10):
        sim.propose(f"before-{i}")
    commit(sim, "before-9")
    old_epoch = sim.nodes[old].core.epoch  # type: ignore[union-attr]
    sim.partition({old}, set(sim.nodes) - {old})
    stranded = [sim.nodes[old].core.propose(f"stranded-{i}") for i in range(3)]  # type: ignore[union-attr]
    sim.run_until(lambda: sim.leader() is not None and sim.leader().node_id != old,  # type: ignore[union-attr]
                  400, "a new leader on the majority side")
    for i in range(5):
        sim.propose(f"after-{i}")
    sim.run_until(lambda: all(any(e.value == "after-4" for e in sim.nodes[n].app)
                              for n in sim.nodes if n != old), 400, "the majority commits")
    # The cut-off leader sees no majority for check_quorum_timeout and resigns.
    sim.run_until(lambda: sim.nodes[old].core.role != LEADER,  # type: ignore[union-attr]
                  CONFIG.check_quorum_timeout // 5 + 2, "the cut-off leader resigning")
    sim.heal()
    commit(sim, "after-4")
    sim.check_logs()
    for node in sim.nodes.values():
        values = [e.value for e in node.app]
        assert values[:values.index("before-9") + 1] == [e.value for e in sim.nodes[old].app][
            :values.index("before-9") + 1]
        assert all(f"before-{i}" in values for i in range(10))
        assert not any(f"stranded-{i}" in values for i in range(3)), stranded
        assert node.core.epoch > old_epoch  # type: ignore[union-attr]


def test_pre_vote_keeps_a_rejoining_node_from_disrupting_the_leader() -> None:
    sim = Simulation(seed=2, voters=3)
    leader = elected(sim)
    epoch = sim.nodes[leader].core.epoch  # type: ignore[union-attr]
    loner = next(n for n in sim.nodes if n != leader)
    sim.partition({loner}, set(sim.nodes) - {loner})
    sim.run(10 * CONFIG.fetch_timeout // 5)  # ten fetch timeouts alone: it keeps asking
    assert sim.nodes[loner].core.role == PROSPECTIVE  # type: ignore[union-attr]
    assert sim.nodes[loner].core.epoch == epoch  # type: ignore[union-attr]  # never bumped
    sim.heal()
    sim.propose("after-rejoin")
    commit(sim, "after-rejoin")
    assert sim.leader().node_id == leader  # type: ignore[union-attr]
    assert all(n.core.epoch == epoch for n in sim.nodes.values())  # type: ignore[union-attr]
    assert list(sim.leaders) == [epoch]


class WithoutPreVote(RaftCore):
    """The contrast: a voter that bumps its epoch as soon as its timer fires."""

    def _start_pre_vote(self) -> None:
        self._start_election()


def test_without_pre_vote_the_same_rejoining_node_deposes_the_leader() -> None:
    sim = Simulation(seed=2, voters=3, factory=WithoutPreVote)
    leader = elected(sim)
    epoch = sim.nodes[leader].core.epoch  # type: ignore[union-attr]
    loner = next(n for n in sim.nodes if n != leader)
    sim.partition({loner}, set(sim.nodes) - {loner})
    sim.run(10 * CONFIG.fetch_timeout // 5)
    assert sim.nodes[loner].core.epoch > epoch + 5  # type: ignore[union-attr]
    sim.heal()
    sim.propose("after-rejoin")
    commit(sim, "after-rejoin")
    assert sim.nodes[leader].core.epoch > epoch + 5  # type: ignore[union-attr]


def test_a_follower_behind_the_snapshot_catches_up_by_installing_it() -> None:
    sim = Simulation(seed=3, voters=3)
    leader = elected(sim)
    behind = next(n for n in sim.nodes if n != leader)
    sim.crash(behind)
    for i in range(40):
        sim.propose(f"v{i}")
        sim.step()
    sim.run_until(lambda: all(any(e.value == "v39" for e in n.app) for n in sim.nodes.values()
                              if n.core is not None), 400, "v39 committed on the live pair")
    for node_id in sim.nodes:
        if node_id != behind:
            sim.snapshot(node_id)  # the log before it is dropped
    leader_log = sim.nodes[leader].core.log  # type: ignore[union-attr]
    assert leader_log.start_offset > 40 and leader_log.entries == []
    sim.restart(behind)
    sim.propose("after-restart")
    commit(sim, "after-restart")
    node = sim.nodes[behind]
    assert node.storage.snapshot is not None
    assert node.storage.snapshot.end_offset == leader_log.start_offset
    assert [e.value for e in node.app] == [e.value for e in sim.nodes[leader].app]
    sim.check_logs()


def test_add_then_remove_a_voter_under_load_one_change_at_a_time() -> None:
    sim = Simulation(seed=4, voters=3, observers=1)
    leader = elected(sim)
    core = sim.nodes[leader].core
    assert core is not None
    sim.propose("warm-up")
    commit(sim, "warm-up")  # the observer (node 4) is fetching from the leader by now
    offset = core.add_voter(4)
    with pytest.raises(RaftError, match="in flight"):
        core.remove_voter(1)
    for i in range(20):  # load while the change commits
        sim.propose(f"load-{i}")
        sim.step()
    commit(sim, "load-19")
    assert all(n.core.voters == {1, 2, 3, 4} for n in sim.nodes.values())  # type: ignore[union-attr]
    assert sim.nodes[4].app[offset].kind == VOTERS
    # Now remove the leader itself: it resigns once the removal is committed.
    core.remove_voter(leader)
    for i in range(20):
        sim.propose(f"more-{i}")
        sim.step()
    sim.run_until(lambda: sim.leader() is not None and sim.leader().node_id != leader,  # type: ignore[union-attr]
                  400, "a successor to the removed leader")
    assert core.role == FOLLOWER and not core.is_voter
    sim.propose("after-removal")
    commit(sim, "after-removal")  # the removed leader still follows, as an observer
    assert all(n.core.voters == {1, 2, 3, 4} - {leader}  # type: ignore[union-attr]
               for n in sim.nodes.values())
    sim.check_logs()


def test_an_observer_follows_the_log_and_never_votes() -> None:
    sim = Simulation(seed=5, voters=3, observers=1)
    elected(sim)
    for i in range(10):
        sim.propose(f"v{i}")
    commit(sim, "v9")
    old = sim.leader().node_id  # type: ignore[union-attr]
    sim.crash(old)  # the observer finds the next leader by itself
    sim.run_until(lambda: sim.leader() is not None, 400, "a new leader")
    sim.propose("next")
    commit(sim, "next")
    observer = sim.nodes[4].core
    assert observer is not None and not observer.is_voter
    assert observer.role == FOLLOWER and observer.leader_id == sim.leader().node_id  # type: ignore[union-attr]
    assert observer.voted_for is None


def test_a_voter_grants_one_vote_per_epoch_and_only_to_an_up_to_date_log() -> None:
    core = RaftCore(1, {1, 2, 3}, CONFIG, random.Random(0))
    core.ready()
    core.step(VoteRequest(2, 1, 5, last_epoch=0, end_offset=0))
    core.step(VoteRequest(3, 1, 5, last_epoch=0, end_offset=0))  # same epoch, other candidate
    core.step(VoteRequest(2, 1, 5, last_epoch=0, end_offset=0))  # a retry of the granted one
    answers = [(m.dst, m.granted) for m in core.ready().messages if isinstance(m, VoteResponse)]
    assert answers == [(2, True), (3, False), (2, True)]
    assert core.voted_for == 2

    behind = RaftCore(1, {1, 2, 3}, CONFIG, random.Random(0))
    behind.tick(10_000)  # it elects nobody alone, but its log is what counts
    behind.log.append(broker_sim.raft.Entry(0, 1, "data", "x"))
    behind.ready()
    behind.step(VoteRequest(2, 1, 7, last_epoch=0, end_offset=0))  # an empty log asks
    behind.step(VoteRequest(3, 1, 8, last_epoch=1, end_offset=1))  # an equal log asks
    answers = [(m.dst, m.granted) for m in behind.ready().messages
               if isinstance(m, VoteResponse)]
    assert answers == [(2, False), (3, True)]


def test_options_are_checked_at_construction() -> None:
    with pytest.raises(ValueError, match=r"fetch_max_wait=0 is invalid: a positive integer"):
        RaftConfig(fetch_max_wait=0)
    with pytest.raises(ValueError, match=r"request_timeout=100 is invalid: it must exceed "
                                         r"fetch_max_wait=500"):
        RaftConfig(request_timeout=100)
    with pytest.raises(ValueError, match=r"voters=set\(\) is invalid"):
        RaftCore(1, set(), CONFIG, random.Random(0))


def test_the_package_docstring_example_runs() -> None:
    assert doctest.testmod(broker_sim.raft).failed == 0
