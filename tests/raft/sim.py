"""A deterministic simulator of a Raft quorum built from :class:`broker_sim.raft.RaftCore`.

Everything that varies comes from one seeded :class:`random.Random`: election timeouts,
message delays (hence reordering), losses, duplicates, partitions, crashes and the
workload. A run is a function of its seed, so a failing seed replays exactly; the trace of
faults and proposals is printed with the violation.

Every node's Ready is carried out as a driver would: persist operations are applied to the
node's :class:`Storage` (what survives a crash), installs and committed entries to its
application (a list of committed entries), then messages go to the :class:`Network`. After
every step the invariants are checked (:meth:`Simulation.check`).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from broker_sim.raft import (
    LEADER,
    Append,
    Entry,
    HardState,
    Message,
    RaftConfig,
    RaftCore,
    RaftError,
    SaveSnapshot,
    Snapshot,
    Stored,
    Truncate,
)

CONFIG = RaftConfig(election_timeout=150, fetch_timeout=300, fetch_max_wait=50,
                    request_timeout=100, begin_quorum_interval=100, check_quorum_timeout=450,
                    max_fetch_entries=16)
TICK = 5  # simulated time per step


class InvariantViolation(AssertionError):
    pass


@dataclass
class Storage:
    """A node's durable state, built only from the persist operations of its Readies."""

    hard_state: HardState = field(default_factory=lambda: HardState(0, None))
    snapshot: Snapshot | None = None
    entries: list[Entry] = field(default_factory=list)

    def apply(self, op: Any) -> None:
        if isinstance(op, HardState):
            self.hard_state = op
        elif isinstance(op, Truncate):
            self.entries = [e for e in self.entries if e.offset < op.offset]
        elif isinstance(op, Append):
            expected = self.entries[-1].offset + 1 if self.entries else \
                (self.snapshot.end_offset if self.snapshot else 0)
            if op.entries[0].offset != expected:
                raise InvariantViolation(f"append at {op.entries[0].offset}, storage ends at "
                                         f"{expected}")
            self.entries.extend(op.entries)
        elif isinstance(op, SaveSnapshot):
            self.snapshot = op.snapshot
            self.entries = [e for e in self.entries
                            if op.keep_log and e.offset >= op.snapshot.end_offset]
        else:
            raise TypeError(op)

    def stored(self) -> Stored:
        return Stored(self.hard_state, self.snapshot, tuple(self.entries))


class Network:
    """Messages in flight, delivered at a random later time unless dropped or blocked;
    some are duplicated. ``blocked`` holds the directed (src, dst) pairs cut off."""

    def __init__(self, rng: random.Random, drop: float = 0.0, duplicate: float = 0.0,
                 max_delay: int = 15) -> None:
        self.rng = rng
        self.drop = drop
        self.duplicate = duplicate
        self.max_delay = max_delay
        self.blocked: set[tuple[int, int]] = set()
        self._queue: list[tuple[int, int, Message]] = []
        self._seq = 0
        self._last_seq: dict[tuple[int, int], int] = {}
        # what the faults did, for the tests to show they happened
        self.sent = self.dropped = self.duplicated = self.reordered = 0

    def send(self, msg: Message, now: int) -> None:
        self.sent += 1
        copies = 2 if self.rng.random() < self.duplicate else 1
        self.duplicated += copies - 1
        for _ in range(copies):
            if (msg.src, msg.dst) in self.blocked or self.rng.random() < self.drop:
                self.dropped += 1
                continue
            self._seq += 1
            heapq.heappush(self._queue, (now + self.rng.randint(1, self.max_delay), self._seq,
                                         msg))

    def due(self, now: int) -> list[Message]:
        out = []
        while self._queue and self._queue[0][0] <= now:
            _, seq, msg = heapq.heappop(self._queue)
            link = (msg.src, msg.dst)
            if link in self.blocked:
                self.dropped += 1
                continue
            if seq < self._last_seq.get(link, 0):
                self.reordered += 1  # overtaken by a message sent after it
            self._last_seq[link] = max(seq, self._last_seq.get(link, 0))
            out.append(msg)
        return out

    def heal(self) -> None:
        self.blocked.clear()
        self.drop = 0.0
        self.duplicate = 0.0


@dataclass
class Node:
    node_id: int
    core: RaftCore | None
    storage: Storage = field(default_factory=Storage)
    app: list[Entry] = field(default_factory=list)  # committed entries, applied in order
    max_hw: int = 0  # highest high watermark of the current incarnation


CoreFactory = Callable[..., RaftCore]


class Simulation:
    """``voters`` start as the quorum; ``observers`` fetch without voting (and may be added
    as voters by a test). ``factory`` builds cores (a test passes a broken variant)."""

    def __init__(self, seed: int, voters: int = 3, observers: int = 0,
                 config: RaftConfig = CONFIG, factory: CoreFactory = RaftCore) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.config = config
        self.factory = factory
        self.now = 0
        self.initial_voters = frozenset(range(1, voters + 1))
        self.net = Network(random.Random(self.rng.random()))
        self.nodes: dict[int, Node] = {}
        for node_id in range(1, voters + observers + 1):
            self.nodes[node_id] = Node(node_id, None)
            self._start(node_id)
        self.trace: list[str] = []
        self.committed: dict[int, Entry] = {}
        self.leaders: dict[int, int] = {}
        self.proposed = 0
        self.steps = 0

    # ------------------------------------------------------------------ running

    def _start(self, node_id: int) -> None:
        node = self.nodes[node_id]
        node.core = self.factory(node_id, self.initial_voters, self.config,
                                 random.Random(self.rng.random()), node.storage.stored(),
                                 now=self.now)
        node.app = []
        node.max_hw = 0
        self._drain(node)

    def log(self, event: str) -> None:
        self.trace.append(f"t={self.now} {event}")

    def fail(self, what: str) -> None:
        tail = "\n  ".join(self.trace[-60:])
        raise InvariantViolation(f"seed {self.seed}, t={self.now}: {what}\n"
                                 f"replay: Simulation(seed={self.seed}); last events:\n  {tail}")

    def step(self) -> None:
        self.now += TICK
        self.steps += 1
        for msg in self.net.due(self.now):
            node = self.nodes[msg.dst]
            if node.core is not None:
                node.core.step(msg)
                self._drain(node)
        for node in self.nodes.values():
            if node.core is not None:
                node.core.tick(self.now)
                self._drain(node)
        self.check()

    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step()

    def _drain(self, node: Node) -> None:
        core = node.core
        assert core is not None
        ready = core.ready()
        for op in ready.persist:
            if isinstance(op, Truncate) and op.offset < node.max_hw:
                self.fail(f"node {node.node_id} truncates its log to {op.offset}, below its "
                          f"high watermark {node.max_hw}")
            node.storage.apply(op)
        if ready.install is not None:
            snap = ready.install
            if len(node.app) > snap.end_offset:
                self.fail(f"node {node.node_id} installs snapshot at {snap.end_offset} over "
                          f"{len(node.app)} applied entries")
            node.app = list(snap.image)
        for entry in ready.committed:
            if entry.offset != len(node.app):
                self.fail(f"node {node.node_id} applies offset {entry.offset} after "
                          f"{len(node.app)} entries")
            known = self.committed.setdefault(entry.offset, entry)
            if known != entry:
                self.fail(f"node {node.node_id} commits {entry} where {known} was committed")
            node.app.append(entry)
        for role, epoch, _leader in ready.role_changes:
            if role == LEADER:
                self.log(f"node {node.node_id} leader of epoch {epoch}")
                first = self.leaders.setdefault(epoch, node.node_id)
                if first != node.node_id:
                    self.fail(f"two leaders in epoch {epoch}: {first} and {node.node_id}")
                self._check_leader_completeness(node)
        for msg in ready.messages:
            self.net.send(msg, self.now)

    # ------------------------------------------------------------------ invariants

    def _check_leader_completeness(self, node: Node) -> None:
        core = node.core
        assert core is not None
        log = core.log
        for offset, entry in self.committed.items():
            if offset >= log.start_offset and (offset >= log.end_offset
                                               or log.entry(offset) != entry):
                self.fail(f"new leader {node.node_id} (epoch {core.epoch}) lacks committed "
                          f"{entry}")

    def check(self) -> None:
        """Cheap checks after every step: high watermarks only grow, never pass the log's
        end, and an applied image agrees with what was committed."""
        for node in self.nodes.values():
            core = node.core
            if core is None:
                continue
            hw = core.high_watermark
            if hw < node.max_hw:
                self.fail(f"node {node.node_id} high watermark went back {node.max_hw} -> {hw}")
            node.max_hw = hw
            if hw > core.log.end_offset:
                self.fail(f"node {node.node_id} high watermark {hw} beyond its log end "
                          f"{core.log.end_offset}")

    def check_logs(self) -> None:
        """The full log-matching check: every committed entry each node still holds below
        its high watermark is the committed one, and every applied entry too."""
        for node in self.nodes.values():
            if node.core is None:
                continue
            log = node.core.log
            for offset in range(log.start_offset, min(node.core.high_watermark, log.end_offset)):
                if self.committed.get(offset, log.entry(offset)) != log.entry(offset):
                    self.fail(f"node {node.node_id} holds {log.entry(offset)} where "
                              f"{self.committed[offset]} was committed")
            for entry in node.app:
                if self.committed.get(entry.offset) != entry:
                    self.fail(f"node {node.node_id} applied {entry}, committed is "
                              f"{self.committed.get(entry.offset)}")

    # ------------------------------------------------------------------ queries and actions

    def leader(self) -> Node | None:
        """The live leader of the highest epoch, if any."""
        best: Node | None = None
        for node in self.nodes.values():
            core = node.core
            if core is not None and core.role == LEADER and \
                    (best is None or core.epoch > best.core.epoch):  # type: ignore[union-attr]
                best = node
        return best

    def propose(self, value: Any = None) -> int | None:
        node = self.leader()
        if node is None or node.core is None:
            return None
        self.proposed += 1
        value = value if value is not None else f"v{self.proposed}"
        try:
            offset = node.core.propose(value)
        except RaftError:
            return None
        self.log(f"propose {value!r} at {offset} on node {node.node_id}")
        self._drain(node)
        return offset

    def crash(self, node_id: int) -> None:
        self.log(f"crash node {node_id}")
        node = self.nodes[node_id]
        core = node.core
        assert core is not None
        # What the core would restart from must be what the driver persisted.
        if node.storage.entries != core.log.entries or node.storage.snapshot != core.log.snapshot:
            self.fail(f"node {node_id}: storage differs from the core's log")
        if node.storage.hard_state != HardState(core.epoch, core.voted_for):
            self.fail(f"node {node_id}: stored {node.storage.hard_state}, core at epoch "
                      f"{core.epoch} voted for {core.voted_for}")
        node.core = None
        # A dead process's sockets close: its peers' drivers see the links break at once.
        for other in self.nodes.values():
            if other.core is not None:
                other.core.peer_disconnected(node_id)
                self._drain(other)

    def disconnect(self, src: int, dst: int) -> None:
        """Tell ``dst`` its link from ``src`` broke while ``src`` lives (a reset connection:
        the false alarm a driver cannot tell from a crash)."""
        self.log(f"link {src} -> {dst} reset")
        node = self.nodes[dst]
        if node.core is not None:
            node.core.peer_disconnected(src)
            self._drain(node)

    def restart(self, node_id: int) -> None:
        self.log(f"restart node {node_id}")
        self._start(node_id)

    def partition(self, *groups: set[int]) -> None:
        """Cut every link between nodes of different groups (nodes in no group are cut off
        from everyone)."""
        self.log(f"partition {[sorted(g) for g in groups]}")
        where = {n: i for i, g in enumerate(groups) for n in g}
        self.net.blocked = {(a, b) for a in self.nodes for b in self.nodes
                            if a != b and where.get(a, -1 - a) != where.get(b, -1 - b)}

    def block(self, src: int, dst: int) -> None:
        self.log(f"block {src} -> {dst}")
        self.net.blocked.add((src, dst))

    def heal(self) -> None:
        self.log("heal")
        self.net.heal()

    def snapshot(self, node_id: int) -> None:
        node = self.nodes[node_id]
        core = node.core
        assert core is not None
        if core.applied > core.log.start_offset:
            self.log(f"snapshot node {node_id} at {core.applied}")
            core.snapshot(core.applied, tuple(node.app))
            self._drain(node)

    def change_voters(self, rng: random.Random) -> None:
        """Ask the leader to add a non-voter or remove a voter (keeping at least three),
        as an operator would; a refused change (one in flight) is just logged."""
        leader = self.leader()
        if leader is None or leader.core is None:
            return
        core = leader.core
        outside = sorted(set(self.nodes) - core.voters)
        try:
            if outside and (len(core.voters) <= 3 or rng.random() < 0.5):
                node_id = rng.choice(outside)
                offset = core.add_voter(node_id)
                self.log(f"add voter {node_id} at {offset} on node {leader.node_id}")
            elif len(core.voters) > 3:
                node_id = rng.choice(sorted(core.voters))
                offset = core.remove_voter(node_id)
                self.log(f"remove voter {node_id} at {offset} on node {leader.node_id}")
        except RaftError as e:
            self.log(f"voter change refused: {e}")
        self._drain(leader)

    def run_until(self, done: Callable[[], bool], max_steps: int, what: str) -> int:
        for taken in range(max_steps):
            if done():
                return taken
            self.step()
        if done():
            return max_steps
        self.fail(f"not live: {what} within {max_steps} steps ({max_steps * TICK} time units)")
        return max_steps

    def committed_everywhere(self, value: Any) -> bool:
        """Whether every live node has applied an entry with ``value``; proposes it again
        to the current leader whenever that leader's log does not hold it (a proposal to a
        leader deposed before committing it is lost, as a client's request would be)."""
        leader = self.leader()
        if leader is not None and leader.core is not None and \
                all(e.value != value for e in leader.core.log.entries[-200:]):
            self.propose(value)
        return all(any(e.value == value for e in node.app[-200:])
                   for node in self.nodes.values() if node.core is not None)

    def stable_leader(self) -> bool:
        """One leader followed by every live voter in its epoch."""
        node = self.leader()
        if node is None or node.core is None:
            return False
        epoch = node.core.epoch
        return all(n.core.epoch == epoch and n.core.leader_id == node.node_id
                   for n in self.nodes.values()
                   if n.core is not None and n.node_id in node.core.voters)


def random_schedule(seed: int, voters: int = 3, observers: int = 0, chaos_steps: int = 400,
                    factory: CoreFactory = RaftCore) -> Simulation:
    """One seeded run: ``chaos_steps`` of random faults and load, then the network heals,
    every node restarts, and a leader must be elected and a new entry committed on every
    node within 600 steps. Returns the simulation (for its counters)."""
    sim = Simulation(seed, voters, observers, factory=factory)
    rng = sim.rng
    sim.net.drop = rng.choice([0.0, 0.05, 0.2])
    sim.net.duplicate = rng.choice([0.0, 0.05, 0.2])
    ids = sorted(sim.nodes)
    for _ in range(chaos_steps):
        r = rng.random()
        live = [i for i in ids if sim.nodes[i].core is not None]
        if r < 0.015 and live:
            sim.crash(rng.choice(live))
        elif r < 0.04:
            dead = [i for i in ids if sim.nodes[i].core is None]
            if dead:
                sim.restart(rng.choice(dead))
        elif r < 0.055:
            shuffled = ids[:]
            rng.shuffle(shuffled)
            cut = rng.randint(1, len(ids) - 1)
            sim.partition(set(shuffled[:cut]), set(shuffled[cut:]))
        elif r < 0.065:
            leader = sim.leader()
            if leader is not None:  # cut the leader off, the classic case
                sim.partition({leader.node_id}, set(ids) - {leader.node_id})
        elif r < 0.075:
            a, b = rng.sample(ids, 2)
            sim.block(a, b)
        elif r < 0.09:
            sim.log("heal links")
            sim.net.blocked.clear()
        elif r < 0.3:
            sim.propose()
        elif r < 0.31 and live:
            sim.snapshot(rng.choice(live))
        elif r < 0.32:
            sim.change_voters(rng)
        elif r < 0.335:
            a, b = rng.sample(ids, 2)
            sim.disconnect(a, b)
        sim.step()
    sim.heal()
    for node_id in ids:
        if sim.nodes[node_id].core is None:
            sim.restart(node_id)
    sim.run_until(sim.stable_leader, 400, "a leader followed by every voter after healing")
    sim.run_until(lambda: sim.committed_everywhere("after-heal"), 400,
                  "an entry proposed after healing committed on every node")
    sim.check_logs()
    return sim
