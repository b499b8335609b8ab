"""The Raft state machine of one quorum member (voter or observer), without any I/O."""

from __future__ import annotations

import random

from .config import RaftConfig
from .errors import NotLeaderError, RaftError
from .leader_state import LeaderState, majority
from .log import RaftLog
from .messages import (
    DATA,
    FENCED_EPOCH,
    LEADER_CHANGE,
    NOT_LEADER,
    VOTERS,
    BeginQuorumEpoch,
    BeginQuorumEpochResponse,
    EndQuorumEpoch,
    Entry,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    Snapshot,
    VoteRequest,
    VoteResponse,
)
from .ready import Append, HardState, Ready, SaveSnapshot, Stored, Truncate

LEADER = "leader"
CANDIDATE = "candidate"
PROSPECTIVE = "prospective"
FOLLOWER = "follower"


class RaftCore:
    """One member of a Raft quorum, stepped by its driver and never doing I/O itself.

    The driver calls :meth:`tick` with the current time (a manual clock in tests),
    :meth:`step` with every message addressed to this node, and :meth:`propose`,
    :meth:`add_voter`, :meth:`remove_voter`, :meth:`snapshot` for the application; after any
    of them it drains :meth:`ready` and does what the :class:`Ready` says, in its order.

    Roles (KRaft's, with KIP-996's prospective state): a FOLLOWER fetches from its leader
    (``leader_id``, None when it knows none: KRaft's "unattached"); on fetch timeout a voter
    becomes PROSPECTIVE and asks for pre-votes without changing epoch; with a majority it
    becomes CANDIDATE (epoch + 1, votes for itself) and asks for votes; with a majority it
    becomes LEADER and appends a LEADER_CHANGE entry. A node outside the voter set is an
    observer: a FOLLOWER that never starts an election.

    Invariants this class keeps:

    - at most one vote per epoch (``voted_for`` is persisted before the grant is sent), and
      only to a candidate whose ``(last epoch, end offset)`` is at least this node's;
    - the high watermark never decreases while the core lives; a leader advances it to
      :meth:`LeaderState.high_watermark_candidate` (a majority's offset, past its epoch start);
    - the voter set is the last VOTERS entry *appended* (or the snapshot's, or the initial
      one); a leader accepts a voter change only when the previous one is committed and it has
      committed an entry of its own epoch; a leader removed from the voter set resigns once
      the removal is committed;
    - snapshots cover committed entries only, so truncation never reaches below one.

    Not thread-safe: one driver thread owns a core.
    """

    def __init__(self, node_id: int, voters: frozenset[int] | set[int], config: RaftConfig,
                 rng: random.Random, stored: Stored | None = None, now: int = 0) -> None:
        if not voters:
            raise ValueError("Raft option voters=set() is invalid: at least one voter id is "
                             "needed")
        stored = stored or Stored()
        self.node_id = node_id
        self.config = config
        self._rng = rng
        self.now = now
        self.log = RaftLog(frozenset(voters), stored.snapshot, stored.entries)
        self.epoch = stored.hard_state.epoch
        self.voted_for = stored.hard_state.voted_for
        self.role = FOLLOWER
        self.leader_id: int | None = None
        # Committed and handed to the application: entries below these offsets.
        self.high_watermark = self.log.start_offset
        self.applied = self.log.start_offset
        self._ready = Ready()
        self._pending_install: Snapshot | None = stored.snapshot
        # follower state
        self._last_fetch_ok: int | None = None  # when a leader last answered a fetch
        self._fetch_deadline: int | None = None  # resend the in-flight fetch after this
        self._election_deadline = 0
        # prospective / candidate state
        self._granted: set[int] = set()
        self._leader: LeaderState | None = None  # set while (and only while) leading
        self._reset_election_deadline(randomized=True)
        self._role_changed()

    # ------------------------------------------------------------------ queries

    @property
    def voters(self) -> frozenset[int]:
        return self.log.voters()[0]

    @property
    def is_voter(self) -> bool:
        return self.node_id in self.voters

    def replica_states(self) -> dict[int, tuple[int, int]]:
        """node -> ``(end offset, last fetch time)`` of each replica fetching from this
        leader in its epoch (:class:`LeaderState`); empty on a non-leader."""
        return self._leader.replica_states() if self._leader is not None else {}

    # ------------------------------------------------------------------ the driver's calls

    def ready(self) -> Ready:
        """The work accumulated since the last call (an empty Ready when there is none)."""
        if self._pending_install is not None:
            self._ready.install = self._pending_install
            self._pending_install = None
        if self.applied < self.high_watermark:
            start = max(self.applied, self.log.start_offset)
            self._ready.committed.extend(self.log.read(start, self.high_watermark - start))
            self.applied = self.high_watermark
        ready, self._ready = self._ready, Ready()
        return ready

    def tick(self, now: int) -> None:
        """Advance the core's clock to ``now`` and fire what is due."""
        self.now = max(self.now, now)
        if self._leader is not None:  # leading
            self._leader_tick(self._leader)
            return
        if self.now >= self._election_deadline:
            if self.is_voter:
                self._start_pre_vote()
                return
            if self.leader_id is not None:  # an observer whose leader went quiet asks around
                self._become_follower(self.epoch, None)
        if self.role == FOLLOWER:
            if self._fetch_deadline is not None and self.now >= self._fetch_deadline:
                self._send_fetch()
            elif self._fetch_deadline is None and self.leader_id is None and not self.is_voter:
                self._send_fetch()

    def step(self, msg: Message) -> None:
        """Handle one inbound message addressed to this node."""
        if msg.dst != self.node_id:
            raise ValueError(f"message for node {msg.dst} stepped into node {self.node_id}")
        if isinstance(msg, VoteRequest):
            self._on_vote_request(msg)
        elif isinstance(msg, VoteResponse):
            self._on_vote_response(msg)
        elif isinstance(msg, BeginQuorumEpoch):
            self._on_begin_quorum(msg)
        elif isinstance(msg, BeginQuorumEpochResponse):
            if msg.epoch > self.epoch:
                self._become_follower(msg.epoch, None)
        elif isinstance(msg, EndQuorumEpoch):
            self._on_end_quorum(msg)
        elif isinstance(msg, FetchRequest):
            self._on_fetch_request(msg)
        elif isinstance(msg, FetchResponse):
            self._on_fetch_response(msg)
        elif isinstance(msg, FetchSnapshotRequest):
            self._on_fetch_snapshot_request(msg)
        elif isinstance(msg, FetchSnapshotResponse):
            self._on_fetch_snapshot_response(msg)
        else:
            raise TypeError(f"not a Raft message: {msg!r}")

    def peer_disconnected(self, node_id: int) -> None:
        """The driver saw its link from ``node_id`` break (a process that dies closes its
        sockets, so its peers learn of a crash at once rather than a fetch timeout later).

        If that is the leader this voter follows, stop vouching for it: its pre-vote is no
        longer refused on the leader's behalf, and its own pre-vote starts within a random
        ``[0, election_timeout)`` instead of after ``fetch_timeout``. The random spread keeps
        two followers that both lost the leader from splitting the vote. A false alarm (the
        leader is alive; only a connection was reset) costs nothing unsafe: the pre-vote is
        refused by voters that still hear from the leader, and a refusal that names the
        leader makes this node follow it again (KIP-996)."""
        if self.role != FOLLOWER or self.leader_id != node_id or not self.is_voter:
            return
        self._last_fetch_ok = None
        self._election_deadline = min(self._election_deadline,
                                      self.now + self._rng.randrange(self.config.election_timeout))

    def propose(self, value: object) -> int:
        """Append an application entry (leader only); returns its offset. It is committed
        when it shows up in a Ready's ``committed``."""
        return self._append_as_leader(DATA, value)

    def add_voter(self, node_id: int) -> int:
        """Append a voter set with ``node_id`` added (KIP-853's AddRaftVoter); the node must
        already be fetching from this leader as an observer. Returns the entry's offset."""
        if node_id in self._require_leader_for_change():
            raise RaftError(f"node {node_id} is already a voter")
        if node_id not in self._leading().replicas:
            raise RaftError(f"node {node_id} has not fetched from leader {self.node_id} in "
                            f"epoch {self.epoch}: start it as an observer first")
        return self._append_as_leader(VOTERS, self.voters | {node_id})

    def remove_voter(self, node_id: int) -> int:
        """Append a voter set without ``node_id`` (KIP-853's RemoveRaftVoter). Removing the
        leader itself makes it resign once the entry is committed."""
        voters = self._require_leader_for_change()
        if node_id not in voters:
            raise RaftError(f"node {node_id} is not a voter (voters: {sorted(voters)})")
        if len(voters) == 1:
            raise RaftError(f"node {node_id} is the only voter")
        return self._append_as_leader(VOTERS, voters - {node_id})

    def snapshot(self, end_offset: int, image: object) -> Snapshot:
        """Record the application's ``image`` of every entry below ``end_offset`` (which must
        be committed) and drop those entries from the log."""
        if not self.log.start_offset < end_offset <= self.applied:
            raise RaftError(f"snapshot end offset {end_offset} must be above the log start "
                            f"{self.log.start_offset} and at most the applied offset "
                            f"{self.applied}")
        snap = Snapshot(end_offset, self.log.epoch_at(end_offset - 1),
                        self.log.voters_at(end_offset), image)
        self.log.install(snap)
        self._ready.persist.append(SaveSnapshot(snap))
        return snap

    # ------------------------------------------------------------------ transitions

    def _role_changed(self) -> None:
        self._ready.role_changes.append((self.role, self.epoch, self.leader_id))

    def _persist_hard_state(self) -> None:
        self._ready.persist.append(HardState(self.epoch, self.voted_for))

    def _reset_election_deadline(self, randomized: bool) -> None:
        base = self.config.election_timeout
        if randomized:
            self._election_deadline = self.now + base + self._rng.randrange(base)
        else:
            self._election_deadline = self.now + self.config.fetch_timeout

    def _become_follower(self, epoch: int, leader_id: int | None) -> None:
        """Follow ``leader_id`` in ``epoch`` (None: no known leader). A new epoch clears the
        vote; the same epoch keeps it."""
        was = (self.role, self.epoch, self.leader_id)
        if epoch > self.epoch:
            self.epoch = epoch
            self.voted_for = None
            self._persist_hard_state()
        self.role = FOLLOWER
        self.leader_id = leader_id
        self._leader = None
        self._fetch_deadline = None
        self._granted = set()
        self._last_fetch_ok = None  # a hint is not the leader's word: only its answers count
        if leader_id is not None:
            self._reset_election_deadline(randomized=False)
            self._send_fetch()
        else:
            self._reset_election_deadline(randomized=True)
        if was != (self.role, self.epoch, self.leader_id):
            self._role_changed()

    def _start_pre_vote(self) -> None:
        self.role = PROSPECTIVE
        self.leader_id = None
        self._fetch_deadline = None
        self._last_fetch_ok = None
        self._granted = {self.node_id}
        self._reset_election_deadline(randomized=True)
        self._role_changed()
        self._request_votes(pre_vote=True)

    def _start_election(self) -> None:
        self.role = CANDIDATE
        self.epoch += 1
        self.voted_for = self.node_id
        self._persist_hard_state()
        self._granted = {self.node_id}
        self._reset_election_deadline(randomized=True)
        self._role_changed()
        self._request_votes(pre_vote=False)

    def _request_votes(self, pre_vote: bool) -> None:
        if len(self._granted) >= majority(self.voters):
            self._won(pre_vote)
            return
        epoch = self.epoch + 1 if pre_vote else self.epoch
        for voter in sorted(self.voters - {self.node_id}):
            self._send(VoteRequest(self.node_id, voter, epoch, self.log.last_epoch,
                                   self.log.end_offset, pre_vote))

    def _won(self, pre_vote: bool) -> None:
        if pre_vote:
            self._start_election()
        else:
            self._become_leader()

    def _become_leader(self) -> None:
        self._leader = LeaderState(self.log.end_offset, self.now)
        self.role = LEADER
        self.leader_id = self.node_id
        self._role_changed()
        self._append_as_leader(LEADER_CHANGE, self.node_id, checked=False)
        self._send_begin_quorum(self._leader)

    def _resign(self) -> None:
        """Step down as leader (removed from the voters, or cut off from a majority)."""
        for voter in sorted(self.voters - {self.node_id}):
            self._send(EndQuorumEpoch(self.node_id, voter, self.epoch))
        self._answer_parked(force=True)
        self._become_follower(self.epoch, None)

    # ------------------------------------------------------------------ leader side

    def _leading(self) -> LeaderState:
        """This leader's state; NotLeaderError when not leading (or resigned)."""
        if self.role != LEADER or self._leader is None or self._leader.resigned:
            raise NotLeaderError(self.node_id, self.leader_id, self.epoch)
        return self._leader

    def _require_leader_for_change(self) -> frozenset[int]:
        leader = self._leading()
        voters, at = self.log.voters()
        if at >= self.high_watermark:
            raise RaftError(f"a voter change is in flight (offset {at}, high watermark "
                            f"{self.high_watermark}): one change at a time")
        if self.high_watermark <= leader.epoch_start:
            raise RaftError(f"leader {self.node_id} has not committed an entry of epoch "
                            f"{self.epoch} yet")
        return voters

    def _append_as_leader(self, kind: str, value: object, checked: bool = True) -> int:
        leader = self._leading() if checked else self._leader
        assert leader is not None  # _become_leader made it
        entry = Entry(self.log.end_offset, self.epoch, kind, value)
        self.log.append(entry)
        self._ready.persist.append(Append((entry,)))
        self._update_high_watermark(leader)
        self._answer_parked(force=False)
        return entry.offset

    def _send_begin_quorum(self, leader: LeaderState) -> None:
        for voter in leader.begin_quorum_targets(self.node_id, self.voters, self.now,
                                                 self.config.begin_quorum_interval):
            self._send(BeginQuorumEpoch(self.node_id, voter, self.epoch))

    def _leader_tick(self, leader: LeaderState) -> None:
        if self.now >= leader.next_begin_quorum:
            self._send_begin_quorum(leader)
        self._answer_parked(force=False)
        if leader.quorum_lost(self.node_id, self.voters, self.now,
                              self.config.check_quorum_timeout):
            self._resign()

    def _update_high_watermark(self, leader: LeaderState) -> None:
        voters = self.voters
        candidate = leader.high_watermark_candidate(self.node_id, voters, self.log.end_offset)
        if candidate is not None and candidate > self.high_watermark:
            self.high_watermark = candidate
            self._answer_parked(force=True)
            _, at = self.log.voters()
            if self.node_id not in voters and at < self.high_watermark and not leader.resigned:
                leader.resigned = True  # removal committed: hand over once followers know
                self._resign()

    def _validate_fetch(self, req: FetchRequest) -> FetchResponse | None:
        """A diverging or snapshot answer when the fetcher's log does not match ours at
        its fetch offset (:meth:`RaftLog.divergence`); None when it matches."""
        match = self.log.divergence(req.fetch_offset, req.last_fetched_epoch)
        if match is None:
            return None
        diverging = match if isinstance(match, tuple) else None
        snap = self.log.snapshot
        return FetchResponse(self.node_id, req.src, self.epoch, self.node_id, req.fetch_offset,
                             req.last_fetched_epoch, self.high_watermark, diverging=diverging,
                             snapshot_id=(snap.end_offset, snap.epoch)
                             if snap is not None and diverging is None else None)

    def _on_fetch_request(self, req: FetchRequest) -> None:
        state = self._leader
        if state is None or req.epoch != self.epoch:  # not leading, or another epoch
            if req.epoch > self.epoch:
                self._become_follower(req.epoch, None)
            error = FENCED_EPOCH if req.epoch < self.epoch else NOT_LEADER
            leader = self.leader_id if req.epoch <= self.epoch else None
            self._send(FetchResponse(self.node_id, req.src, self.epoch, leader,
                                     req.fetch_offset, req.last_fetched_epoch, error=error))
            return
        replica = state.fetched(req.src, self.now)
        answer = self._validate_fetch(req)
        if answer is not None:
            state.unpark(req.src)
            self._send(answer)
            return
        replica.end_offset = req.fetch_offset
        state.park(req, self.now + self.config.fetch_max_wait)
        self._update_high_watermark(state)
        self._answer_parked(force=False)

    def _answer_parked(self, force: bool) -> None:
        """Answer parked fetches that have something new (entries, or a high watermark the
        fetcher has not seen), whose wait is over, or all of them (``force``)."""
        if self._leader is None:
            return
        for req in self._leader.take_parked(self.now, self.log.end_offset, force):
            entries = self.log.read(req.fetch_offset, self.config.max_fetch_entries)
            self._send(FetchResponse(self.node_id, req.src, self.epoch, self.node_id,
                                     req.fetch_offset, req.last_fetched_epoch,
                                     self.high_watermark, entries))

    def _on_fetch_snapshot_request(self, req: FetchSnapshotRequest) -> None:
        if self._leader is None or req.epoch != self.epoch:  # not leading, or another epoch
            if req.epoch > self.epoch:
                self._become_follower(req.epoch, None)
            self._send(FetchSnapshotResponse(self.node_id, req.src, self.epoch, self.leader_id))
            return
        self._leader.fetched(req.src, self.now)
        self._send(FetchSnapshotResponse(self.node_id, req.src, self.epoch, self.node_id,
                                         self.log.snapshot))

    # ------------------------------------------------------------------ follower side

    def _send_fetch(self) -> None:
        target = self.leader_id
        if target is None:
            if self.is_voter:
                return
            # An observer that knows no leader asks any voter; it answers with a hint.
            target = self._rng.choice(sorted(self.voters))
        self._send(FetchRequest(self.node_id, target, self.epoch, self.log.end_offset,
                                self.log.last_epoch))
        self._fetch_deadline = self.now + self.config.request_timeout

    def _heard_from_leader(self, epoch: int, leader_id: int) -> bool:
        """Follow ``leader_id`` of ``epoch`` if that is news; False when the message is
        stale (an older epoch) and must be dropped."""
        if epoch < self.epoch:
            return False
        if leader_id == self.node_id:
            return epoch == self.epoch and self.role == LEADER
        if epoch > self.epoch or self.leader_id != leader_id or self.role != FOLLOWER:
            self._become_follower(epoch, leader_id)
        return True

    def _on_fetch_response(self, resp: FetchResponse) -> None:
        if resp.epoch < self.epoch:
            return
        if resp.error is not None:
            if resp.leader_id is not None:
                self._heard_from_leader(resp.epoch, resp.leader_id)
            elif resp.epoch > self.epoch:
                self._become_follower(resp.epoch, None)
            return
        if resp.leader_id is None:
            return
        if (self.role, self.leader_id) != (FOLLOWER, resp.leader_id) or resp.epoch > self.epoch:
            # News of a leader: follow it, which sends a fresh fetch; this answer was to an
            # older fetch (or to another node's), so its content is not used.
            self._heard_from_leader(resp.epoch, resp.leader_id)
            return
        if (resp.fetch_offset, resp.last_fetched_epoch) != (self.log.end_offset,
                                                              self.log.last_epoch):
            return  # a late or duplicated answer to a fetch we no longer have in flight
        self._last_fetch_ok = self.now
        self._reset_election_deadline(randomized=False)
        if resp.snapshot_id is not None:
            self._send(FetchSnapshotRequest(self.node_id, resp.src, self.epoch,
                                            resp.snapshot_id))
            self._fetch_deadline = self.now + self.config.request_timeout
            return
        if resp.diverging is not None:
            epoch, end = resp.diverging
            _, own_end = self.log.end_offset_for_epoch(epoch)
            target = max(min(end, own_end), self.log.start_offset)
            if target < self.log.end_offset:
                self.log.truncate(target)
                self._ready.persist.append(Truncate(target))
            self._after_log_change()
            self._send_fetch()
            return
        if resp.entries:
            for entry in resp.entries:
                self.log.append(entry)
            self._ready.persist.append(Append(resp.entries))
            self._after_log_change()
        self._raise_high_watermark(resp.high_watermark)
        if self.role == FOLLOWER:
            self._send_fetch()

    def _raise_high_watermark(self, leader_hw: int) -> None:
        hw = min(leader_hw, self.log.end_offset)
        if hw > self.high_watermark:
            self.high_watermark = hw

    def _after_log_change(self) -> None:
        """The voter set may have changed with the log: a node that joined starts counting
        its election timer; one that left stops being a candidate for anything."""
        if not self.is_voter and self.role in (PROSPECTIVE, CANDIDATE):
            self._become_follower(self.epoch, None)

    def _on_fetch_snapshot_response(self, resp: FetchSnapshotResponse) -> None:
        if resp.epoch < self.epoch or resp.leader_id is None:
            return
        if self.role != FOLLOWER or self.leader_id != resp.leader_id or resp.epoch > self.epoch:
            self._heard_from_leader(resp.epoch, resp.leader_id)
            return
        snap = resp.snapshot
        if snap is not None and snap.end_offset > self.log.start_offset and \
                snap.end_offset > self.high_watermark:
            keep = self.log.install(snap)
            self._ready.persist.append(SaveSnapshot(snap, keep_log=keep))
            self._pending_install = snap
            self.high_watermark = snap.end_offset
            self.applied = snap.end_offset
            self._ready.committed.clear()
            self._after_log_change()
        self._last_fetch_ok = self.now
        self._reset_election_deadline(randomized=False)
        self._send_fetch()

    # ------------------------------------------------------------------ votes

    def _log_is_up_to_date(self, last_epoch: int, end_offset: int) -> bool:
        return (last_epoch, end_offset) >= (self.log.last_epoch, self.log.end_offset)

    def _leader_is_alive(self) -> bool:
        if self.role == LEADER:
            return True
        return (self.role == FOLLOWER and self.leader_id is not None
                and self._last_fetch_ok is not None
                and self.now - self._last_fetch_ok < self.config.fetch_timeout)

    def _on_vote_request(self, req: VoteRequest) -> None:
        def answer(granted: bool) -> None:
            self._send(VoteResponse(self.node_id, req.src, self.epoch, granted, req.pre_vote,
                                    self.leader_id if self.role in (FOLLOWER, LEADER)
                                    else None))

        # A candidate outside this node's voter set is not refused for that: this node's
        # set may be the stale one. Pre-vote and the log check keep removed nodes out.
        if req.pre_vote:
            answer(req.epoch > self.epoch and not self._leader_is_alive()
                   and self._log_is_up_to_date(req.last_epoch, req.end_offset))
            return
        if req.epoch < self.epoch:
            answer(False)
            return
        if req.epoch > self.epoch:
            if self.role == LEADER:
                self._answer_parked(force=True)
            self._become_follower(req.epoch, None)
        grant = (self.voted_for in (None, req.src) and self.role != LEADER
                 and self._log_is_up_to_date(req.last_epoch, req.end_offset))
        if grant and self.voted_for is None:
            self.voted_for = req.src
            self._persist_hard_state()
            self._reset_election_deadline(randomized=True)
        answer(grant)

    def _on_vote_response(self, resp: VoteResponse) -> None:
        if resp.epoch > self.epoch:
            # The responder has moved on: follow its leader if it names one, else take the
            # epoch and wait for the next election timeout.
            if resp.leader_id is not None and resp.leader_id != self.node_id:
                self._heard_from_leader(resp.epoch, resp.leader_id)
            else:
                self._become_follower(resp.epoch, None)
            return
        if resp.epoch < self.epoch:
            return
        if resp.pre_vote:
            if self.role != PROSPECTIVE:
                return
            if not resp.granted and resp.leader_id is not None and \
                    resp.leader_id != self.node_id:
                self._become_follower(self.epoch, resp.leader_id)  # KIP-996: follow it
                return
        elif self.role != CANDIDATE:
            return
        if resp.granted and resp.src in self.voters:
            self._granted.add(resp.src)
            if len(self._granted) >= majority(self.voters):
                self._won(resp.pre_vote)

    def _on_begin_quorum(self, msg: BeginQuorumEpoch) -> None:
        if self._heard_from_leader(msg.epoch, msg.src):
            self._last_fetch_ok = self.now
        self._send(BeginQuorumEpochResponse(self.node_id, msg.src, self.epoch))

    def _on_end_quorum(self, msg: EndQuorumEpoch) -> None:
        if msg.epoch == self.epoch and self.leader_id == msg.src and self.role == FOLLOWER:
            self._become_follower(self.epoch, None)
            if self.is_voter:
                self._election_deadline = self.now  # elect a successor without waiting

    def _send(self, msg: Message) -> None:
        self._ready.messages.append(msg)
