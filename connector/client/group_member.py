"""A consumer's membership of its group: the classic protocol, seen from the member.

:class:`GroupMember` finds the group's coordinator (FindCoordinator), joins (JoinGroup,
answering MEMBER_ID_REQUIRED by joining again with the id it was given), runs the
assignor when it is elected leader, collects its assignment (SyncGroup), keeps its session
alive with Heartbeats from a background thread every ``heartbeat.interval.ms``, commits
and fetches offsets as a member (generation and member id checked by the coordinator) and
leaves the group on close (static members, with ``group.instance.id``, do not: a restart
within ``session.timeout.ms`` takes their place back without a rebalance).

A heartbeat answered REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID marks
the member ``rejoin_needed``; the consumer rejoins on its next poll. An application that
does not poll for ``max.poll.interval.ms`` (the rebalance timeout it announced) is taken
out of the group by its own heartbeat thread (LeaveGroup), so its partitions move on. A lost coordinator
(NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, a disconnect) is looked up again.
FENCED_INSTANCE_ID (another process took this static member's place) is fatal.

Threading: the caller's thread (joins, commits) and the heartbeat thread share one
network client, guarded by ``_lock``; the heartbeat thread only tries the lock, so a
long join (which may wait for the whole rebalance) never blocks it, and while a join is
under way no heartbeat is needed. Asynchronous commits are sent under the lock and their
results collected by whichever thread next pumps the network client; their callbacks run
on the caller's thread (:meth:`run_callbacks`, from the consumer's poll).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from broker_sim.common import SYSTEM_CLOCK, Clock, PeriodicThread
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    FencedInstanceId,
    IllegalGeneration,
    KafkaError,
    MemberIdRequired,
    NotCoordinator,
    RebalanceInProgress,
    UnknownMemberId,
    error_for_code,
)

from .assignors import ASSIGNORS
from .config import ConsumerConfig
from .consumer_protocol import (
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from .errors import ClientError, KafkaTimeoutError
from .metadata import TopicPartition
from .offset_fetch import group_answer, offset_fetch_body
from .request_future import RequestFuture
from .sync_client import SyncClient

log = logging.getLogger(__name__)

COORDINATOR_MOVED = (NotCoordinator.code, CoordinatorNotAvailable.code)
RETRY_LATER = (CoordinatorLoadInProgress.code, RebalanceInProgress.code)
REJOIN = (RebalanceInProgress.code, IllegalGeneration.code, UnknownMemberId.code)

CommitCallback = Callable[[dict[TopicPartition, int], BaseException | None], None]


def _is_done(future: RequestFuture) -> bool:
    return future.is_done


class CommitFailedError(ClientError):
    """The group rebalanced (or dropped this member) before the commit: the partitions may
    belong to another member now. Poll again: the consumer rejoins."""

    retriable = False


class GroupMember:
    def __init__(self, config: ConsumerConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self._sync = SyncClient(config, clock=clock)
        self._lock = threading.RLock()
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.rejoin_needed = True
        self.fatal: KafkaError | None = None
        self._coordinator: int | None = None
        self._join_future: RequestFuture | None = None
        self._step = "join"
        self._retry_at = 0.0
        self._joining_topics: list[str] = []
        self._last_poll: float | None = None
        self._pending: list[tuple[RequestFuture, dict[TopicPartition, int], CommitCallback | None]] = []
        self._completed: deque[tuple[CommitCallback, dict[TopicPartition, int], BaseException | None]] = deque()
        self._heartbeat = PeriodicThread(f"pyq-heartbeat-{config.group_id}",
                                         config.heartbeat_interval, self._heartbeat_once)

    def start(self) -> None:
        self._heartbeat.start()

    # ---- the coordinator ----------------------------------------------------------------
    def _coordinator_id(self, deadline: float) -> int:
        if self._coordinator is not None:
            return self._coordinator
        sync = self._sync
        while True:
            response = sync.request_any(ApiKey.FIND_COORDINATOR, {
                "key": self.config.group_id, "key_type": 0,
                "coordinator_keys": [self.config.group_id]}, deadline)
            if response.coordinators:
                response = response.coordinators[0]
            if response.error_code == 0:
                sync.client.add_node(response.node_id, response.host, response.port)
                self._coordinator = int(response.node_id)
                return self._coordinator
            error = error_for_code(response.error_code)(
                f"coordinator of group {self.config.group_id!r}: {response.error_message}")
            if not error.retriable:
                raise error
            self._backoff(deadline, error)

    def _backoff(self, deadline: float, error: BaseException) -> None:
        if self._sync.now() + self.config.retry_backoff_ms >= deadline:
            raise KafkaTimeoutError(f"group {self.config.group_id!r}: {error}") from error
        self._sync.client.poll(self.config.retry_backoff_ms, self._sync.now())

    def _call(self, api_key: int, body: Any, deadline: float, timeout_ms: float | None = None) -> Any:
        """One request to the coordinator; a transport failure forgets the coordinator."""
        node = self._coordinator_id(deadline)
        try:
            return self._sync.request(node, api_key, body, deadline, timeout_ms)
        except KafkaTimeoutError:
            self._coordinator = None
            raise
        except Exception as e:
            if getattr(e, "retriable", False):
                self._coordinator = None
            raise

    # ---- joining ------------------------------------------------------------------------
    def poll_join(self, topics: Iterable[str], deadline: float) -> list[TopicPartition] | None:
        """Take the (re)join forward until ``deadline``: this member's partitions once the
        group has settled, None while the rebalance is still under way.

        A JoinGroup may wait at the coordinator for the whole rebalance (every member must
        rejoin), so it is sent once and looked at again by later calls, as Kafka's
        consumer does within its poll timeout, never blocking the caller beyond it.
        """
        with self._lock:
            while True:
                if self.fatal is not None:
                    raise self.fatal
                if self._sync.now() >= deadline:
                    return None
                if self._join_future is None:
                    if self._sync.now() < self._retry_at:
                        self._sync.client.poll(min(self._retry_at, deadline) - self._sync.now(),
                                               self._sync.now())
                        continue
                    self._join_future = self._send_join(sorted(topics), deadline)
                    if self._join_future is None:
                        continue
                future: RequestFuture = self._join_future
                if not self._sync.poll_until_or(functools.partial(_is_done, future), deadline):
                    return None
                self._join_future = None
                if future.exception is not None:
                    self._retry(future.exception)
                    continue
                partitions = self._on_answer(future.value, deadline)
                if partitions is not None:
                    return partitions

    def _send_join(self, topics: list[str], deadline: float) -> RequestFuture | None:
        cfg = self.config
        self._joining_topics = topics
        try:
            node = self._coordinator_id(deadline)
            self._sync.await_ready(node, deadline)
        except KafkaTimeoutError:
            return None
        except Exception as e:
            if not getattr(e, "retriable", False):
                raise
            self._retry(e)
            return None
        self._step = "join"
        metadata = encode_subscription(Subscription(topics))
        return self._sync.client.send(node, ApiKey.JOIN_GROUP, {
            "group_id": cfg.group_id, "session_timeout_ms": cfg.session_timeout,
            "rebalance_timeout_ms": cfg.max_poll_interval_ms, "member_id": self.member_id,
            "group_instance_id": cfg.group_instance_id, "protocol_type": "consumer",
            "protocols": [{"name": cfg.assignment_strategy, "metadata": metadata}],
            "reason": None}, self._sync.now(),
            timeout_ms=max(cfg.request_timeout_ms, cfg.max_poll_interval_ms + 5000))

    def _retry(self, error: BaseException) -> None:
        """A failed step: forget the coordinator if it moved, try again after a backoff."""
        if getattr(error, "retriable", False) or isinstance(error, KafkaTimeoutError):
            self._coordinator = None
        else:
            raise error
        log.info("group %s: joining failed (%s); retrying", self.config.group_id, error)
        self._retry_at = self._sync.now() + self.config.retry_backoff_ms

    def _on_answer(self, answer: Any, deadline: float) -> list[TopicPartition] | None:
        cfg = self.config
        if answer.error_code:
            self._join_error(answer.error_code, getattr(answer, "member_id", self.member_id))
            return None
        if self._step == "join":
            self.member_id, self.generation = answer.member_id, answer.generation_id
            self.protocol = answer.protocol_name
            assignments = []
            if answer.leader == answer.member_id and not answer.skip_assignment:
                assignments = self._assign(answer.members, self._sync.now() + cfg.request_timeout_ms)
            node = self._coordinator_id(deadline)
            self._step = "sync"
            self._join_future = self._sync.client.send(node, ApiKey.SYNC_GROUP, {
                "group_id": cfg.group_id, "generation_id": self.generation,
                "member_id": self.member_id, "group_instance_id": cfg.group_instance_id,
                "protocol_type": "consumer", "protocol_name": self.protocol,
                "assignments": assignments}, self._sync.now(),
                timeout_ms=max(cfg.request_timeout_ms, cfg.max_poll_interval_ms + 5000))
            return None
        self.rejoin_needed = False
        partitions = decode_assignment(bytes(answer.assignment))
        log.info("group %s: member %s of generation %d, assigned %s", cfg.group_id,
                 self.member_id, self.generation, partitions)
        return partitions

    def _join_error(self, code: int, member_id: str) -> None:
        error = error_for_code(code)(f"group {self.config.group_id!r}")
        if code == MemberIdRequired.code:
            self.member_id = member_id  # KIP-394: join again with the id we were given
            return
        if code == UnknownMemberId.code:
            self.member_id = ""
            return
        if code in COORDINATOR_MOVED:
            self._coordinator = None
        elif code == FencedInstanceId.code:
            self.fatal = FencedInstanceId(f"group {self.config.group_id!r}: another consumer "
                                          f"took group.instance.id {self.config.group_instance_id!r}")
            raise self.fatal
        elif code not in RETRY_LATER and code != IllegalGeneration.code:
            raise error
        log.info("group %s: %s; joining again", self.config.group_id, type(error).__name__)
        self._retry_at = self._sync.now() + self.config.retry_backoff_ms

    def _assign(self, members: list[Any], deadline: float) -> list[dict[str, Any]]:
        """The leader's job: every member's share of the subscribed topics' partitions."""
        subscriptions = {m.member_id: decode_subscription(bytes(m.metadata)).topics for m in members}
        topics = sorted({t for ts in subscriptions.values() for t in ts})
        cluster = self._sync.refresh_metadata(topics, deadline)
        counts = {t: cluster.partition_count(t) or 0 for t in topics}
        assigned = ASSIGNORS[self.protocol or "range"](subscriptions, counts)
        log.info("group %s: leader %s assigned %d partition(s) of %s to %d member(s)",
                 self.config.group_id, self.member_id, sum(counts.values()), topics, len(members))
        return [{"member_id": m, "assignment": encode_assignment(tps)} for m, tps in assigned.items()]

    # ---- liveness -----------------------------------------------------------------------
    def _heartbeat_once(self) -> None:
        if not self._lock.acquire(blocking=False):
            return  # a join or commit is under way: the coordinator hears from us anyway
        try:
            self._pump()
            self._check_poll_interval()
            if self.rejoin_needed or self.generation < 0 or self.fatal is not None \
                    or self._join_future is not None:
                return
            cfg = self.config
            deadline = self._sync.now() + cfg.request_timeout_ms
            try:
                answer = self._call(ApiKey.HEARTBEAT, {
                    "group_id": cfg.group_id, "generation_id": self.generation,
                    "member_id": self.member_id, "group_instance_id": cfg.group_instance_id},
                    deadline)
            except Exception as e:  # noqa: BLE001 - the coordinator is found again next time
                log.info("group %s: heartbeat failed: %s", cfg.group_id, e)
                return
            self._on_heartbeat(answer.error_code)
        finally:
            self._lock.release()

    def polled(self) -> None:
        """The application polled: it is still consuming (``max.poll.interval.ms``)."""
        self._last_poll = self._sync.now()

    def _check_poll_interval(self) -> None:
        """An application that stopped polling leaves the group, as Kafka's consumer does,
        so its partitions go to members that still consume; it rejoins when it polls."""
        cfg = self.config
        if self._last_poll is None or self.generation < 0 or self.rejoin_needed \
                or self._sync.now() - self._last_poll <= cfg.max_poll_interval_ms:
            return
        log.warning("group %s: no poll for more than max.poll.interval.ms (%d ms); leaving the "
                    "group so that others take its partitions", cfg.group_id, cfg.max_poll_interval_ms)
        self._leave()
        if cfg.group_instance_id is None:
            self.member_id = ""
        self.generation = -1
        self.rejoin_needed = True

    def _leave(self) -> None:
        if self.config.group_instance_id is not None or not self.member_id:
            return  # a static member's place is kept for its session timeout
        deadline = self._sync.now() + self.config.request_timeout_ms
        self._call(ApiKey.LEAVE_GROUP, {
            "group_id": self.config.group_id, "member_id": self.member_id,
            "members": [{"member_id": self.member_id, "group_instance_id": None,
                         "reason": "the consumer is closing"}]}, deadline)

    def _on_heartbeat(self, code: int) -> None:
        if code == 0:
            return
        if code in REJOIN:
            log.info("group %s: %s; rejoining", self.config.group_id, error_for_code(code).__name__)
            if code == UnknownMemberId.code:
                self.member_id = ""
            self.rejoin_needed = True
        elif code in COORDINATOR_MOVED:
            self._coordinator = None
        elif code == FencedInstanceId.code:
            self.fatal = FencedInstanceId(f"group {self.config.group_id!r}: another consumer took "
                                          f"group.instance.id {self.config.group_instance_id!r}")
        else:
            log.warning("group %s: heartbeat answered %s", self.config.group_id,
                        error_for_code(code).__name__)

    # ---- offsets ------------------------------------------------------------------------
    def _commit_body(self, offsets: Mapping[TopicPartition, int]) -> dict[str, Any]:
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, offset in offsets.items():
            topics.setdefault(tp.topic, []).append({
                "partition_index": tp.partition, "committed_offset": offset,
                "committed_leader_epoch": -1, "committed_metadata": ""})
        return {"group_id": self.config.group_id, "generation_id_or_member_epoch": self.generation,
                "member_id": self.member_id, "group_instance_id": self.config.group_instance_id,
                "retention_time_ms": -1,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}

    def _commit_error(self, response: Any) -> BaseException | None:
        for t in response.topics:
            for p in t.partitions:
                if p.error_code in REJOIN:
                    self.rejoin_needed = True
                    if p.error_code == UnknownMemberId.code:
                        self.member_id = ""
                    return CommitFailedError(
                        f"commit for group {self.config.group_id!r} failed: "
                        f"{error_for_code(p.error_code).__name__} (the group rebalanced)")
                if p.error_code:
                    return error_for_code(p.error_code)(
                        f"commit of {t.name}-{p.partition_index} for group {self.config.group_id!r}")
        return None

    def commit(self, offsets: Mapping[TopicPartition, int], deadline: float) -> None:
        with self._lock:
            while True:
                response = self._call(ApiKey.OFFSET_COMMIT, self._commit_body(offsets), deadline)
                codes = {p.error_code for t in response.topics for p in t.partitions}
                moved = codes & set(COORDINATOR_MOVED) or codes & {CoordinatorLoadInProgress.code}
                if not moved:
                    break
                self._coordinator = None
                self._backoff(deadline, error_for_code(next(iter(moved)))("commit"))
            error = self._commit_error(response)
        if error is not None:
            raise error

    def commit_async(self, offsets: dict[TopicPartition, int], callback: CommitCallback | None) -> None:
        with self._lock:
            try:
                node = self._coordinator_id(self._sync.now() + self.config.request_timeout_ms)
                self._sync.await_ready(node, self._sync.now() + self.config.request_timeout_ms)
                future = self._sync.client.send(node, ApiKey.OFFSET_COMMIT, self._commit_body(offsets),
                                                self._sync.now())
            except Exception as e:  # noqa: BLE001 - reported through the callback
                if callback is not None:
                    self._completed.append((callback, offsets, e))
                return
            self._pending.append((future, offsets, callback))
            self._pump()

    def _pump(self) -> None:
        """Read what has arrived; move finished async commits to the callback queue."""
        if not self._pending:
            return
        self._sync.client.poll(0, self._sync.now())
        still = []
        for future, offsets, callback in self._pending:
            if not future.is_done:
                still.append((future, offsets, callback))
                continue
            error = future.exception or self._commit_error(future.value)
            if error is not None:
                log.info("group %s: asynchronous commit failed: %s", self.config.group_id, error)
            if callback is not None:
                self._completed.append((callback, offsets, error))
        self._pending = still

    def run_callbacks(self) -> None:
        """Call the callbacks of finished asynchronous commits (on the caller's thread)."""
        with self._lock:
            self._pump()
        while self._completed:
            callback, offsets, error = self._completed.popleft()
            callback(offsets, error)

    def committed(self, partitions: list[TopicPartition], deadline: float) -> dict[TopicPartition, int]:
        """This group's committed offsets of ``partitions`` (missing: none committed)."""
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        body = offset_fetch_body(self.config.group_id, [
            {"name": t, "partition_indexes": ps} for t, ps in by_topic.items()])
        with self._lock:
            while True:
                response = group_answer(self._call(ApiKey.OFFSET_FETCH, body, deadline))
                codes = {response.error_code} | {p.error_code for t in response.topics for p in t.partitions}
                moved = codes & {*COORDINATOR_MOVED, CoordinatorLoadInProgress.code}
                if not moved:
                    break
                self._coordinator = None
                self._backoff(deadline, error_for_code(next(iter(moved)))("offset fetch"))
        if response.error_code:
            raise error_for_code(response.error_code)(f"offset fetch for group {self.config.group_id!r}")
        return {TopicPartition(t.name, p.partition_index): p.committed_offset
                for t in response.topics for p in t.partitions if p.committed_offset >= 0}

    # ---- leaving ------------------------------------------------------------------------
    def close(self, leave: bool = True) -> None:
        self._heartbeat.stop()
        with self._lock:
            try:
                if self._pending:
                    deadline = self._sync.now() + self.config.request_timeout_ms
                    self._sync.poll_until(lambda: all(f.is_done for f, _, _ in self._pending),
                                          deadline, "asynchronous commits")
                    self._pump()
                if leave and self._coordinator is not None and self.generation >= 0:
                    self._leave()
            except Exception as e:  # noqa: BLE001 - closing: the session timeout covers it
                log.info("group %s: leaving failed: %s", self.config.group_id, e)
            finally:
                self._sync.close()
