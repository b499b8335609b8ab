"""Followers replicate by fetching from their leaders, one fetcher thread per leader.

A :class:`ReplicaFetcherThread` owns a connection to one leader broker and the set of
partitions this broker follows there. Each partition first goes through *truncation*
(KIP-101): the follower asks the leader (OffsetForLeaderEpoch) where the follower's latest
leader epoch ends on the leader, and truncates its own log there, so records that a dead
leader appended but never replicated are discarded before anything new is appended.
Then the thread loops on Fetch requests carrying this broker's id as ``replica_id``
(long-polling ``max_wait_ms`` at the leader), appends what comes back as a follower, and
takes the leader's high watermark and, as Kafka's followers do, its log start offset
(``max(own, leader's)``, capped at the follower's high watermark: DeleteRecords reaches
the followers this way, and they report theirs back in their next fetch).
OFFSET_OUT_OF_RANGE resets the follower to the leader's log range; NOT_LEADER_OR_FOLLOWER
and friends park the partition briefly, then it truncates and
fetches again (the leader may simply not have applied the newest image yet): 10 ms at first,
doubling with each further error up to 500 ms, and a long-polling fetch never outlasts a
parked partition's retry. A partition added while a fetch is parked at the leader aborts
that fetch (the connection is re-opened at once), so a new partition or a new leader is
fetched within milliseconds rather than after the leader's ``max_wait_ms``.

Threading: the manager's map is guarded by its lock; each thread's partition set by the
thread's own lock; only the thread touches its connection.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..common import SYSTEM_CLOCK, Clock, ShutdownableThread
from ..network.blocking_client import BlockingConnection
from ..protocol.api import ApiKey
from ..protocol.errors import KafkaError, NetworkException, OffsetOutOfRange, error_for_code
from ..protocol.messages.fetch import PartitionDataView
from .fetch_session import FetchSessionBuilder
from .partition import Partition

log = logging.getLogger(__name__)

FETCH_VERSION = 11
EPOCH_VERSION = 3
LIST_OFFSETS_VERSION = 5
MIN_BACKOFF_MS = 10
MAX_BACKOFF_MS = 500


@dataclass
class _Fetching:
    partition: Partition
    leader_epoch: int
    truncated: bool = False
    retry_at_ms: int = 0  # monotonic: parked after an error until then
    errors: int = 0  # consecutive errors, for the backoff

    def park(self, now_ms: int) -> None:
        """Back off after an error (10 ms, doubling up to 500 ms); truncate again afterwards
        (leadership may have moved)."""
        self.truncated = False
        self.retry_at_ms = now_ms + min(MAX_BACKOFF_MS, MIN_BACKOFF_MS << min(self.errors, 16))
        self.errors += 1


class ReplicaFetcherThread(ShutdownableThread):
    """Fetches, for this broker, every partition it follows on one leader.

    Each round truncates newly added partitions, then sends one long-polling Fetch; when
    nothing is fetchable it waits up to 200 ms or until :meth:`wake` (a partition added).
    A network error drops the connection (re-opened next round); :meth:`on_stopped`
    closes it for good. ``stop()`` shuts the connection down, so a long-polling fetch in
    flight ends at once instead of after ``max_wait_ms``.
    """

    def __init__(self, broker_id: int, leader_id: int, address: Callable[[int], tuple[str, int] | None],
                 on_append: Callable[[Partition], None], max_wait_ms: int = 500,
                 fetch_max_bytes: int = 16 * 1024 * 1024, partition_max_bytes: int = 4 * 1024 * 1024,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        super().__init__(f"replica-fetcher-{broker_id}-from-{leader_id}")
        self.clock = clock
        self.broker_id = broker_id
        self.leader_id = leader_id
        self.address = address
        self.on_append = on_append
        self.max_wait_ms = max_wait_ms
        self.fetch_max_bytes = fetch_max_bytes
        self.partition_max_bytes = partition_max_bytes
        self._parts: dict[tuple[str, int], _Fetching] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._conn: BlockingConnection | None = None
        self._session = FetchSessionBuilder()  # only this thread uses it
        #: Under ``_lock``: a round took its partition set and may be waiting at the leader;
        #: an add() meanwhile aborts it (``_interrupted``) so the new partition is not
        #: held up for ``max_wait_ms``.
        self._polling = False
        self._interrupted = False
        self._next_retry_ms: int | None = None  # earliest retry of a parked partition

    # ---- partition set (any thread) ------------------------------------------------------
    def add(self, partition: Partition, leader_epoch: int) -> None:
        with self._lock:
            self._parts[(partition.topic, partition.index)] = _Fetching(partition, leader_epoch)
            interrupt = self._polling and not self._interrupted
            if interrupt:
                self._interrupted = True
            # Read under the lock: while _polling, _conn is that round's socket (a later
            # round's must not be aborted by a late add()).
            conn = self._conn if interrupt else None
        if conn is not None:
            conn.abort()
        self.wake()

    def remove(self, key: tuple[str, int]) -> None:
        with self._lock:
            self._parts.pop(key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._parts)

    def wake(self) -> None:
        self._wake.set()
        conn = self._conn
        if conn is not None and self.stopping.is_set():
            conn.abort()  # stopping: do not wait out a long-polling fetch

    # ---- the thread ----------------------------------------------------------------------
    def run_once(self) -> None:
        try:
            if not self.fetch_once():
                self._wake.wait(self._idle_wait_s())
                self._wake.clear()
        except NetworkException as e:
            with self._lock:
                interrupted, self._interrupted = self._interrupted, False
            self._close()
            if not interrupted:
                log.info("%s: %s; retrying", self.name, e)
                self.stopping.wait(0.2)
        except Exception:
            log.exception("%s: unexpected error", self.name)
            self._close()
            self.stopping.wait(0.5)
        finally:
            with self._lock:
                self._polling = False

    def on_stopped(self) -> None:
        self._close()

    def _connection(self) -> BlockingConnection:
        if self._conn is None:
            addr = self.address(self.leader_id)
            if addr is None:
                raise NetworkException(f"no address known for broker {self.leader_id}")
            self._conn = BlockingConnection(addr[0], addr[1], f"replica-{self.broker_id}",
                                            timeout_s=10 + self.max_wait_ms / 1000)
        return self._conn

    def _close(self) -> None:
        self._session.reset()  # a response may have been lost: its epoch is unknown
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _idle_wait_s(self) -> float:
        """How long an idle round waits: 200 ms, or until a parked partition's retry."""
        retry = self._next_retry_ms
        if retry is None:
            return 0.2
        return max(0.0, min(0.2, (retry - self.clock.monotonic_ms()) / 1000))

    def _max_wait_ms(self) -> int:
        """The fetch's long-poll limit: ``max_wait_ms``, but not past a parked retry."""
        retry = self._next_retry_ms
        if retry is None:
            return self.max_wait_ms
        return max(0, min(self.max_wait_ms, retry - self.clock.monotonic_ms()))

    def fetch_once(self) -> bool:
        """Truncate new partitions, then one fetch. False when nothing was fetchable."""
        now = self.clock.monotonic_ms()
        with self._lock:
            has_parts = bool(self._parts)
            aborted, self._interrupted = self._interrupted, False
        if aborted:
            self._close()  # an add() shut the socket down just as the last round ended
        if has_parts:
            self._connection()  # before _polling: an add() from now on aborts this socket
        with self._lock:
            parts = {k: f for k, f in self._parts.items() if f.retry_at_ms <= now}
            self._next_retry_ms = min((f.retry_at_ms for f in self._parts.values()
                                       if f.retry_at_ms > now), default=None)
            self._polling = bool(parts)
        if not parts:
            return False
        for key, f in parts.items():
            if not f.truncated:
                self._truncate(key, f)
        ready = {k: f for k, f in parts.items() if f.truncated}
        if not ready:
            return False
        self._fetch(ready)
        return True

    def _truncate(self, key: tuple[str, int], f: _Fetching) -> None:
        p = f.partition
        latest = p.log.epochs.latest_epoch
        if latest < 0:
            target = p.high_watermark  # no epoch information: keep what is known committed
        else:
            resp = self._connection().request(ApiKey.OFFSET_FOR_LEADER_EPOCH, EPOCH_VERSION, {
                "replica_id": self.broker_id, "topics": [{"topic": key[0], "partitions": [
                    {"partition": key[1], "current_leader_epoch": f.leader_epoch, "leader_epoch": latest}]}]})
            r = resp.topics[0].partitions[0]
            if r.error_code:
                log.info("%s-%d: leader answered %s to OffsetForLeaderEpoch; retrying",
                         key[0], key[1], error_for_code(r.error_code).__name__)
                f.park(self.clock.monotonic_ms())
                return
            f.errors = 0
            if r.end_offset < 0:
                target = p.high_watermark
            else:
                target = r.end_offset
                if r.leader_epoch < latest:
                    # The leader does not know our latest epoch: we diverged at the end of
                    # the newest epoch we share.
                    target = min(target, p.log.epochs.end_offset_for(r.leader_epoch, p.log_end_offset)[1])
        if target < p.log_end_offset:
            log.info("%s-%d: truncating follower log from %d to %d (leader epoch %d)",
                     key[0], key[1], p.log_end_offset, target, f.leader_epoch)
            p.log.truncate_to(max(target, 0))
        f.truncated = True

    def _fetch(self, parts: dict[tuple[str, int], _Fetching]) -> None:
        """One Fetch of ``parts`` in this thread's incremental fetch session (see
        :mod:`.fetch_session`): only partitions whose fetch state changed are named, and
        only partitions with news come back."""
        wanted = {key: (f.partition.log_end_offset, f.partition.log_start_offset, f.leader_epoch,
                        self.partition_max_bytes) for key, f in parts.items()}
        session_id, epoch, named, forgotten = self._session.request(wanted)
        topics: dict[str, list[dict]] = {}
        for key in named:
            fetch_offset, log_start, leader_epoch, max_bytes = wanted[key]
            topics.setdefault(key[0], []).append({
                "partition": key[1], "current_leader_epoch": leader_epoch,
                "fetch_offset": fetch_offset, "log_start_offset": log_start,
                "partition_max_bytes": max_bytes})
        dropped: dict[str, list[int]] = {}
        for topic, index in forgotten:
            dropped.setdefault(topic, []).append(index)
        body = {"replica_id": self.broker_id, "max_wait_ms": self._max_wait_ms(), "min_bytes": 1,
                "max_bytes": self.fetch_max_bytes, "isolation_level": 0, "session_id": session_id,
                "session_epoch": epoch, "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
                "forgotten_topics_data": [{"topic": t, "partitions": ps} for t, ps in dropped.items()],
                "rack_id": ""}
        resp = self._connection().request(ApiKey.FETCH, FETCH_VERSION, body)
        self._session.response(resp.error_code, resp.session_id)
        if resp.error_code:
            log.info("%s: fetch session %d answered %s; fetching in full again", self.name,
                     session_id, error_for_code(resp.error_code).__name__)
            return
        for t in resp.responses:
            for r in t.partitions:
                key = (t.topic, r.partition_index)
                fetching = parts.get(key)
                if fetching is None:
                    continue
                with self._lock:
                    if self._parts.get(key) is not fetching:
                        continue  # removed or re-added meanwhile
                self._handle_partition(key, fetching, r)

    def _handle_partition(self, key: tuple[str, int], f: _Fetching, r: PartitionDataView) -> None:
        p = f.partition
        if r.error_code == OffsetOutOfRange.code:
            self._reset_out_of_range(key, f)
            return
        if r.error_code:
            log.info("%s-%d: fetch from leader %d answered %s; retrying", key[0], key[1],
                     self.leader_id, error_for_code(r.error_code).__name__)
            f.park(self.clock.monotonic_ms())
            return
        f.errors = 0
        records = r.records
        if records is not None and len(records):
            try:
                # A view into the response frame, which was received straight into its own
                # buffer: the bytes reach the segment file with no copy in Python.
                p.log.append_as_follower(records)
            except KafkaError as e:
                log.warning("%s-%d: follower append failed (%s); re-truncating", key[0], key[1], e)
                f.truncated = False
                return
            self.on_append(p)
        p.log.high_watermark = min(r.high_watermark, p.log_end_offset)
        leader_start = min(r.log_start_offset, p.log.high_watermark)
        if leader_start > p.log_start_offset:
            p.log.delete_records_before(leader_start)

    def _reset_out_of_range(self, key: tuple[str, int], f: _Fetching) -> None:
        p = f.partition
        offsets = {}
        for ts in (-2, -1):
            resp = self._connection().request(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, {
                "replica_id": self.broker_id, "isolation_level": 0, "topics": [{"name": key[0], "partitions": [
                    {"partition_index": key[1], "current_leader_epoch": f.leader_epoch, "timestamp": ts}]}]})
            offsets[ts] = resp.topics[0].partitions[0].offset
        earliest, leader_end = offsets[-2], offsets[-1]
        if p.log_end_offset > leader_end >= 0:
            log.warning("%s-%d: follower LEO %d is past the leader's %d; truncating", key[0], key[1],
                        p.log_end_offset, leader_end)
            p.log.truncate_to(leader_end)
        elif p.log_end_offset < earliest:
            log.warning("%s-%d: follower LEO %d is below the leader's log start %d; restarting there",
                        key[0], key[1], p.log_end_offset, earliest)
            p.log.truncate_fully_and_start_at(earliest)


class ReplicaFetcherManager:
    def __init__(self, broker_id: int, address: Callable[[int], tuple[str, int] | None],
                 on_append: Callable[[Partition], None], clock: Clock = SYSTEM_CLOCK) -> None:
        self.broker_id = broker_id
        self.clock = clock
        self.address = address
        self.on_append = on_append
        self._threads: dict[int, ReplicaFetcherThread] = {}
        self._where: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()

    def follow(self, partition: Partition, leader_id: int, leader_epoch: int) -> None:
        key = (partition.topic, partition.index)
        with self._lock:
            self._remove_locked(key)
            thread = self._threads.get(leader_id)
            if thread is None or not thread.is_alive():
                thread = ReplicaFetcherThread(self.broker_id, leader_id, self.address, self.on_append,
                                              clock=self.clock)
                self._threads[leader_id] = thread
                thread.start()
            thread.add(partition, leader_epoch)
            self._where[key] = leader_id

    def unfollow(self, key: tuple[str, int]) -> None:
        with self._lock:
            self._remove_locked(key)

    def _remove_locked(self, key: tuple[str, int]) -> None:
        leader = self._where.pop(key, None)
        if leader is not None and leader in self._threads:
            self._threads[leader].remove(key)

    def shutdown(self) -> None:
        with self._lock:
            threads = list(self._threads.values())
            self._threads.clear()
        for t in threads:
            t.request_stop()
        for t in threads:
            t.stop()
