"""What Raft cores say to each other, and what their log holds.

The shapes follow KRaft's RPCs (KIP-595, KIP-630, KIP-853, KIP-996) so that the quorum can
later speak them on the wire: Vote (with ``pre_vote``), BeginQuorumEpoch, EndQuorumEpoch,
Fetch and FetchSnapshot. Every message names its sender and receiver by node id; the driver
maps ids to connections. All of them are immutable values, safe to deliver twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The kinds of log entry. DATA is the application's; the others are the quorum's own
# control records (KRaft's LeaderChangeMessage and VotersRecord).
DATA = "data"
LEADER_CHANGE = "leader_change"
VOTERS = "voters"


@dataclass(frozen=True)
class Entry:
    """One record of the replicated log: its offset, the epoch of the leader that appended
    it, its kind, and a value (the application's for DATA; the leader's id for
    LEADER_CHANGE; the whole voter set, a frozenset of ids, for VOTERS)."""

    offset: int
    epoch: int
    kind: str
    value: Any = None


@dataclass(frozen=True)
class Snapshot:
    """An image of the application's state covering every entry below ``end_offset``.
    ``epoch`` is the epoch of the entry at ``end_offset - 1`` and ``voters`` the voter set in
    force there, so a log that starts at the snapshot can still answer both questions."""

    end_offset: int
    epoch: int
    voters: frozenset[int]
    image: Any = None


@dataclass(frozen=True)
class Message:
    src: int
    dst: int
    epoch: int


@dataclass(frozen=True)
class VoteRequest(Message):
    """Asks for a vote in ``epoch``. A pre-vote (``pre_vote=True``) asks whether a vote
    *would* be granted in ``epoch`` without anyone changing epoch or casting a vote."""

    last_epoch: int
    end_offset: int
    pre_vote: bool = False


@dataclass(frozen=True)
class VoteResponse(Message):
    """``epoch`` is the responder's epoch; ``leader_id`` the leader it knows in it, if any."""

    granted: bool
    pre_vote: bool = False
    leader_id: int | None = None


@dataclass(frozen=True)
class BeginQuorumEpoch(Message):
    """The new leader of ``epoch`` announcing itself to the voters."""


@dataclass(frozen=True)
class BeginQuorumEpochResponse(Message):
    """``epoch`` is the responder's: a leader answered with a newer one steps down (a voter
    that campaigned in a later epoch cannot follow it, so the quorum must move on)."""


@dataclass(frozen=True)
class EndQuorumEpoch(Message):
    """The leader of ``epoch`` stepping down: the receivers start an election at once."""


@dataclass(frozen=True)
class FetchRequest(Message):
    """A follower or observer pulling the log from ``fetch_offset`` (its log end offset);
    ``last_fetched_epoch`` is the epoch of its entry at ``fetch_offset - 1`` (0 for none)."""

    fetch_offset: int
    last_fetched_epoch: int


# Fetch errors, as KRaft's: the responder is not the leader of the requested epoch, or the
# request carries an epoch older than the responder's.
NOT_LEADER = "NOT_LEADER_OR_FOLLOWER"
FENCED_EPOCH = "FENCED_LEADER_EPOCH"


@dataclass(frozen=True)
class FetchResponse(Message):
    """The answer to the fetch at ``fetch_offset``/``last_fetched_epoch`` (echoed so a
    late or duplicated response is recognised). Exactly one of: ``error`` (with the
    responder's ``leader_id`` hint), ``diverging`` (``(epoch, end_offset)``: truncate to at
    most ``end_offset`` and fetch again), ``snapshot_id`` (``(end_offset, epoch)``: the
    offset is below the leader's log start, fetch this snapshot) or ``entries``."""

    leader_id: int | None
    fetch_offset: int
    last_fetched_epoch: int
    high_watermark: int = 0
    entries: tuple[Entry, ...] = ()
    diverging: tuple[int, int] | None = None
    snapshot_id: tuple[int, int] | None = None
    error: str | None = None


@dataclass(frozen=True)
class FetchSnapshotRequest(Message):
    snapshot_id: tuple[int, int]


@dataclass(frozen=True)
class FetchSnapshotResponse(Message):
    """The leader's snapshot (whole: this core does not chunk it), or None when it has none
    matching ``snapshot_id`` any more (the fetcher fetches again and learns the new id)."""

    leader_id: int | None
    snapshot: Snapshot | None = field(default=None)
