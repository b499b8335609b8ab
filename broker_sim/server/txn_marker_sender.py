"""Sending transaction markers to the leaders of a transaction's partitions.

When a transaction is decided (its PrepareCommit/PrepareAbort is written), every partition
it wrote to needs a marker from that partition's leader. As Kafka's
``TransactionMarkerChannelManager``, :class:`MarkerSender` keeps one queue per destination
broker, served by that destination's own thread over one long-lived connection to its
inter-broker listener: each round takes everything queued for the broker — the markers of
every transaction decided meanwhile — and sends it as one WriteTxnMarkers. A transaction's
leaders are written to in parallel (one queue each), so ending a transaction costs one
acks=all marker write, not one per leader in turn, and no connection is opened per marker.

A transaction is done when every partition has its marker (or its topic is gone); whatever
failed — a moved leader, a broker down, a timeout — is regrouped by its current leader and
sent again after a short backoff, until done or until the coordinator no longer owns the
transaction (the next coordinator resends them: markers are idempotent for the log, which
ignores a marker for a transaction already closed).

Threading: ``send`` from any thread; a destination's thread (one per broker markers went
to) does its I/O and runs the ``done`` callbacks of the transactions it finishes; the
retries thread runs what waits for a backoff. A transaction's fields are guarded by its
lock, a queue by its condition.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from ..common import ShutdownableThread
from ..common.clock import SYSTEM_CLOCK, Clock
from ..network.blocking_client import BlockingConnection
from ..protocol.api import ApiKey
from ..protocol.errors import UnknownTopicOrPartition
from ..timer import SystemTimer, TimerReaper, TimerTask

log = logging.getLogger(__name__)

MARKER_VERSION = 1
RETRY_BACKOFF_S = 0.1
#: a leader answers once the in-sync replicas have the marker (up to its 30 s timeout).
MARKER_WAIT_S = 35.0
#: how long an idle thread waits before looking at its stop flag again.
POLL_S = 0.5

TP = tuple[str, int]


@dataclass(eq=False)
class _Transaction:
    """One decided transaction's markers: the partitions still without one."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    remaining: set[TP]
    still_owned: Callable[[], bool]
    done: Callable[[], None]
    #: destinations asked in this round and not yet answered.
    outstanding: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Destination(ShutdownableThread):
    """The markers waiting for one broker, and the thread and connection that send them."""

    def __init__(self, sender: MarkerSender, broker: int) -> None:
        super().__init__(f"txn-markers-{sender.broker_id}-to-{broker}")
        self.sender = sender
        self.broker = broker
        self._queue: list[tuple[_Transaction, list[TP]]] = []
        self._cond = threading.Condition()
        self._conn: BlockingConnection | None = None

    def enqueue(self, txn: _Transaction, tps: list[TP]) -> None:
        with self._cond:
            self._queue.append((txn, tps))
            self._cond.notify()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def run_once(self) -> None:
        with self._cond:
            if not self._queue and not self.stopping.is_set():
                self._cond.wait(POLL_S)
            if not self._queue or self.stopping.is_set():
                return
            batch, self._queue = self._queue, []
        results = self._send(batch)
        for (txn, _), ok in zip(batch, results, strict=True):
            try:
                self.sender.answered(txn, ok)
            except Exception:  # one completion failing must not stall the rest
                log.exception("completing the markers of producer %d failed", txn.producer_id)

    def on_stopped(self) -> None:
        if self._conn is not None:
            self._conn.close()

    def _connection(self) -> BlockingConnection | None:
        address = self.sender.address(self.broker)
        if address is None:
            return None
        conn = self._conn
        if conn is None or (conn.host, conn.port) != address:
            if conn is not None:
                conn.close()
            conn = self._conn = BlockingConnection(
                address[0], address[1], f"txn-markers-{self.sender.broker_id}",
                timeout_s=MARKER_WAIT_S)
        return conn

    def _send(self, batch: list[tuple[_Transaction, list[TP]]]) -> list[set[TP]]:
        """One WriteTxnMarkers for everything in ``batch``: per entry, the partitions that
        got their marker (or whose topic is gone)."""
        conn = self._connection()
        if conn is None:
            return [set() for _ in batch]
        markers = []
        for txn, tps in batch:
            by_topic: dict[str, list[int]] = {}
            for t, p in tps:
                by_topic.setdefault(t, []).append(p)
            markers.append({"producer_id": txn.producer_id,
                            "producer_epoch": txn.producer_epoch,
                            "transaction_result": txn.commit,
                            "coordinator_epoch": txn.coordinator_epoch,
                            "topics": [{"name": t, "partition_indexes": ps}
                                       for t, ps in by_topic.items()]})
        try:
            response = conn.request(ApiKey.WRITE_TXN_MARKERS, MARKER_VERSION,
                                    {"markers": markers})
        except Exception as e:  # a network failure: retried
            log.info("%d marker(s) to broker %d failed (%s); retrying", len(batch),
                     self.broker, e)
            conn.close()
            return [set() for _ in batch]
        answers = list(response.markers)
        out: list[set[TP]] = []
        for i, (txn, _) in enumerate(batch):
            ok: set[TP] = set()
            for t in answers[i].topics if i < len(answers) else ():
                for p in t.partitions:
                    if p.error_code == 0 or (
                            p.error_code == UnknownTopicOrPartition.code
                            and self.sender.leader_of(t.name, p.partition_index) is None):
                        ok.add((t.name, p.partition_index))
                    else:
                        log.info("marker for producer %d on %s-%d refused (error %d); "
                                 "retrying", txn.producer_id, t.name, p.partition_index,
                                 p.error_code)
            out.append(ok)
        return out


class _Later(TimerTask):
    """An action for the timing wheel: markers sent again, a completion written again."""

    __slots__ = ("action",)

    def __init__(self, delay_ms: int, action: Callable[[], None]) -> None:
        super().__init__(delay_ms)
        self.action = action

    def run(self) -> None:
        self.action()


class MarkerSender:
    """The markers of decided transactions, one :class:`_Destination` per leader (see the module).

    Retries after a backoff (a round with partitions left, no leader yet, a completion
    write that failed) go on the shared timing wheel: a :class:`~broker_sim.timer.SystemTimer`
    read on the broker's clock, moved by its :class:`~broker_sim.timer.TimerReaper`, as
    the purgatories' delayed operations, rather than a private heap and thread. Kafka's
    ``TransactionMarkerChannelManager`` has no scheduler of its own either: it puts failed
    markers back on the destination's queue and its send thread's network client backs
    off, and it retries failed log appends on that thread's next poll; here the
    destination threads block on their connection, so the backoff is an explicit delay,
    and a delay belongs to the timer. Due actions run on the timer's one executor thread,
    never on a destination's; after :meth:`shutdown` none runs.
    """

    def __init__(self, broker_id: int, leader_of: Callable[[str, int], int | None],
                 address: Callable[[int], tuple[str, int] | None],
                 clock: Clock = SYSTEM_CLOCK) -> None:
        """``leader_of(topic, partition)``: its leader now, or None if the topic is gone
        (-1: no leader yet); ``address(broker)``: its inter-broker listener."""
        self.broker_id = broker_id
        self.leader_of = leader_of
        self.address = address
        self.stopped = threading.Event()
        self._lock = threading.Lock()
        self._destinations: dict[int, _Destination] = {}
        self._timer = SystemTimer(f"txn-markers-{broker_id}-retries", clock=clock)
        self._reaper = TimerReaper(self._timer, f"txn-markers-{broker_id}-reaper")
        self._reaper.start()

    def send(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
             partitions: set[tuple[str, int]], still_owned: Callable[[], bool],
             done: Callable[[], None]) -> None:
        self._dispatch(_Transaction(producer_id, producer_epoch, commit, coordinator_epoch,
                                    set(partitions), still_owned, done))

    def _dispatch(self, txn: _Transaction) -> None:
        """Queue ``txn``'s remaining markers at their leaders' destinations (one round)."""
        if self.stopped.is_set() or not txn.still_owned():
            return
        by_leader: dict[int, list[TP]] = {}
        with txn.lock:
            for tp in list(txn.remaining):
                leader = self.leader_of(*tp)
                if leader is None:
                    txn.remaining.discard(tp)  # the topic was deleted: nothing to end there
                elif leader >= 0:
                    by_leader.setdefault(leader, []).append(tp)
            finished = not txn.remaining
            txn.outstanding = len(by_leader)
        if finished:
            txn.done()
            return
        if not by_leader:  # no partition has a leader now: look again later
            self._later(lambda: self._dispatch(txn))
            return
        for leader, tps in by_leader.items():
            self._destination(leader).enqueue(txn, tps)

    def answered(self, txn: _Transaction, ok: set[TP]) -> None:
        """A destination's answer for ``txn``: once every destination of the round has
        answered, the transaction is done, or what is left is sent again after a backoff."""
        with txn.lock:
            txn.remaining -= ok
            txn.outstanding -= 1
            if txn.outstanding:
                return
            finished = not txn.remaining
        if finished:
            txn.done()
        else:
            self._later(lambda: self._dispatch(txn))

    def _destination(self, broker: int) -> _Destination:
        with self._lock:
            dest = self._destinations.get(broker)
            if dest is None:
                dest = self._destinations[broker] = _Destination(self, broker)
                dest.start()
            return dest

    def _later(self, action: Callable[[], None], delay_s: float = RETRY_BACKOFF_S) -> None:
        if self.stopped.is_set():
            return
        try:
            self._timer.add(_Later(round(delay_s * 1000), action))
        except RuntimeError:  # shut down meanwhile: the next coordinator resends
            log.debug("marker retry dropped: the sender is shut down")

    def retry_later(self, action: Callable[[], None]) -> None:
        """Run ``action`` after the retry backoff (a failed completion write)."""
        self._later(action, RETRY_BACKOFF_S * 5)

    def shutdown(self) -> None:
        self.stopped.set()
        with self._lock:
            destinations = list(self._destinations.values())
        self._reaper.request_stop()
        self._timer.shutdown(wait=False)
        for dest in destinations:
            dest.request_stop()
