"""A coordinator's state kept in the partitions of an internal topic this broker leads.

Both coordinators work this way (the group coordinator on ``__consumer_offsets``, the
transaction coordinator on ``__transaction_state``): a key (group id, transactional id)
hashes to a partition (:func:`~broker_sim.coordinator.placement.partition_for`); the leader
of that partition owns the key. :class:`PartitionedStore` follows leadership and holds the
entities of the partitions it leads; every change is written to the owning partition
through the replica manager with acks=all and flushed on the leader before the caller is
told, so what was acknowledged survives the leader's crash and the next leader reads it
back. The flush (fsync) starts on the store's flusher thread as soon as the leader has
appended, so it overlaps the wait for the followers instead of following it.

When this broker becomes leader of a partition the partition is LOADING: its log is read
from start to end on the loader thread (a subclass replays the records: latest per key
wins, a null value deletes), each entity is handed to ``on_loaded``, and until both are
done requests for its keys get COORDINATOR_LOAD_IN_PROGRESS. When it stops leading the
partition its entities are unloaded (``on_unloaded``) and requests get NOT_COORDINATOR.

Threading: ``_lock`` guards the partition states and the entity map; an entity's own state
is guarded by its own lock. Loads run on one loader thread and flushes on one flusher
thread; appends complete on whatever thread completes the produce (a handler, a
follower's fetch, the purgatory's timer), once their flush is done.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from ..common import SYSTEM_CLOCK, Clock
from ..protocol.errors import (
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    KafkaError,
    KafkaStorageError,
    MessageTooLarge,
    NotCoordinator,
    NotEnoughReplicas,
    NotEnoughReplicasAfterAppend,
    NotLeaderOrFollower,
    RecordListTooLarge,
    RequestTimedOut,
    UnknownServerError,
    UnknownTopicOrPartition,
)
from ..protocol.records.batch_header import iter_batches
from ..protocol.records.builder import RecordBatchBuilder
from ..protocol.records.control import marker_type
from ..protocol.records.reader import decode_records
from .placement import partition_for

log = logging.getLogger(__name__)

#: (key, value) of one record; a None value is a tombstone.
Record = tuple[bytes, bytes | None]
E = TypeVar("E")


@dataclass(frozen=True)
class LoadedRecord:
    """One record read back while loading, with what its batch said: written inside
    ``producer_id``'s transaction, or — ``marker`` COMMIT/ABORT, no key — the marker that
    ended one."""

    key: bytes | None
    value: bytes | None
    producer_id: int = -1
    transactional: bool = False
    marker: int | None = None


class Appender(Protocol):
    """What the store needs from the replica manager."""

    def append(self, acks: int, timeout_ms: int, entries: list, respond: Callable) -> None: ...

    def partition(self, topic: str, index: int): ...  # a server Partition


class PartitionState(enum.Enum):
    LOADING = "loading"
    LOADED = "loaded"


def coordinator_error(e: KafkaError | None) -> KafkaError | None:
    """The error a coordinator request reports for a failed write (Kafka's mapping)."""
    if e is None:
        return None
    if isinstance(e, (UnknownTopicOrPartition, NotEnoughReplicas, NotEnoughReplicasAfterAppend,
                      RequestTimedOut)):
        return CoordinatorNotAvailable(str(e))
    if isinstance(e, (NotLeaderOrFollower, KafkaStorageError)):
        return NotCoordinator(str(e))
    if isinstance(e, (MessageTooLarge, RecordListTooLarge)):
        return UnknownServerError(str(e))
    return e


class PartitionedStore(Generic[E]):
    """Subclasses name the topic and the entity, and turn a partition's records into
    entities (:meth:`_read_entities`)."""

    #: what the keys are, for messages ("group", "transactional id").
    kind = "key"

    def __init__(self, topic: str, default_partitions: int, write_timeout_ms: int,
                 load_buffer_size: int, replicas: Appender, clock: Clock = SYSTEM_CLOCK) -> None:
        self.topic = topic
        self.default_partitions = default_partitions
        self.write_timeout_ms = write_timeout_ms
        self.load_buffer_size = load_buffer_size
        self.replicas = replicas
        self.clock = clock
        self._lock = threading.Lock()
        self._partitions: dict[int, tuple[int, PartitionState]] = {}  # index -> (epoch, state)
        self._num_partitions = 0
        self._entities: dict[str, E] = {}
        self._loader = ThreadPoolExecutor(1, thread_name_prefix=f"{topic.strip('_')}-loader")
        self._flusher = ThreadPoolExecutor(1, thread_name_prefix=f"{topic.strip('_')}-flusher")
        self._shutdown = False
        self.on_loaded: Callable[[E], None] = lambda e: None
        self.on_unloaded: Callable[[E], None] = lambda e: None

    # ---- what subclasses provide ----------------------------------------------------------
    def _new(self, key: str) -> E:
        raise NotImplementedError

    def _key_of(self, entity: E) -> str:
        raise NotImplementedError

    def _read_entities(self, records: Iterator[LoadedRecord]) -> list[E]:
        """The entities a partition's records (oldest first) leave behind."""
        raise NotImplementedError

    def _before_load(self, p: int, partition: Any) -> None:
        """Called on the loader thread before partition ``p`` is read (e.g. a migration)."""

    # ---- ownership ----------------------------------------------------------------------
    def partition_of(self, key: str) -> int:
        return partition_for(key, self._num_partitions or self.default_partitions)

    def ownership_error(self, key: str) -> KafkaError | None:
        """None if this broker owns ``key`` now, else the error to answer."""
        with self._lock:
            if self._shutdown or not self._num_partitions:
                return CoordinatorNotAvailable(f"the coordinator of {self.topic} is not available")
            p = partition_for(key, self._num_partitions)
            owned = self._partitions.get(p)
        if owned is None:
            return NotCoordinator(f"this broker does not coordinate {self.kind} {key!r} "
                                  f"({self.topic}-{p})")
        if owned[1] is PartitionState.LOADING:
            return CoordinatorLoadInProgress(f"{self.topic}-{p} is loading")
        return None

    def epoch_of(self, key: str) -> int:
        """The leader epoch of ``key``'s partition here (-1 if not led): a coordinator's
        epoch, carried on what it sends so that a stale coordinator can be told apart."""
        with self._lock:
            owned = self._partitions.get(partition_for(key, self._num_partitions or 1))
        return -1 if owned is None else owned[0]

    def any_loading(self) -> bool:
        with self._lock:
            return any(s is PartitionState.LOADING for _, s in self._partitions.values())

    def set_leadership(self, num_partitions: int, led: dict[int, int]) -> None:
        """The partitions of the topic this broker leads now (index -> leader epoch)."""
        to_load, to_unload = [], []
        with self._lock:
            if self._shutdown:
                return
            self._num_partitions = num_partitions
            for p, (epoch, _) in list(self._partitions.items()):
                if led.get(p) != epoch:
                    del self._partitions[p]
                    to_unload.append(p)
            for p, epoch in led.items():
                if p not in self._partitions:
                    self._partitions[p] = (epoch, PartitionState.LOADING)
                    to_load.append((p, epoch))
        for p in to_unload:
            self._unload(p)
        for p, epoch in to_load:
            self._loader.submit(self._load, p, epoch)

    # ---- entities -----------------------------------------------------------------------
    def get(self, key: str) -> E | None:
        with self._lock:
            return self._entities.get(key)

    def get_or_create(self, key: str, init: Callable[[E], None] | None = None) -> E:
        """The entity of ``key``, created if there is none (``init`` sees a new one before
        anyone else can)."""
        with self._lock:
            entity = self._entities.get(key)
            if entity is None:
                entity = self._new(key)
                if init is not None:
                    init(entity)
                self._entities[key] = entity
            return entity

    def remove(self, entity: E) -> None:
        with self._lock:
            key = self._key_of(entity)
            if self._entities.get(key) is entity:
                del self._entities[key]

    def entities(self) -> list[E]:
        with self._lock:
            return list(self._entities.values())

    # ---- writes -------------------------------------------------------------------------
    def append(self, key: str, recs: list[Record],
               callback: Callable[[KafkaError | None], None],
               transaction: tuple[int, int] | None = None) -> None:
        """Write ``recs`` to ``key``'s partition (acks=all); ``callback(error)`` after.
        ``transaction=(producer id, epoch)`` writes them inside that producer's
        transaction: they count once its COMMIT marker follows."""
        self._append_to(self.partition_of(key), recs, callback, transaction)

    def _append_to(self, p: int, recs: list[Record],
                   callback: Callable[[KafkaError | None], None],
                   transaction: tuple[int, int] | None = None) -> None:
        builder = (RecordBatchBuilder() if transaction is None else RecordBatchBuilder(
            producer_id=transaction[0], producer_epoch=transaction[1], is_transactional=True))
        now = self.clock.wall_ms()
        for key, value in recs:
            builder.append(now, key, value)

        # The leader's fsync overlaps the wait for the followers: it starts on the flusher
        # thread once the local append is done, and the answer waits for it (or, when the
        # answer comes first, flushes itself, as it does when append() answers at once).
        flushed: list[Future[None]] = []
        answered: list[bool] = []

        def respond(statuses: list) -> None:
            answered.append(True)
            error = statuses[0].error if statuses else None
            if error is None:
                try:
                    if flushed:
                        flushed[0].result()
                    else:
                        self._flush(p)
                except KafkaError as e:
                    error = e
            callback(coordinator_error(error))

        self.replicas.append(-1, self.write_timeout_ms, [(self.topic, p, builder.build())], respond)
        if not answered:
            try:
                flushed.append(self._flusher.submit(self._flush, p))
            except RuntimeError:  # shut down: the answer flushes (or fails) by itself
                pass

    def _flush(self, p: int) -> None:
        self.replicas.partition(self.topic, p).log.flush()

    # ---- loading ------------------------------------------------------------------------
    def _still_loading(self, p: int, epoch: int) -> bool:
        with self._lock:
            return self._partitions.get(p) == (epoch, PartitionState.LOADING)

    def _load(self, p: int, epoch: int) -> None:
        try:
            if not self._still_loading(p, epoch):
                return
            partition = self.replicas.partition(self.topic, p)
            self._before_load(p, partition)
            entities = self._read_entities(self._records(partition))
        except Exception as e:  # retried: the partition stays LOADING
            log.warning("%s-%d: loading failed (%s); retrying", self.topic, p, e)
            time.sleep(0.5)
            if self._still_loading(p, epoch) and not self._shutdown:
                self._loader.submit(self._load, p, epoch)
            return
        with self._lock:
            if self._partitions.get(p) != (epoch, PartitionState.LOADING):
                return
            for entity in entities:
                self._entities[self._key_of(entity)] = entity
        # Still LOADING while each entity is brought back to life (a consumer group's members
        # restored, a decided transaction's markers resent): a request arriving meanwhile is
        # told to retry, not answered from a half-restored entity.
        for entity in entities:
            self.on_loaded(entity)
        with self._lock:
            if self._partitions.get(p) != (epoch, PartitionState.LOADING):
                return  # unloaded meanwhile: _unload has taken the entities away
            self._partitions[p] = (epoch, PartitionState.LOADED)
        (log.info if entities else log.debug)("%s-%d: loaded %d %s(s) in epoch %d", self.topic,
                                              p, len(entities), self.kind, epoch)

    def _records(self, partition: Any) -> Iterator[LoadedRecord]:
        """Every keyed record and transaction marker of a partition, oldest first."""
        position = partition.log.log_start_offset
        end = partition.log.log_end_offset
        while position < end:
            data = partition.log.read(position, self.load_buffer_size).records
            if not data:
                break
            for pos, header in iter_batches(data):
                if header.next_offset <= position:
                    continue
                if header.is_control:
                    kind = marker_type(data, pos, header)
                    if kind is not None:
                        yield LoadedRecord(None, None, header.producer_id, True, kind)
                else:
                    for rec in decode_records(data, pos, header):
                        if rec.offset >= position and rec.key is not None:
                            yield LoadedRecord(rec.key, rec.value, header.producer_id,
                                               header.is_transactional)
                position = max(position, header.next_offset)

    def _unload(self, p: int) -> None:
        with self._lock:
            gone = [e for k, e in self._entities.items()
                    if partition_for(k, self._num_partitions) == p]
            for e in gone:
                del self._entities[self._key_of(e)]
        for e in gone:
            self.on_unloaded(e)
        if gone:
            log.info("%s-%d: unloaded %d %s(s)", self.topic, p, len(gone), self.kind)

    def shutdown(self) -> None:
        with self._lock:
            self._shutdown = True
            partitions = list(self._partitions)
            self._partitions.clear()
        for p in partitions:
            self._unload(p)
        self._loader.shutdown(wait=False, cancel_futures=True)
        self._flusher.shutdown(wait=False)
