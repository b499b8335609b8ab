"""A consumer's membership of its group: the classic protocol, seen from the member.

:class:`GroupMember` (a :class:`~.coordinator_client.CoordinatorClient`, which finds the
coordinator and commits and fetches offsets in the member's name) joins (JoinGroup,
answering MEMBER_ID_REQUIRED by joining again with the id it was given), runs the
assignor when it is elected leader, collects its assignment (SyncGroup), keeps its session
alive with Heartbeats from a background thread every ``heartbeat.interval.ms``, commits
as a member (generation and member id checked by the coordinator) and leaves the group on
close (static members, with ``group.instance.id``, do not: a restart within
``session.timeout.ms`` takes their place back without a rebalance).

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
from collections.abc import Iterable
from typing import Any

from broker_sim.common import SYSTEM_CLOCK, Clock, PeriodicThread
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    CoordinatorLoadInProgress,
    FencedInstanceId,
    IllegalGeneration,
    MemberIdRequired,
    RebalanceInProgress,
    UnknownMemberId,
    error_for_code,
    is_retriable,
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
from .coordinator_client import (
    COORDINATOR_MOVED,
    CommitCallback,
    CommitFailedError,
    CoordinatorClient,
)
from .errors import KafkaTimeoutError
from .metadata import TopicPartition
from .request_future import RequestFuture

log = logging.getLogger(__name__)

RETRY_LATER = (CoordinatorLoadInProgress.code, RebalanceInProgress.code)
REJOIN = (RebalanceInProgress.code, IllegalGeneration.code, UnknownMemberId.code)

__all__ = ["CommitCallback", "CommitFailedError", "GroupMember"]


def _is_done(future: RequestFuture) -> bool:
    return future.is_done


class GroupMember(CoordinatorClient):
    def __init__(self, config: ConsumerConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        super().__init__(config, clock)
        self.generation = -1
        self.protocol: str | None = None
        self.rejoin_needed = True
        self._join_future: RequestFuture | None = None
        self._step = "join"
        self._retry_at = 0.0
        self._joining_topics: list[str] = []
        self._last_poll: float | None = None
        self._heartbeat = PeriodicThread(f"pyq-heartbeat-{config.group_id}",
                                         config.heartbeat_interval, self._heartbeat_once)

    def start(self) -> None:
        self._heartbeat.start()

    # ---- who the member is --------------------------------------------------------------
    def _commit_identity(self) -> tuple[str, int]:
        return self.member_id, self.generation

    def _refuses_commit(self, code: int) -> bool:
        if code not in REJOIN:
            return False
        self.rejoin_needed = True
        if code == UnknownMemberId.code:
            self.member_id = ""
        return True

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
            if not is_retriable(e):
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
        if is_retriable(error) or isinstance(error, KafkaTimeoutError):
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
            except Exception as e:  # the coordinator is found again next time
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

    # ---- leaving ------------------------------------------------------------------------
    def close(self, leave: bool = True) -> None:
        self._heartbeat.stop()
        with self._lock:
            try:
                self._finish_pending()
                if leave and self._coordinator is not None and self.generation >= 0:
                    self._leave()
            except Exception as e:  # closing: the session timeout covers it
                log.info("group %s: leaving failed: %s", self.config.group_id, e)
            finally:
                self._sync.close()
