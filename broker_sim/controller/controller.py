"""The controller: broker liveness, replica assignment, leader election, ISR changes.

The active controller serves the cluster (in its own process for a cluster; inside the
broker's process for a single broker). Its whole state is a :class:`ClusterImage`; every
change is a metadata record committed to the controller quorum (:mod:`.metadata_log`,
``DATA_DIR/__cluster_metadata-0/``) before it is published or answered, so a restarted
controller resumes exactly where it was and a standby holds the same image. Only the
quorum's leader is active (once its epoch's first entry has committed, it takes the
committed image and gives every registered broker two session timeouts: a pause or an
election is not a death); a standby refuses heartbeats and changes with NOT_CONTROLLER,
and a change that cannot commit puts the last committed image back and fails.

Liveness: a broker registers with its first heartbeat and keeps heartbeating; each
heartbeat re-arms a session-expiry task on the hierarchical timing wheel (cancel + add,
both O(1)). When a session expires the broker is fenced:

* every partition it led gets a new leader: the first other ISR member that is alive
  (never a replica outside the ISR: no unclean election); with none, the partition goes
  offline (leader -1) keeping its last ISR, and comes back when an ISR member returns;
* it leaves the ISR of every partition it followed (an ISR of one, the leader, remains);
* each change bumps the partition's ``leader_epoch``/``partition_epoch``.

A restarted broker (a new ``incarnation_id``) gets a new broker epoch. If its old
registration is still alive (it came back within its session), the old registration is
fenced first, exactly as if its session had expired, in the same commit: the partitions it
led get new leaders (or, where it was the only in-sync replica, go offline and come back
with it), each with a bumped leader epoch, so the new process never leads in an epoch its
predecessor led in (Kafka fences a re-registration the same way). It rejoins ISRs only when
its leaders ask for it (AlterPartition) after it caught up.

An operator moves leaderships with ElectLeaders (:meth:`Controller.elect_leaders`): back to
each partition's preferred replica (the first of its assignment) once it is in sync again,
or, only when asked by name (``--election-type unclean``), to a live replica outside the ISR
of a partition that has no leader. The controller itself gives leaderships back to their
preferred replicas every ``leader.imbalance.check.interval.seconds`` where a broker's share
of misplaced leaderships exceeds ``leader.imbalance.per.broker.percentage``
(:mod:`.leader_balance`, :meth:`Controller.rebalance_leaders`).

Metadata propagation (pushed, not polled): every commit publishes the image as an
immutable :class:`Published` (version, JSON, live brokers) and tells the listeners
(:meth:`Controller.add_listener`); brokers long-poll for the next version
(BrokerMetadataFetch, parked in :mod:`.propagation`) and acknowledge what they applied in
their next poll or heartbeat (:meth:`Controller.metadata_fetch`). :meth:`propagated` says
whether every live broker has acknowledged a version; admin changes (topics, partitions,
configs, credentials, ACLs, elections) are answered once it holds, or after a timeout
(:mod:`.apis`).

Configs: a topic's configs are its overrides only (``min.insync.replicas`` not set means
pyq's default, see :mod:`.configs`); :meth:`Controller.alter_configs` changes a topic's or a
broker's dynamic configs under the lock, validated against the whole new set, persisted
with the image and returned once every live broker has applied it (or after a timeout).

Threading: one lock (``_lock``, reentrant) guards the image and the acknowledged versions;
methods are called from the controller's request handler threads, from the timer's executor
(session expiry) and, in a single broker, from the broker's own threads. ``published`` and
``_broker_versions`` are replaced (never changed in place) under the lock, so
:meth:`snapshot` and :meth:`propagated` read them without it. Listeners run on the thread
that committed or recorded an acknowledgement, *with the lock held*: they must not take it
(directly or by waiting for a thread that does) and must only read ``published`` and
:meth:`propagated` — the parked requests of :mod:`.propagation` do exactly that, so
completing one under the lock cannot deadlock. ``_applied`` (a condition on the lock) is
notified on every commit and every acknowledgement, for in-process waiters
(:meth:`await_propagation`, :meth:`await_version`).
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..protocol.errors import (
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    InvalidRequest,
    InvalidTopic,
    KafkaError,
    NotController,
    NotLeaderOrFollower,
    TopicAlreadyExists,
    UnknownTopicOrPartition,
)
from ..quorum import MetadataQuorum
from ..timer import SystemTimer, TimerTask
from .admin_changes import AdminChanges
from .configs import (
    DEFAULT_MIN_ISR,
    normalize_topic_configs,
)
from .elections import LeaderElections
from .image import BrokerInfo, ClusterImage, PartitionInfo, TopicInfo
from .leader_balance import KAFKA_DEFAULTS, LeaderBalanceConfig
from .metadata_log import MetadataLog

log = logging.getLogger(__name__)

#: Before the quorum a controller kept its image here; read once into an empty log.
STATE_FILE = "controller-state.json"
#: A lone controller's node id (as the quorum status reports it).
SINGLE_CONTROLLER_ID = 3000

T = TypeVar("T")


@dataclass(frozen=True)
class Published:
    """The image as of one commit: what brokers fetch, read without the controller's lock."""

    version: int
    image_json: str
    #: the live brokers, which must all acknowledge a version for it to be propagated
    alive: frozenset[int]


class _SessionExpiry(TimerTask):
    """A broker's session running out, ``delay_ms`` after its last heartbeat; it tells the
    controller how late it runs (a stalled controller runs it late)."""

    def __init__(self, controller: Controller, broker_id: int, epoch: int, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.controller = controller
        self.broker_id = broker_id
        self.epoch = epoch
        self.due_ms = controller.timer.clock.monotonic_ms() + delay_ms

    def run(self) -> None:
        late_ms = self.controller.timer.clock.monotonic_ms() - self.due_ms
        self.controller.expire_session(self.broker_id, self.epoch, late_ms)


def _round_robin(alive: list[int], start: int, partitions: int, rf: int) -> list[list[int]]:
    """Replica lists for ``partitions`` new partitions: ``rf`` consecutive live brokers each,
    the first partition starting at ``alive[start]``, each next one a broker further."""
    return [[alive[(start + i + j) % len(alive)] for j in range(rf)] for i in range(partitions)]


def _new_partition(replicas: list[int], alive: list[int]) -> PartitionInfo:
    """A new partition: its live replicas in sync (all of them if none is alive), the first
    live one leading (-1: offline until one returns)."""
    return PartitionInfo(list(replicas), [b for b in replicas if b in alive] or list(replicas),
                         next((b for b in replicas if b in alive), -1))


class Controller(LeaderElections, AdminChanges):
    def __init__(self, data_dir: Path, timer: SystemTimer, session_timeout_ms: int = 3000,
                 default_replication_factor: int = 3, default_min_isr: int = DEFAULT_MIN_ISR,
                 leader_balance: LeaderBalanceConfig = KAFKA_DEFAULTS,
                 quorum: MetadataQuorum | None = None, snapshot_every: int = 1000) -> None:
        """``quorum``: this controller's member of the metadata quorum (not started); None
        makes a lone voter in ``data_dir``, which is active when this returns."""
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.timer = timer
        self.session_timeout_ms = session_timeout_ms
        self.default_replication_factor = default_replication_factor
        self.default_min_isr = default_min_isr
        self.leader_balance = leader_balance
        self._lock = threading.RLock()
        #: Notified whenever a broker reports the image version it has applied.
        self._applied = threading.Condition(self._lock)
        self._broker_versions: dict[int, int] = {}
        self._closed = False  # set by close(): waits for propagation give up
        self._sessions: dict[int, _SessionExpiry] = {}
        #: called after every commit and acknowledgement, under the lock (see above)
        self._listeners: list[Callable[[], None]] = []
        self._wakeups = 0  # bumped by wake_fetchers(): in-process long polls return at once
        self.image = ClusterImage()
        self._committed_raw: dict[str, object] = json.loads(self.image.to_json())
        self.published = Published(0, self.image.to_json(), frozenset())
        self._active_epoch = -1  # the quorum epoch this controller is active in
        self._activated = threading.Event()
        lone = quorum is None
        if quorum is None:
            quorum = MetadataQuorum(SINGLE_CONTROLLER_ID, self.data_dir,
                                    {SINGLE_CONTROLLER_ID: ("127.0.0.1", 0)})
        self.metadata = MetadataLog(quorum, self._activate, snapshot_every)
        quorum.start()
        if lone and not self._activated.wait(30):
            raise RuntimeError(f"controller in {self.data_dir}: its lone quorum voter did not "
                               "become active")
        self.schedule_leader_balance()

    # ---- the quorum --------------------------------------------------------------------
    @property
    def is_active(self) -> bool:
        """This controller leads the metadata quorum and holds the committed image."""
        return self._active_epoch >= 0 and self.metadata.quorum.is_active(self._active_epoch)

    def _require_active(self) -> None:
        if not self.is_active:
            leader, epoch = self.metadata.leader
            error = NotController(f"controller {self.metadata.quorum.node_id} is not the active "
                                  f"controller (leader: {leader}, epoch {epoch})")
            error.leader_id = leader  # type: ignore[attr-defined]
            raise error

    def _activate(self, epoch: int) -> None:
        """The quorum made this controller its leader in ``epoch``: take the committed
        image, give every live broker a fresh session, publish (the metadata log's thread)."""
        with self._lock:
            if self._closed or not self.metadata.quorum.is_active(epoch):
                return
            self.image = self.metadata.committed_image()
            self._committed_raw = json.loads(self.image.to_json())
            self._active_epoch = epoch
            for task in self._sessions.values():
                task.cancel()
            self._sessions = {}
            # After a restart or an election every known live broker gets a fresh session,
            # twice the usual: a broker first waits out its call to the old controller (up
            # to half a session) and tries the standbys in turn before it reaches this one.
            # If it is really gone, it expires two timeouts from now.
            for broker_id, info in self.image.brokers.items():
                if info.alive:
                    self._arm_session(broker_id, info.epoch, 2 * self.session_timeout_ms)
            log.info("controller %d active in epoch %d (image v%d)",
                     self.metadata.quorum.node_id, epoch, self.image.version)
            legacy = self.data_dir / STATE_FILE
            if self.image.version == 0 and legacy.exists():
                self.image = ClusterImage.from_json(legacy.read_text())
                self._commit()
                log.info("controller: %s read into the metadata log (image v%d)", legacy,
                         self.image.version)
            self.published = Published(self.image.version, self.image.to_json(),
                                       frozenset(self.image.alive_brokers()))
            self._changed()
        self._activated.set()

    # ---- persistence -----------------------------------------------------------------
    def _commit(self) -> None:
        """Bump the version, commit the change to the quorum as one record (lock held), and
        publish. If it does not commit, the last committed image is put back and the error
        (NotController, RequestTimedOut) raised."""
        self.image.version += 1
        record, raw = self.image.record(self._committed_raw)
        try:
            self.metadata.commit(record, self._active_epoch)
        except KafkaError:
            self.image = ClusterImage.from_json(json.dumps(self._committed_raw))
            if self._active_epoch >= 0:  # the record may still commit: start over from the log
                epoch, self._active_epoch = self._active_epoch, -1
                self.metadata.resync_later(epoch)
            raise
        self._committed_raw = raw
        text = self.image.to_json()
        self.published = Published(self.image.version, text, frozenset(self.image.alive_brokers()))
        self._changed()

    def _changed(self) -> None:
        """Wake in-process waiters and tell the listeners (lock held)."""
        self._applied.notify_all()
        for listener in self._listeners:
            try:
                listener()
            except Exception:
                log.exception("controller: a change listener failed")

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` after every commit and every acknowledged version, with the
        lock held (it must not take the lock; see the class docstring)."""
        with self._lock:
            self._listeners.append(listener)

    @property
    def version(self) -> int:
        """The version of the latest committed image."""
        return self.published.version

    def snapshot(self, known_version: int = -1) -> tuple[int, str | None]:
        """The current version, with the image's JSON unless the caller knows that version
        already. Lock-free."""
        published = self.published
        if known_version == published.version:
            return published.version, None
        return published.version, published.image_json

    # ---- propagation -----------------------------------------------------------------
    def _record_applied(self, broker_id: int, version: int, reset: bool = False) -> None:
        """Broker ``broker_id`` has applied image ``version`` (lock held). Acknowledgements
        only move forward (a heartbeat sent before a poll may arrive after it), except for
        a new registration (``reset``), whose process starts from nothing."""
        current = self._broker_versions.get(broker_id, -1)
        if not reset and version <= current:
            return
        versions = dict(self._broker_versions)
        versions[broker_id] = version
        self._broker_versions = versions
        self._changed()

    def applied_versions(self) -> dict[int, int]:
        """Each broker's last acknowledged image version (do not change it). Lock-free."""
        return self._broker_versions

    def metadata_fetch(self, broker_id: int, broker_epoch: int, applied_version: int) -> None:
        """A broker's metadata poll arrived: it has applied ``applied_version``. Counted only
        from the broker's current registration (a fenced one's word is worth nothing)."""
        with self._lock:
            info = self.image.brokers.get(broker_id)
            if info is not None and info.alive and info.epoch == broker_epoch:
                self._record_applied(broker_id, applied_version)

    def propagated(self, version: int) -> bool:
        """Every live broker has acknowledged image ``version`` (or a later one). Lock-free."""
        versions = self._broker_versions
        return all(versions.get(b, -1) >= version for b in self.published.alive)

    def await_version(self, known_version: int, timeout_s: float) -> tuple[int, str | None]:
        """In-process long poll: wait (at most ``timeout_s``) until the image version is no
        longer ``known_version`` or :meth:`wake_fetchers` is called; then :meth:`snapshot`."""
        with self._lock:
            wakeups = self._wakeups
            self._applied.wait_for(lambda: self.published.version != known_version
                                   or self._wakeups != wakeups, timeout_s)
        return self.snapshot(known_version)

    def wake_fetchers(self) -> None:
        """Make every in-process :meth:`await_version` return now (a broker stopping)."""
        with self._lock:
            self._wakeups += 1
            self._applied.notify_all()

    # ---- liveness --------------------------------------------------------------------
    def _arm_session(self, broker_id: int, epoch: int, delay_ms: int | None = None) -> None:
        old = self._sessions.get(broker_id)
        if old is not None:
            old.cancel()
        task = _SessionExpiry(self, broker_id, epoch,
                              self.session_timeout_ms if delay_ms is None else delay_ms)
        self._sessions[broker_id] = task
        self.timer.add(task)

    def heartbeat(self, broker_id: int, host: str, port: int, incarnation: str,
                  endpoints: dict[str, list[object]] | None = None, applied_version: int = -1) -> int:
        """Register or refresh a broker; returns its broker epoch. ``endpoints`` maps each
        listener name to its [host, port] (``host:port`` is the inter-broker listener);
        ``applied_version`` is the image version the broker has applied. NotController
        on a standby."""
        with self._lock:
            self._require_active()
            info = self.image.brokers.get(broker_id)
            if info is not None and info.incarnation == incarnation and info.alive:
                self._record_applied(broker_id, applied_version)
            else:
                self._record_applied(broker_id, applied_version, reset=True)
                if info is not None and info.alive:
                    log.warning("broker %d registered again (new incarnation) within its session: "
                                "fencing its previous registration (epoch %d)", broker_id, info.epoch)
                    self._fence(broker_id)
                epoch = self.image.next_broker_epoch
                self.image.next_broker_epoch += 1
                info = BrokerInfo(host, port, epoch, incarnation, True, dict(endpoints or {}))
                self.image.brokers[broker_id] = info
                log.info("broker %d registered at %s:%d (epoch %d)", broker_id, host, port, epoch)
                self._elect_offline_partitions()
                self._commit()
            self._arm_session(broker_id, info.epoch)
            return info.epoch

    def expire_session(self, broker_id: int, epoch: int, late_ms: int = 0) -> None:
        """Fence ``broker_id`` (of broker epoch ``epoch``): its session ran out ``late_ms``
        after it was due. Later than half a session means this controller itself was
        stalled (paused, starved): the broker's heartbeats may be waiting unread, so it gets
        a fresh session, as after an election, instead of being fenced on silence this
        controller could not have heard; a stalled controller that has lost its leadership
        meanwhile learns it from the quorum and steps down. A fence that does not commit
        (no longer active) changes nothing."""
        with self._lock:
            info = self.image.brokers.get(broker_id)
            if info is None or info.epoch != epoch or not info.alive or not self.is_active:
                return
            if late_ms > self.session_timeout_ms // 2:
                log.info("broker %d: its session ran out %d ms late, this controller was "
                         "stalled: a fresh session instead of fencing it", broker_id, late_ms)
                self._arm_session(broker_id, epoch, 2 * self.session_timeout_ms)
                return
            log.warning("broker %d session expired: fencing it and moving its leaderships", broker_id)
            self._fence(broker_id)
            try:
                self._commit()
            except KafkaError as e:
                log.info("broker %d: its fence did not commit (%s): nothing changed", broker_id, e)

    def _fence(self, broker_id: int) -> None:
        """Mark ``broker_id`` dead, move its leaderships and take it out of ISRs (lock held;
        the caller commits)."""
        info = self.image.brokers[broker_id]
        info.alive = False
        session = self._sessions.pop(broker_id, None)
        if session is not None:
            session.cancel()
        for name, topic in self.image.topics.items():
            for index, p in enumerate(topic.partitions):
                if broker_id not in p.isr and p.leader != broker_id:
                    continue
                if p.leader == broker_id:
                    self._elect(name, index, p, exclude=broker_id)
                elif len(p.isr) > 1:
                    p.isr = [b for b in p.isr if b != broker_id]
                    p.partition_epoch += 1

    # ---- topics ----------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, str], assignments: dict[int, list[int]] | None = None,
                     validate_only: bool = False) -> TopicInfo:
        from ..log.log_manager import validate_topic_name
        try:
            validate_topic_name(name)
        except (ValueError, KafkaError) as e:
            raise InvalidTopic(str(e)) from e
        with self._lock:
            if name in self.image.topics:
                raise TopicAlreadyExists(f"topic {name!r} already exists")
            alive = self.image.alive_brokers()
            if assignments:
                if sorted(assignments) != list(range(len(assignments))):
                    raise InvalidReplicaAssignment("partition indexes must be 0..n-1")
                replica_sets = [assignments[i] for i in range(len(assignments))]
                for replicas in replica_sets:
                    self._check_replicas(replicas)
            else:
                if partitions == -1:
                    partitions = 1
                if partitions < 1:
                    raise InvalidPartitions(f"number of partitions must be at least 1, got {partitions}")
                if replication_factor == -1:
                    replication_factor = max(1, min(self.default_replication_factor, len(alive)))
                if replication_factor < 1 or replication_factor > len(alive):
                    raise InvalidReplicationFactor(
                        f"replication factor {replication_factor} is not between 1 and the number of "
                        f"live brokers ({len(alive)})")
                replica_sets = _round_robin(alive, sum(name.encode()) % len(alive), partitions,
                                            replication_factor)
            configs = normalize_topic_configs(configs)
            if "min.insync.replicas" not in configs and self.default_min_isr != DEFAULT_MIN_ISR:
                rf = min(len(r) for r in replica_sets)
                configs["min.insync.replicas"] = str(max(1, min(self.default_min_isr, rf)))
            topic = TopicInfo(str(uuid.uuid4()), configs,
                              [_new_partition(r, alive) for r in replica_sets])
            if not validate_only:
                self.image.topics[name] = topic
                self._commit()
                log.info("created topic %s: %s", name, [(p.replicas, p.leader) for p in topic.partitions])
            return topic

    def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None = None,
                          validate_only: bool = False) -> TopicInfo:
        """Grow topic ``name`` to ``count`` partitions (Kafka never shrinks a topic).

        New partitions get the replication factor of partition 0, placed round robin over
        the live brokers after the last partition's first replica, unless ``assignments``
        gives one replica list per new partition. Existing partitions are untouched.
        """
        with self._lock:
            topic = self.image.topics.get(name)
            if topic is None:
                raise UnknownTopicOrPartition(f"topic {name!r} does not exist")
            current = len(topic.partitions)
            if count <= current:
                raise InvalidPartitions(f"topic {name!r} has {current} partitions; the new count "
                                        f"must be higher, got {count}")
            alive = self.image.alive_brokers()
            if assignments is not None:
                if len(assignments) != count - current:
                    raise InvalidReplicaAssignment(
                        f"{len(assignments)} replica lists given for {count - current} new partitions")
                for replicas in assignments:
                    if not replicas:
                        raise InvalidReplicaAssignment(f"invalid replica list {replicas}")
                    self._check_replicas(replicas)
                replica_sets = [list(r) for r in assignments]
            else:
                rf = len(topic.partitions[0].replicas)
                if rf > len(alive):
                    raise InvalidReplicationFactor(
                        f"topic {name!r} has replication factor {rf} but only {len(alive)} "
                        "live brokers")
                last = topic.partitions[-1].replicas[0]
                start = (alive.index(last) + 1) if last in alive else 0
                replica_sets = _round_robin(alive, start, count - current, rf)
            added = [_new_partition(r, alive) for r in replica_sets]
            if not validate_only:
                topic.partitions.extend(added)
                self._commit()
                log.info("topic %s: %d -> %d partitions: %s", name, current, count,
                         [(p.replicas, p.leader) for p in added])
            return topic

    def _check_replicas(self, replicas: list[int]) -> None:
        """An assigned replica list names known brokers, each once."""
        if len(set(replicas)) != len(replicas) or not set(replicas) <= set(self.image.brokers):
            raise InvalidReplicaAssignment(f"invalid replica list {replicas}")

    def delete_topic(self, name: str) -> None:
        with self._lock:
            if self.image.topics.pop(name, None) is None:
                raise UnknownTopicOrPartition(f"topic {name!r} does not exist")
            self._commit()
            log.info("deleted topic %s", name)

    def await_propagation(self, version: int, timeout_s: float) -> bool:
        """Wait until every live broker has applied image ``version`` (each reports it in its
        next metadata poll or heartbeat); False if one has not within ``timeout_s``."""
        with self._lock:
            def caught_up() -> bool:
                return all(self._broker_versions.get(b, -1) >= version
                           for b in self.image.alive_brokers())
            return self._applied.wait_for(lambda: self._closed or caught_up(), timeout_s) \
                and not self._closed

    def read_image(self, read: Callable[[ClusterImage], T]) -> T:
        """``read(image)`` under the image's lock (for metrics: look, never change). On a
        standby: the committed image, which follows the active controller's."""
        with self._lock:
            return read(self.image if self.is_active else self.metadata.committed_image())

    def close(self) -> None:
        """Shutting down: requests waiting for propagation return now (not yet propagated),
        so the handler threads can stop at once."""
        with self._lock:
            self._closed = True
            self._applied.notify_all()
        self.metadata.close()

    # ---- ISR changes -----------------------------------------------------------------
    def alter_partition(self, broker_id: int, broker_epoch: int, topic: str, index: int,
                        leader_epoch: int, partition_epoch: int, new_isr: list[int]) -> PartitionInfo:
        with self._lock:
            t = self.image.topics.get(topic)
            if t is None or not 0 <= index < len(t.partitions):
                raise UnknownTopicOrPartition(f"{topic}-{index} does not exist")
            p = t.partitions[index]
            info = self.image.brokers.get(broker_id)
            if info is None or info.epoch != broker_epoch or p.leader != broker_id \
                    or p.leader_epoch != leader_epoch:
                raise NotLeaderOrFollower(f"broker {broker_id} is not the leader of {topic}-{index} "
                                          f"in epoch {leader_epoch}")
            if p.partition_epoch != partition_epoch:
                raise InvalidRequest(f"{topic}-{index}: stale partition epoch {partition_epoch}")
            alive = set(self.image.alive_brokers())
            if broker_id not in new_isr or not set(new_isr) <= set(p.replicas):
                raise InvalidRequest(f"{topic}-{index}: invalid ISR {new_isr}")
            added = set(new_isr) - set(p.isr)
            if added - alive:
                raise InvalidRequest(f"{topic}-{index}: brokers {sorted(added - alive)} are not alive")
            if sorted(new_isr) != sorted(p.isr):
                log.info("%s-%d: isr %s -> %s", topic, index, p.isr, new_isr)
                p.isr = [b for b in p.replicas if b in new_isr]
                p.partition_epoch += 1
                self._commit()
            return p
