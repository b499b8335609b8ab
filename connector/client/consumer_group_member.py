"""A consumer's membership of its group: the consumer protocol (KIP-848), seen from the member.

:class:`ConsumerGroupMember` is what ``group.protocol=consumer`` puts where the classic
:class:`~.group_member.GroupMember` was. There is no JoinGroup, SyncGroup or client-side
assignor: one request, ConsumerGroupHeartbeat, joins (member epoch 0), keeps the session
(every ``heartbeat_interval_ms`` the coordinator answers with), reports what the member
owns and brings the partitions the coordinator's assignor (``group.remote.assignor``) gives
it, and leaves (epoch -1; -2 for a static member, whose place is kept for the session
timeout). The rules — when to heartbeat, what to report, what the application must do
about its partitions, fencing — are :class:`~.consumer_membership.ConsumerMembership`'s, a
state machine without I/O; this class sends what it asks for and hands it the answers.

Rebalances are incremental: the application thread (the consumer's :meth:`poll`) takes a
:class:`~.consumer_membership.Reconciliation` — partitions to give up, committing them first
with auto commit, then partitions to take — and reports it done; the next heartbeat, sent
at once, acknowledges it, and only then does the coordinator hand the given-up partitions to
another member. FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID (or a poll gap beyond
``max.poll.interval.ms``, after which the member leaves by itself) loses every partition,
uncommitted, and the member joins again with epoch 0.

Commits and offset fetches are the member's (:class:`~.coordinator_client.CoordinatorClient`):
OffsetCommit carries the member id and member epoch, OffsetFetch v9 too. A commit or fetch
answered STALE_MEMBER_EPOCH heartbeats at once to learn the current epoch and is sent again
if the member is still in the group; UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH fail it with
:class:`~.coordinator_client.CommitFailedError`.

Threading, as the classic member's: the caller's thread (commits, offset fetches,
reconciliation) and the heartbeat thread share one network client and the membership,
guarded by ``_lock``. The heartbeat thread only tries the lock, sleeping until the next
heartbeat is due or it is woken (subscribe, a reconciliation to acknowledge, close); the
caller's thread takes it for short steps only, never across a callback. Answers that give
the application something to do set ``_news``, which the consumer waits on while it has no
partitions. Commit callbacks run on the caller's thread.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from broker_sim.common import SYSTEM_CLOCK, Clock, ShutdownableThread
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    FencedMemberEpoch,
    KafkaError,
    StaleMemberEpoch,
    UnknownMemberId,
    is_retriable,
)

from .config import ConsumerConfig
from .consumer_membership import ConsumerMembership, MemberState, Reconciliation, new_member_id
from .coordinator_client import CoordinatorClient
from .errors import KafkaTimeoutError
from .metadata import Metadata

log = logging.getLogger(__name__)

#: How often the heartbeat thread looks at the poll timer when no heartbeat is due sooner.
CHECK_MS = 100.0
REFUSED = (StaleMemberEpoch.code, UnknownMemberId.code, FencedMemberEpoch.code)


class _HeartbeatThread(ShutdownableThread):
    def __init__(self, member: ConsumerGroupMember) -> None:
        super().__init__(f"pyq-consumer-heartbeat-{member.config.group_id}")
        self._member = member
        self._wake = threading.Event()

    def wake(self) -> None:
        self._wake.set()

    def run_once(self) -> None:
        self._wake.wait(min(self._member.time_to_heartbeat(), CHECK_MS) / 1000)
        self._wake.clear()
        if not self.stopping.is_set():
            self._member.heartbeat_once()


class ConsumerGroupMember(CoordinatorClient):
    def __init__(self, config: ConsumerConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        super().__init__(config, clock)
        self.membership = ConsumerMembership(
            config.group_id, new_member_id(), instance_id=config.group_instance_id,
            rebalance_timeout_ms=config.max_poll_interval_ms,
            server_assignor=config.group_remote_assignor, retry_backoff_ms=config.retry_backoff_ms)
        self.member_id = self.membership.member_id
        self._news = threading.Event()
        self._last_poll: float | None = None
        self._heartbeat = _HeartbeatThread(self)

    @property
    def generation(self) -> int:
        """The member epoch (what a classic member's generation is to its commits)."""
        return self.membership.member_epoch

    def start(self) -> None:
        self._heartbeat.start()

    def subscribe(self, topics: list[str]) -> None:
        with self._lock:
            self.membership.subscribe(topics, self._sync.now())
        self._heartbeat.wake()

    # ---- who the member is --------------------------------------------------------------
    def _commit_identity(self) -> tuple[str, int]:
        return self.membership.member_id, self.membership.member_epoch

    def _fetch_identity(self) -> tuple[str | None, int]:
        return self.membership.member_id, self.membership.member_epoch

    def _refuses_commit(self, code: int) -> bool:
        return code in REFUSED

    def _retries_commit(self, code: int, sent: tuple[str, int]) -> bool:
        """STALE_MEMBER_EPOCH: ask the coordinator for the current epoch (a heartbeat, under
        the lock the caller holds) and send again if the member is still in the group."""
        if code != StaleMemberEpoch.code:
            return False
        if self._commit_identity() == sent:
            self._heartbeat_locked(force=True)
        return self.membership.in_group and self._commit_identity() != sent

    def _retries_fetch(self, code: int) -> bool:
        return self._retries_commit(code, self._commit_identity())

    # ---- heartbeats (the heartbeat thread; the caller's thread when it must know now) ----
    def time_to_heartbeat(self) -> float:
        with self._lock:
            return self.membership.time_to_heartbeat(self._sync.now())

    def heartbeat_once(self) -> None:
        if not self._lock.acquire(blocking=False):
            return  # a commit or offset fetch is under way; the next round heartbeats
        try:
            self._pump()
            self._check_poll_interval()
            self._heartbeat_locked(force=False)
        finally:
            self._lock.release()

    def _heartbeat_locked(self, force: bool) -> None:
        membership = self.membership
        now = self._sync.now()
        body = membership.heartbeat_request(now, force=force)
        if body is None:
            return
        try:
            answer = self._call(ApiKey.CONSUMER_GROUP_HEARTBEAT, body,
                                now + self.config.request_timeout_ms)
        except Exception as e:  # the coordinator is found again next time
            membership.on_heartbeat_failed(self._sync.now())
            if not (is_retriable(e) or isinstance(e, KafkaTimeoutError)):
                membership.state = MemberState.FATAL
                membership.error = e if isinstance(e, KafkaError) else KafkaError(str(e))
                self.fatal = membership.error
                self._news.set()
            log.info("group %s: heartbeat failed: %s", self.config.group_id, e)
            return
        before = (membership.state, membership.member_epoch, membership.assignment)
        if membership.on_heartbeat(answer, self._sync.now()):
            self._coordinator = None
        if membership.state is MemberState.FATAL:
            self.fatal = membership.error
        if (membership.state, membership.member_epoch, membership.assignment) != before:
            log.info("group %s: member %s epoch %d, %s", self.config.group_id, membership.member_id,
                     membership.member_epoch, membership.state.value)
            self._news.set()

    def polled(self) -> None:
        """The application polled: it is still consuming (``max.poll.interval.ms``)."""
        with self._lock:
            self._last_poll = self._sync.now()
            self.membership.polled(self._last_poll)
        self._heartbeat.wake()

    def _check_poll_interval(self) -> None:
        """An application that stopped polling leaves the group, as Kafka's consumer does, so
        its partitions go to members that still consume; it joins again when it polls."""
        cfg = self.config
        if self._last_poll is None or self._sync.now() - self._last_poll <= cfg.max_poll_interval_ms:
            return
        body = self.membership.poll_timer_expired()
        if body is None:
            return
        log.warning("group %s: no poll for more than max.poll.interval.ms (%d ms); leaving the "
                    "group so that others take its partitions", cfg.group_id, cfg.max_poll_interval_ms)
        self._send_leave(body)
        self._news.set()

    def _send_leave(self, body: dict[str, Any]) -> None:
        try:
            self._call(ApiKey.CONSUMER_GROUP_HEARTBEAT, body,
                       self._sync.now() + self.config.request_timeout_ms)
        except Exception as e:  # the session timeout covers it
            log.info("group %s: leaving failed: %s", self.config.group_id, e)

    # ---- reconciliation (the caller's thread) ------------------------------------------
    def reconciliation(self, metadata: Metadata) -> Reconciliation | None:
        """What the application must do about its partitions now (None: nothing yet).
        Topic ids are named from ``metadata``, which is asked to refresh when it cannot."""
        with self._lock:
            self._news.clear()
            if self.fatal is not None:
                raise self.fatal
            name_of = metadata.cluster.topic_name
            rec = self.membership.reconciliation(name_of)
            if rec is None and self.membership.unresolved(name_of):
                metadata.request_update()
            return rec

    def revoked(self, rec: Reconciliation) -> None:
        with self._lock:
            self.membership.revoked(rec)
        self._heartbeat.wake()

    def reconciled(self, rec: Reconciliation) -> None:
        with self._lock:
            self.membership.reconciled(rec, self._sync.now())
        self._heartbeat.wake()

    def wait_for_news(self, timeout_ms: float) -> bool:
        """Wait (at most ``timeout_ms``) for an answer that gives the application work."""
        return self._news.wait(max(0.0, timeout_ms) / 1000)

    # ---- leaving ------------------------------------------------------------------------
    def close(self, leave: bool = True) -> None:
        self._heartbeat.stop()
        with self._lock:
            try:
                self._finish_pending()
                body = self.membership.leave_request()
                if leave and body is not None:
                    self._send_leave(body)
            except Exception as e:  # closing: the session timeout covers it
                log.info("group %s: leaving failed: %s", self.config.group_id, e)
            finally:
                self.membership.left()
                self._sync.close()
