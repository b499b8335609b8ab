"""What the client knows about the cluster: brokers, partition leaders, partition counts,
and topic ids (from Metadata v10 on: ``topic_id(name)`` and ``topic_name(id)``).

A :class:`Cluster` is an immutable snapshot built from one Metadata response (or from
``bootstrap.servers`` before the first one: bootstrap nodes get ids -1, -2, ... as in
Kafka, since their real ids are not known yet). :class:`Metadata` holds the current
snapshot and decides when to fetch the next one:

* **on demand**: ``request_update()`` — a send to an unknown topic, a partition without
  a leader, or an error with ``invalid_metadata`` (NOT_LEADER_OR_FOLLOWER,
  UNKNOWN_TOPIC_OR_PARTITION, a disconnect). A failed refresh is retried after
  ``retry.backoff.ms``.
* **by age**: every ``metadata.max.age.ms`` even when nothing went wrong, so new
  partitions and moved leaders are noticed.

An answer to a request sent before a topic was tracked does not mention it: the new
snapshot keeps what the previous one knew of that topic (:meth:`Cluster.keeping`), the
topic is listed in ``Metadata.unasked`` until an answer names it, and a refresh stays due.
An admin client's own Metadata answer for named topics may become the snapshot when it
covers every tracked topic.

The network client asks :meth:`Metadata.time_to_next_update` on every poll and sends the
request itself (to the least loaded broker), then calls :meth:`Metadata.update` or
:meth:`Metadata.failed_update`.

Worked example: bootstrap ``h:9092`` -> cluster with node -1; the first response names
broker 0 at ``h:9092`` and topic ``t`` with partitions 0 and 1 led by 0; then
``leader_for(TopicPartition("t", 1)) == 0`` and ``partition_count("t") == 2``.

Threading: one writer (the I/O thread calls ``update``/``failed_update``), any number of
readers. ``cluster`` is replaced as a whole (readers take the reference once and use
that snapshot), and the few mutable fields are guarded by one condition variable, on
which user threads wait for a newer version (``await_update``).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterable
from typing import Any, NamedTuple

from broker_sim.common import TopicPartition
from broker_sim.protocol.errors import KafkaError, error_for_code

from .config import ClientConfig

log = logging.getLogger(__name__)

ZERO_UUID = uuid.UUID(int=0)


class Node(NamedTuple):
    node_id: int
    host: str
    port: int
    rack: str | None = None


class PartitionInfo(NamedTuple):
    topic: str
    partition: int
    leader: int  # -1: no leader right now
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error_code: int = 0


class Cluster:
    """Immutable snapshot of brokers and partitions (see the module docstring)."""

    def __init__(self, brokers: Iterable[Node], partitions: Iterable[PartitionInfo] = (),
                 topic_errors: dict[str, int] | None = None, cluster_id: str | None = None,
                 controller_id: int = -1, is_bootstrap: bool = False,
                 topic_ids: dict[str, uuid.UUID] | None = None) -> None:
        self.brokers: dict[int, Node] = {n.node_id: n for n in brokers}
        self.topic_errors = dict(topic_errors or {})
        self._topic_ids = {t: i for t, i in (topic_ids or {}).items() if i != ZERO_UUID}
        self._topic_names = {i: t for t, i in self._topic_ids.items()}
        self.cluster_id = cluster_id
        self.controller_id = controller_id
        self.is_bootstrap = is_bootstrap
        self._by_topic: dict[str, list[PartitionInfo]] = {}
        self._leaders: dict[TopicPartition, int] = {}
        self._by_node: dict[int, list[TopicPartition]] = {}
        self._available: dict[str, list[int]] = {}
        for p in sorted(partitions):
            self._by_topic.setdefault(p.topic, []).append(p)
            self._available.setdefault(p.topic, [])
            if p.leader >= 0 and p.leader in self.brokers:
                tp = TopicPartition(p.topic, p.partition)
                self._leaders[tp] = p.leader
                self._by_node.setdefault(p.leader, []).append(tp)
                self._available[p.topic].append(p.partition)

    @classmethod
    def bootstrap(cls, addresses: Iterable[tuple[str, int]]) -> Cluster:
        nodes = [Node(-(i + 1), host, port) for i, (host, port) in enumerate(addresses)]
        return cls(nodes, is_bootstrap=True)

    @classmethod
    def from_response(cls, body: Any) -> Cluster:
        brokers = [Node(b.node_id, b.host, b.port, b.rack) for b in body.brokers]
        partitions = []
        errors = {}
        ids = {}
        for t in body.topics:
            if t.name is None:  # v12: an unknown topic asked for by id
                continue
            if t.error_code:
                errors[t.name] = t.error_code
                continue
            ids[t.name] = t.topic_id  # the zero uuid below v10: dropped
            for p in t.partitions:
                partitions.append(PartitionInfo(t.name, p.partition_index, p.leader_id,
                                                p.leader_epoch, tuple(p.replica_nodes),
                                                tuple(p.isr_nodes), p.error_code))
        return cls(brokers, partitions, errors, body.cluster_id, body.controller_id,
                   topic_ids=ids)

    def keeping(self, previous: Cluster, topics: Iterable[str]) -> Cluster:
        """This snapshot, plus what ``previous`` knew of ``topics`` (which this one does
        not mention): their partitions, errors and ids, with this snapshot's brokers."""
        topics = list(topics)
        partitions = [p for ps in self._by_topic.values() for p in ps]
        partitions += [p for t in topics for p in previous._by_topic.get(t, ())]
        errors = {**{t: previous.topic_errors[t] for t in topics if t in previous.topic_errors},
                  **self.topic_errors}
        ids = {**{t: previous._topic_ids[t] for t in topics if t in previous._topic_ids},
               **self._topic_ids}
        return Cluster(self.brokers.values(), partitions, errors, self.cluster_id,
                       self.controller_id, topic_ids=ids)

    @property
    def topics(self) -> set[str]:
        return set(self._by_topic)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        """The id of ``topic``, if the broker told it (Metadata v10+)."""
        return self._topic_ids.get(topic)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic whose id is ``topic_id``, if known."""
        return self._topic_names.get(topic_id)

    @property
    def topic_ids(self) -> dict[str, uuid.UUID]:
        """Every known topic id by topic name."""
        return dict(self._topic_ids)

    def node(self, node_id: int) -> Node | None:
        return self.brokers.get(node_id)

    def leader_for(self, tp: TopicPartition) -> int | None:
        return self._leaders.get(tp)

    def partition_count(self, topic: str) -> int | None:
        parts = self._by_topic.get(topic)
        return len(parts) if parts is not None else None

    def partitions_for_topic(self, topic: str) -> list[PartitionInfo]:
        return list(self._by_topic.get(topic, ()))

    def available_partitions(self, topic: str) -> list[int]:
        """Partitions of ``topic`` that have a known leader, ascending."""
        return self._available.get(topic, [])

    def partitions_for_node(self, node_id: int) -> list[TopicPartition]:
        """Partitions led by ``node_id`` (the sender drains them per node)."""
        return self._by_node.get(node_id, [])

    def topic_error(self, topic: str) -> KafkaError | None:
        code = self.topic_errors.get(topic)
        return error_for_code(code)(f"topic {topic!r}") if code else None

    def __repr__(self) -> str:
        return (f"<Cluster brokers={sorted(self.brokers)} topics={sorted(self._by_topic)}"
                f"{' bootstrap' if self.is_bootstrap else ''}>")


class Metadata:
    """The current :class:`Cluster` and the refresh policy (see the module docstring)."""

    def __init__(self, config: ClientConfig, topics: Iterable[str] = (),
                 allow_auto_topic_creation: bool = False) -> None:
        self.config = config
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.cluster = Cluster.bootstrap(config.bootstrap_servers)
        self._cond = threading.Condition()
        self._topics: set[str] = set(topics)
        #: Tracked topics the current snapshot knows only from an earlier answer.
        self.unasked: frozenset[str] = frozenset()
        self._need_update = True
        self._version = 0
        self._last_attempt_ms = -float("inf")
        self._last_success_ms = -float("inf")
        self._last_error: BaseException | None = None
        self._fatal: BaseException | None = None

    # ---- readers (any thread) -------------------------------------------------------
    @property
    def version(self) -> int:
        return self._version

    @property
    def topics(self) -> set[str]:
        with self._cond:
            return set(self._topics)

    @property
    def last_error(self) -> BaseException | None:
        return self._last_error

    def add_topics(self, *topics: str) -> int:
        """Track ``topics`` from now on; request an update if any is new. Returns the version."""
        with self._cond:
            new = set(topics) - self._topics
            if new:
                self._topics |= new
                self._need_update = True
            return self._version

    def request_update(self) -> int:
        """Ask for a refresh as soon as possible; returns the current version."""
        with self._cond:
            self._need_update = True
            return self._version

    def update_requested(self) -> bool:
        return self._need_update

    def await_update(self, last_version: int, timeout_s: float) -> bool:
        """Block until the version exceeds ``last_version`` or ``timeout_s`` passes;
        raises the client's fatal error (an authentication failure) if there is one."""
        with self._cond:
            updated = self._cond.wait_for(
                lambda: self._version > last_version or self._fatal is not None, timeout_s)
            if self._fatal is not None:
                raise self._fatal
            return updated

    @property
    def fatal_error(self) -> BaseException | None:
        return self._fatal

    def set_fatal(self, error: BaseException) -> None:
        """The client cannot go on (authentication failed): wake every waiter with it."""
        with self._cond:
            self._fatal = error
            self._last_error = error
            self._cond.notify_all()

    def recent_cluster(self, now: float) -> Cluster | None:
        """The cluster if it was fetched within ``retry.backoff.ms`` of ``now`` and no
        refresh is due: no answer could be fresher, as none may be asked for before then
        (so a caller that wants every broker need not wait out the backoff). None otherwise."""
        with self._cond:
            if self._need_update or now - self._last_success_ms >= self.config.retry_backoff_ms:
                return None
            return self.cluster

    # ---- the I/O thread -------------------------------------------------------------
    def time_to_next_update(self, now: float) -> float:
        """Milliseconds until a refresh is due (0: now)."""
        if self._need_update:
            return max(0.0, self._last_attempt_ms + self.config.retry_backoff_ms - now)
        return max(0.0, self._last_success_ms + self.config.metadata_max_age_ms - now)

    def request_body(self) -> dict[str, Any]:
        with self._cond:
            topics = [{"name": t} for t in sorted(self._topics)]
        return {"topics": topics, "allow_auto_topic_creation": self.allow_auto_topic_creation,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False}

    def attempt_started(self, now: float) -> None:
        self._last_attempt_ms = now

    def update(self, body: Any, now: float) -> Cluster:
        cluster = Cluster.from_response(body)
        with self._cond:
            # A broker answers every topic asked for, if only with an error: a tracked topic
            # this answer does not mention was added after its request went out (or another
            # component's answer covered it meanwhile). What the previous snapshot knew of
            # it stays, and a refresh that asks for it is still due.
            unasked = [t for t in self._topics
                       if t not in cluster.topics and t not in cluster.topic_errors]
            if unasked:
                cluster = cluster.keeping(self.cluster, unasked)
            self.cluster = cluster
            self.unasked = frozenset(unasked)
            # Topics that exist but have leaderless partitions stay "needing" an update.
            self._need_update = bool(unasked) or any(
                p.leader < 0 for t in self._topics for p in cluster.partitions_for_topic(t))
            self._last_success_ms = now
            self._last_error = None
            self._version += 1
            self._cond.notify_all()
        log.debug("metadata v%d: %r", self._version, cluster)
        return cluster

    def failed_update(self, error: BaseException, now: float) -> None:
        with self._cond:
            self._need_update = True
            self._last_error = error
        log.debug("metadata refresh failed: %s", error)

