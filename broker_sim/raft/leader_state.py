"""What a Raft leader keeps for one epoch: each replica's progress, parked fetches, timers."""

from __future__ import annotations

from dataclasses import dataclass

from .messages import FetchRequest


def majority(voters: frozenset[int]) -> int:
    """How many voters make a majority of ``voters``."""
    return len(voters) // 2 + 1


@dataclass
class ReplicaState:
    """The leader's view of one replica that fetches from it in the current epoch."""

    end_offset: int = 0  # every entry below it matches the leader's log
    last_fetch: int = 0  # when it last fetched (any valid fetch)


class LeaderState:
    """The bookkeeping of one leader for one epoch (KRaft's LeaderState), without I/O.

    :class:`~broker_sim.raft.core.RaftCore` makes one when it becomes leader and drops it
    when it stops leading; nothing here outlives the epoch. It tracks each replica (voter
    or observer) that fetched from this leader — the offset up to which its log matches and
    when it last fetched —, the fetches parked until there is something to answer, when to
    resend BeginQuorumEpoch, when the leader last heard from a majority, and whether it has
    resigned. It decides; the core sends the messages and keeps the high watermark.

    Invariants:

    - ``epoch_start`` is the leader's log end offset when it took office, where its
      LEADER_CHANGE entry goes; a majority offset counts toward the high watermark only
      once it is past it (:meth:`high_watermark_candidate`), so entries of older epochs
      commit only together with one of this epoch;
    - a replica's ``end_offset`` moves only on a fetch whose offset matched the leader's
      log; a fetch that did not match still counts as contact (``last_fetch``);
    - one parked fetch per replica, the latest; parked fetches are answered in the order
      they were parked (the seeded simulator relies on that order being deterministic).

    Not thread-safe: owned by its core's driver thread.
    """

    def __init__(self, epoch_start: int, now: int) -> None:
        self.epoch_start = epoch_start
        self.replicas: dict[int, ReplicaState] = {}
        self.next_begin_quorum = 0
        self.resigned = False
        self._parked: dict[int, tuple[FetchRequest, int]] = {}
        self._last_quorum_contact = now

    def replica_states(self) -> dict[int, tuple[int, int]]:
        """node -> ``(end offset it has, time of its last fetch)``."""
        return {node: (r.end_offset, r.last_fetch) for node, r in self.replicas.items()}

    def fetched(self, node: int, now: int) -> ReplicaState:
        """Record that ``node`` fetched (or fetched a snapshot) at ``now``."""
        replica = self.replicas.setdefault(node, ReplicaState())
        replica.last_fetch = now
        return replica

    def park(self, req: FetchRequest, deadline: int) -> None:
        self._parked[req.src] = (req, deadline)

    def unpark(self, node: int) -> None:
        self._parked.pop(node, None)

    def take_parked(self, now: int, log_end: int, force: bool) -> list[FetchRequest]:
        """Remove and return the parked fetches to answer now: those with entries to send,
        those whose wait is over, or all of them (``force``)."""
        due = [req for req, deadline in self._parked.values()
               if force or req.fetch_offset < log_end or now >= deadline]
        for req in due:
            del self._parked[req.src]
        return due

    def begin_quorum_targets(self, node_id: int, voters: frozenset[int], now: int,
                             interval: int) -> list[int]:
        """The other voters to send BeginQuorumEpoch to: those that have not fetched in the
        last ``interval`` (they may have restarted); schedules the next round."""
        self.next_begin_quorum = now + interval
        return [v for v in sorted(voters - {node_id})
                if v not in self.replicas or now - self.replicas[v].last_fetch >= interval]

    def quorum_lost(self, node_id: int, voters: frozenset[int], now: int,
                    timeout: int) -> bool:
        """True when this leader (a voter) has not heard from a majority of voters for
        ``timeout``: it should resign (check-quorum). A leader outside the voter set is
        never cut off by this."""
        heard = sum(1 for v in voters
                    if v == node_id or (v in self.replicas
                                        and now - self.replicas[v].last_fetch < timeout))
        if heard >= majority(voters) or node_id not in voters:
            self._last_quorum_contact = now
            return False
        return now - self._last_quorum_contact >= timeout

    def high_watermark_candidate(self, node_id: int, voters: frozenset[int],
                                 log_end: int) -> int | None:
        """The largest offset a majority of voters has (the leader counts its own log end),
        or None while that offset is not past :attr:`epoch_start`."""
        offsets = sorted((log_end if v == node_id else
                          self.replicas[v].end_offset if v in self.replicas else 0
                          for v in voters), reverse=True)
        candidate = offsets[majority(voters) - 1]
        return candidate if candidate > self.epoch_start else None
