"""Hundreds of seeded random schedules of a Raft quorum, every invariant checked each step.

Each seed drives a :class:`~tests.raft.sim.Simulation` through 400 steps of message loss,
duplication, reordering (random delays), partitions (symmetric, one-way, the leader cut off),
crashes (whose peers see the links break, as a driver does) and restarts, connection
resets while the peer lives (a false alarm of a crash), proposals and snapshots, then heals
everything and requires a leader followed by every voter and a new entry committed on every node (liveness). A violation
names the seed and the last events; ``random_schedule(seed, ...)`` replays it exactly.
"""

from __future__ import annotations

import time

import pytest

from broker_sim.raft import RaftCore
from tests.raft.sim import InvariantViolation, random_schedule

SEEDS = 500


def shape(seed: int) -> tuple[int, int]:
    """(voters, observers): 3 or 5 voters, with an observer every third seed."""
    return 3 + (seed % 2) * 2, int(seed % 3 == 0)


def test_random_schedules_keep_every_invariant() -> None:
    started = time.monotonic()
    steps = elections = committed = dropped = duplicated = reordered = crashes = changes = 0
    for seed in range(SEEDS):
        sim = random_schedule(seed, *shape(seed))
        steps += sim.steps
        elections += len(sim.leaders)
        committed += len(sim.committed)
        dropped += sim.net.dropped
        duplicated += sim.net.duplicated
        reordered += sim.net.reordered
        crashes += sum("crash" in event for event in sim.trace)
        changes += sum(" voter " in event and " at " in event for event in sim.trace)
    print(f"{SEEDS} seeds, {steps} steps, {elections} elections, {committed} committed "
          f"entries; {dropped} messages dropped, {duplicated} duplicated, {reordered} "
          f"reordered, {crashes} crashes, {changes} voter changes; 0 violations in "
          f"{time.monotonic() - started:.1f} s")
    assert elections > SEEDS  # the faults did force re-elections
    assert committed > 10 * SEEDS
    assert min(dropped, duplicated, reordered, crashes, changes) > SEEDS // 10


class GrantsWithoutLogCheck(RaftCore):
    """The deliberately broken variant: votes (and pre-votes) granted whatever the log."""

    def _log_is_up_to_date(self, last_epoch: int, end_offset: int) -> bool:
        return True


def test_a_vote_granted_without_the_log_check_is_caught() -> None:
    caught = []
    for seed in range(100):
        try:
            random_schedule(seed, *shape(seed), factory=GrantsWithoutLogCheck)
        except InvariantViolation as e:
            caught.append(str(e))
    assert caught, "the simulation missed a quorum that elects leaders with stale logs"
    assert "lacks committed" in "".join(caught) or "truncates" in "".join(caught)
    assert "replay: Simulation(seed=" in caught[0]


def test_a_seed_replays_exactly() -> None:
    first = random_schedule(7, voters=5, observers=1)
    again = random_schedule(7, voters=5, observers=1)
    assert first.trace == again.trace
    assert first.committed == again.committed


@pytest.mark.parametrize(("seed", "voters", "observers", "chaos_steps"), [
    (11, 5, 0, 400), (107, 5, 0, 400), (267, 5, 1, 400), (1451, 3, 0, 600), (2141, 5, 2, 600)])
def test_seeds_that_once_stalled_are_live(seed: int, voters: int, observers: int,
                                          chaos_steps: int) -> None:
    """Regressions the simulation found, each once a quorum that never recovered: a follower
    took a leader hint for word from the leader (all refused pre-votes for a dead leader);
    voters stuck in an epoch the leader never heard of (BeginQuorumEpoch is now answered);
    a follower diverging right after the leader's snapshot was sent that same snapshot
    forever (it now gets the snapshot's end as diverging offset); a restarted voter with a
    stale voter set refused the only electable candidate as a non-voter (no longer)."""
    random_schedule(seed, voters, observers, chaos_steps)
