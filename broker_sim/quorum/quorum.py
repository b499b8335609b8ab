"""MetadataQuorum: one controller's member of the metadata quorum (KRaft's RaftClient)."""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..common.clock import SYSTEM_CLOCK, Clock
from ..common.shutdownable_thread import ShutdownableThread
from ..protocol.errors import NotController, RequestTimedOut
from ..raft import (
    DATA,
    LEADER,
    LEADER_CHANGE,
    Append,
    Entry,
    HardState,
    Message,
    PersistOp,
    RaftConfig,
    RaftCore,
    Ready,
    SaveSnapshot,
    Truncate,
)
from .storage import MetadataLogStore
from .transport import QuorumTransport

log = logging.getLogger(__name__)

_TICK_S = 0.02


class RaftListener(Protocol):
    """What the application hears from its quorum member, always on the quorum's thread and
    in log order (a listener must not block on the quorum: no :meth:`~MetadataQuorum.
    await_committed` inside a callback)."""

    def handle_commit(self, offset: int, record: bytes) -> None:
        """The record at ``offset`` is committed (each once, in offset order)."""

    def handle_snapshot(self, offset: int, data: bytes) -> None:
        """Replace the whole state by ``data``, the image of every record below ``offset``
        (at start-up from the stored snapshot, or one installed from the leader)."""

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        """``leader_id`` leads ``epoch`` (None: no leader known). For this node itself it is
        called once its epoch's first entry is committed, so everything committed before
        has been handed to :meth:`handle_commit` already."""


@dataclass(frozen=True)
class ReplicaState:
    """One replica's line of DescribeQuorum: log end offset and last fetch (epoch ms, -1
    unknown), as the leader sees them."""

    node_id: int
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


@dataclass(frozen=True)
class QuorumDescription:
    leader_id: int | None
    epoch: int
    high_watermark: int
    voters: tuple[ReplicaState, ...]
    observers: tuple[ReplicaState, ...]


class _Driver(ShutdownableThread):
    """The quorum's driver thread: rounds of :meth:`MetadataQuorum._drive_once`."""

    def __init__(self, quorum: MetadataQuorum, name: str) -> None:
        super().__init__(name)
        self.quorum = quorum

    def run_once(self) -> None:
        self.quorum._drive_once(self)


class MetadataQuorum:
    """Drives a :class:`~broker_sim.raft.RaftCore` with real disks, sockets and time.

    One driver thread (``quorum-<id>``, a :class:`~broker_sim.common.ShutdownableThread`)
    owns the I/O: it steps inbound messages into the core, ticks it every 20 ms with
    ``clock``'s monotonic milliseconds, and drains each
    :class:`~broker_sim.raft.Ready` in order — persist to the :class:`~.storage.
    MetadataLogStore` (fsync), hand a snapshot and then the committed entries to the
    listener, wake :meth:`await_committed`, send the messages. Application calls
    (:meth:`append`, :meth:`snapshot`, voter changes) take ``_lock`` (which guards the core
    and nothing else, never held during I/O or callbacks) and wake the driver.

    Invariants: nothing is sent, committed to the listener or acknowledged before the
    persist operations of the same Ready are on disk; the listener sees every committed
    record once, in order, across restarts only from the stored snapshot onwards;
    :meth:`await_committed` returns for an appended record only if the entry committed at
    its offset is the one appended (same epoch), and raises NotController once this node is
    no longer the leader of that epoch.

    A lone voter elects itself at once (its clock starts past the election timeout), as
    Kafka's single controller does. The Raft core's time (timeouts, fetch times) is read
    on ``clock``, in milliseconds since construction.
    """

    def __init__(self, node_id: int, data_dir: Path, voters: dict[int, tuple[str, int]],
                 host: str = "127.0.0.1", port: int | None = None,
                 config: RaftConfig | None = None, seed: int | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        if not voters:
            raise ValueError("quorum option voters={} is invalid: at least one voter is needed")
        self.node_id = node_id
        self.config = config or RaftConfig()
        self.store = MetadataLogStore(data_dir)
        stored = self.store.load()
        self._addresses = dict(voters)
        if port is None:
            port = voters[node_id][1] if node_id in voters else 0
        self._inbox: queue.Queue[Message | None] = queue.Queue()
        self.transport = QuorumTransport(host, port, self._inbox.put,
                                         lambda node: self._inbox.put(_LinkLost(node, node_id, 0)))
        self.transport.set_peers({n: a for n, a in voters.items() if n != node_id})
        self._clock = clock
        self._t0 = clock.monotonic_ms()
        self._shift = 2 * self.config.election_timeout if set(voters) == {node_id} else 0
        self._lock = threading.Lock()
        self.core = RaftCore(node_id, frozenset(voters), self.config,
                             random.Random(seed if seed is not None else node_id * 7919 +
                                           time.monotonic_ns()), stored, now=0)
        self._listeners: list[RaftListener] = []
        # committed and handed to listeners: entries below this offset; guarded by _done
        self._done = threading.Condition()
        self._applied = self.core.applied
        self._pending: dict[int, int] = {}  # offset -> epoch of records appended here
        self._outcomes: dict[int, bool] = {}  # offset -> the appended record committed?
        self._leader_epoch = -1  # the epoch this node leads, once its LEADER_CHANGE committed
        self._reported: tuple[int | None, int] | None = None
        self._closed = False
        self._thread = _Driver(self, f"quorum-{node_id}")

    # ---- the application's calls ---------------------------------------------------------
    @property
    def port(self) -> int:
        return self.transport.port

    def register(self, listener: RaftListener) -> None:
        """Add a listener (before :meth:`start`, to hear the log from the beginning)."""
        self._listeners.append(listener)

    def start(self) -> MetadataQuorum:
        self.transport.start()
        self._thread.start()
        return self

    def set_addresses(self, voters: dict[int, tuple[str, int]]) -> None:
        """The quorum addresses of the voters (after a port is known, or a voter added)."""
        self._addresses.update(voters)
        self.transport.set_peers({n: a for n, a in self._addresses.items() if n != self.node_id})

    def leader_and_epoch(self) -> tuple[int | None, int]:
        with self._lock:
            return self.core.leader_id, self.core.epoch

    def caught_up(self) -> bool:
        """Every entry this node holds has been committed and handed to the listeners (on
        the leader: nothing it appended is still pending)."""
        with self._lock:
            end = self.core.log.end_offset
        return self._applied >= end

    def is_active(self, epoch: int) -> bool:
        """This node leads ``epoch`` and its listeners have heard so."""
        return self._leader_epoch == epoch

    def _not_controller(self) -> NotController:
        leader, epoch = self.core.leader_id, self.core.epoch
        hint = f"controller {leader} leads epoch {epoch}" if leader is not None and \
            leader != self.node_id else f"no controller is known to lead epoch {epoch} yet"
        error = NotController(f"controller {self.node_id} is not the active controller; {hint}")
        error.leader_id = leader if leader != self.node_id else None  # type: ignore[attr-defined]
        return error

    def append(self, record: bytes, epoch: int) -> int:
        """Append ``record`` as the leader of ``epoch``; its offset (see
        :meth:`await_committed`). NotController if this node does not lead ``epoch``."""
        with self._lock:
            if self._closed or self.core.role != LEADER or self.core.epoch != epoch:
                raise self._not_controller()
            offset = self.core.propose(record)
            self._pending[offset] = epoch
        self._inbox.put(_WAKE)
        return offset

    def await_committed(self, offset: int, timeout_s: float) -> None:
        """Return once the record appended at ``offset`` is committed and handed to the
        listeners. NotController if it was not (leadership lost); RequestTimedOut after
        ``timeout_s`` (it may still commit)."""
        deadline = time.monotonic() + timeout_s
        with self._done:
            while True:
                outcome = self._outcomes.pop(offset, None)
                if outcome is not None:
                    if outcome:
                        return
                    raise self._not_controller()
                epoch = self._pending.get(offset)
                if epoch is None or self._closed or self._applied <= offset and (
                        self.core.role != LEADER or self.core.epoch != epoch):
                    self._pending.pop(offset, None)
                    raise self._not_controller()
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RequestTimedOut(f"metadata record at offset {offset} not committed "
                                          f"within {timeout_s:.1f} s")
                self._done.wait(min(left, 0.1))

    def snapshot(self, offset: int, data: bytes) -> None:
        """Store ``data`` as the image of every record below ``offset`` (committed) and let
        the log drop them. May be called from a listener callback."""
        with self._lock:
            self.core.snapshot(offset, data)
        self._inbox.put(_WAKE)

    def add_voter(self, node_id: int, host: str, port: int) -> int:
        """Make observer ``node_id`` (fetching already) a voter; the VOTERS entry's offset."""
        self.set_addresses({node_id: (host, port)})
        with self._lock:
            offset = self.core.add_voter(node_id)
        self._inbox.put(_WAKE)
        return offset

    def remove_voter(self, node_id: int) -> int:
        with self._lock:
            offset = self.core.remove_voter(node_id)
        self._inbox.put(_WAKE)
        return offset

    def describe(self) -> QuorumDescription:
        """What DescribeQuorum answers: leader, epoch, high watermark, and each voter's and
        observer's log end offset and last fetch (known on the leader only, else -1)."""
        with self._lock:
            core = self.core
            now = self._now()
            wall = self._clock.wall_ms()
            states = core.replica_states()
            leader = core.leader_id
            hw = core.high_watermark

            def line(node: int) -> ReplicaState:
                if node == self.node_id:
                    return ReplicaState(node, core.log.end_offset, wall, wall)
                end, last = states.get(node, (-1, None))
                ts = wall - (now - last) if last is not None else -1
                return ReplicaState(node, end, ts, ts if end >= hw and end >= 0 else -1)

            voters = tuple(line(v) for v in sorted(core.voters))
            observers = tuple(line(n) for n in sorted(set(states) - core.voters))
            return QuorumDescription(leader, core.epoch, hw, voters, observers)

    def close(self) -> None:
        """Stop the driver and the links (records not yet committed stay unanswered:
        :meth:`await_committed` raises NotController)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._inbox.put(None)  # ends the driver's wait for messages
        self._thread.stop(timeout=5)
        self.transport.close()
        self.store.close()
        with self._done:
            self._done.notify_all()

    # ---- the driver thread -----------------------------------------------------------------
    def _now(self) -> int:
        return self._clock.monotonic_ms() - self._t0 + self._shift

    def _drive_once(self, driver: ShutdownableThread) -> None:
        """One round of the driver thread: wait up to a tick for messages, step the core
        with all that came, tick it, handle what is ready. Asks ``driver`` to stop at
        :meth:`close` or when handling fails."""
        try:
            item = self._inbox.get(timeout=_TICK_S)
        except queue.Empty:
            item = _WAKE
        if item is None:
            driver.request_stop()
            return
        batch = [item]
        while True:
            try:
                more = self._inbox.get_nowait()
            except queue.Empty:
                break
            if more is None:
                driver.request_stop()
                return
            batch.append(more)
        with self._lock:
            if self._closed:
                driver.request_stop()
                return
            for msg in batch:
                if isinstance(msg, _LinkLost):
                    self.core.peer_disconnected(msg.src)
                elif msg is not _WAKE:
                    try:
                        self.core.step(msg)
                    except (ValueError, TypeError):
                        log.warning("quorum %d: dropped a message %r", self.node_id, msg)
            self.core.tick(self._now())
            ready = self.core.ready()
        if ready:
            try:
                self._handle(ready)
            except Exception:
                log.exception("quorum %d: the driver failed; stopping it", self.node_id)
                with self._done:
                    self._closed = True
                    self._done.notify_all()
                driver.request_stop()

    def _persist(self, ops: list[PersistOp]) -> None:
        pending: list[Entry] = []
        for op in [*ops, None]:
            if isinstance(op, Append):
                pending.extend(op.entries)
                continue
            if pending:
                self.store.append(tuple(pending))
                pending = []
            if isinstance(op, HardState):
                self.store.save_hard_state(op)
            elif isinstance(op, Truncate):
                self.store.truncate(op.offset)
            elif isinstance(op, SaveSnapshot):
                self.store.save_snapshot(op.snapshot, op.keep_log)

    def _handle(self, ready: Ready) -> None:
        self._persist(ready.persist)
        for role, epoch, leader in ready.role_changes:
            if role != LEADER:
                self._leader_epoch = -1
                self._report(leader, epoch)
        if ready.install is not None:
            snap = ready.install
            image = snap.image if isinstance(snap.image, bytes) else b""
            for listener in self._listeners:
                listener.handle_snapshot(snap.end_offset, image)
            self._set_applied(snap.end_offset, [])
        for entry in ready.committed:
            if entry.kind == DATA:
                for listener in self._listeners:
                    listener.handle_commit(entry.offset, entry.value)
            elif entry.kind == LEADER_CHANGE and entry.value == self.node_id:
                with self._lock:
                    leading = self.core.role == LEADER and self.core.epoch == entry.epoch
                if leading:
                    self._leader_epoch = entry.epoch
                    self._report(self.node_id, entry.epoch)
            self._set_applied(entry.offset + 1, [(entry.offset, entry.epoch)])
        if ready.role_changes:
            with self._done:
                self._done.notify_all()
        for msg in ready.messages:
            self.transport.send(msg)

    def _report(self, leader: int | None, epoch: int) -> None:
        if self._reported == (leader, epoch):
            return
        self._reported = (leader, epoch)
        log.info("quorum %d: leader %s in epoch %d", self.node_id, leader, epoch)
        for listener in self._listeners:
            listener.handle_leader_change(leader, epoch)

    def _set_applied(self, applied: int, entries: list[tuple[int, int]]) -> None:
        with self._done:
            self._applied = max(self._applied, applied)
            for offset, epoch in entries:
                wanted = self._pending.pop(offset, None)
                if wanted is not None:
                    self._outcomes[offset] = wanted == epoch
            for offset in [o for o in self._pending if o < self._applied]:
                self._outcomes[offset] = False  # covered by an installed snapshot
                del self._pending[offset]
            self._done.notify_all()


class _Wake(Message):
    pass


class _LinkLost(Message):
    """The transport's word that the connection from ``src`` broke (see the core's
    ``peer_disconnected``)."""


_WAKE: Message = _Wake(0, 0, 0)
