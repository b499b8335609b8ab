"""A group member's link to its group coordinator, and its offsets as a member.

Both rebalance protocols' members (:class:`~.group_member.GroupMember`, the classic one,
and :class:`~.consumer_group_member.ConsumerGroupMember`, KIP-848's) are a
:class:`CoordinatorClient`: it finds the group's coordinator (FindCoordinator) and looks it
up again when it moves (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, a disconnect), and
commits (OffsetCommit, synchronous or not) and fetches (OffsetFetch) offsets in the
member's name. Who the member is differs by protocol, so a subclass says it:

* :meth:`_commit_identity` — the member id and the generation (classic) or member epoch
  (consumer protocol) an OffsetCommit carries;
* :meth:`_fetch_identity` — the member id and epoch OffsetFetch v9+ carries (a classic
  member sends none);
* :meth:`_refuses_commit` — whether an error code means the group moved on without this
  member's partitions (the commit then fails with :class:`CommitFailedError`), with the
  protocol's own side effects (a classic member rejoins);
* :meth:`_retries_commit` / :meth:`_retries_fetch` — whether a refused commit may be sent
  again because the member's identity moved on since it was sent (a consumer-protocol
  member's epoch, bumped by a heartbeat meanwhile), and whether a refused offset fetch is
  worth asking again (until the deadline) once the heartbeat has brought the current epoch.

Threading: the caller's thread and the member's heartbeat thread share one network
client, guarded by ``_lock`` (an RLock). Asynchronous commits are sent under the lock and
their results collected by whichever thread next pumps the network client; their
callbacks run on the caller's thread (:meth:`run_callbacks`).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from broker_sim.common import SYSTEM_CLOCK, Clock
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    KafkaError,
    NotCoordinator,
    error_for_code,
    is_retriable,
)

from .config import ConsumerConfig
from .errors import ClientError, KafkaTimeoutError
from .metadata import TopicPartition
from .offset_fetch import group_answer, offset_fetch_body
from .request_future import RequestFuture
from .sync_client import SyncClient

log = logging.getLogger(__name__)

COORDINATOR_MOVED = (NotCoordinator.code, CoordinatorNotAvailable.code)

CommitCallback = Callable[[dict[TopicPartition, int], BaseException | None], None]


class CommitFailedError(ClientError):
    """The group rebalanced (or dropped this member) before the commit: the partitions may
    belong to another member now. Poll again: the consumer rejoins."""

    retriable = False


class CoordinatorClient:
    def __init__(self, config: ConsumerConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self._sync = SyncClient(config, clock=clock)
        self._lock = threading.RLock()
        self.member_id = ""
        self.fatal: KafkaError | None = None
        self._coordinator: int | None = None
        self._pending: list[tuple[RequestFuture, dict[TopicPartition, int], CommitCallback | None]] = []
        self._completed: deque[tuple[CommitCallback, dict[TopicPartition, int], BaseException | None]] = deque()

    # ---- who the member is (per protocol) -----------------------------------------------
    def _commit_identity(self) -> tuple[str, int]:
        raise NotImplementedError

    def _fetch_identity(self) -> tuple[str | None, int]:
        return None, -1

    def _refuses_commit(self, code: int) -> bool:
        raise NotImplementedError

    def _retries_commit(self, code: int, sent: tuple[str, int]) -> bool:
        return False

    def _retries_fetch(self, code: int) -> bool:
        return False

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
            if is_retriable(e):
                self._coordinator = None
            raise

    # ---- offsets ------------------------------------------------------------------------
    def _commit_body(self, offsets: Mapping[TopicPartition, int],
                     identity: tuple[str, int]) -> dict[str, Any]:
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, offset in offsets.items():
            topics.setdefault(tp.topic, []).append({
                "partition_index": tp.partition, "committed_offset": offset,
                "committed_leader_epoch": -1, "committed_metadata": ""})
        member_id, epoch = identity
        return {"group_id": self.config.group_id, "generation_id_or_member_epoch": epoch,
                "member_id": member_id, "group_instance_id": self.config.group_instance_id,
                "retention_time_ms": -1,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}

    def _commit_error(self, response: Any) -> BaseException | None:
        for t in response.topics:
            for p in t.partitions:
                if p.error_code and self._refuses_commit(p.error_code):
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
                sent = self._commit_identity()
                response = self._call(ApiKey.OFFSET_COMMIT, self._commit_body(offsets, sent), deadline)
                codes = {p.error_code for t in response.topics for p in t.partitions}
                moved = codes & set(COORDINATOR_MOVED) or codes & {CoordinatorLoadInProgress.code}
                if moved:
                    self._coordinator = None
                    self._backoff(deadline, error_for_code(next(iter(moved)))("commit"))
                    continue
                again = [c for c in codes if c and self._retries_commit(c, sent)]
                if not again:
                    break
                self._backoff(deadline, error_for_code(again[0])("commit"))
            error = self._commit_error(response)
        if error is not None:
            raise error

    def commit_async(self, offsets: dict[TopicPartition, int], callback: CommitCallback | None) -> None:
        with self._lock:
            try:
                node = self._coordinator_id(self._sync.now() + self.config.request_timeout_ms)
                self._sync.await_ready(node, self._sync.now() + self.config.request_timeout_ms)
                future = self._sync.client.send(node, ApiKey.OFFSET_COMMIT, self._commit_body(
                    offsets, self._commit_identity()), self._sync.now())
            except Exception as e:  # reported through the callback
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

    def _finish_pending(self) -> None:
        """Wait (up to request.timeout.ms) for the asynchronous commits still out."""
        if self._pending:
            deadline = self._sync.now() + self.config.request_timeout_ms
            self._sync.poll_until(lambda: all(f.is_done for f, _, _ in self._pending),
                                  deadline, "asynchronous commits")
            self._pump()

    def committed(self, partitions: list[TopicPartition], deadline: float) -> dict[TopicPartition, int]:
        """This group's committed offsets of ``partitions`` (missing: none committed)."""
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
        with self._lock:
            while True:
                member_id, epoch = self._fetch_identity()
                body = offset_fetch_body(self.config.group_id, topics, member_id, epoch)
                response = group_answer(self._call(ApiKey.OFFSET_FETCH, body, deadline))
                codes = {response.error_code} | {p.error_code for t in response.topics for p in t.partitions}
                moved = codes & {*COORDINATOR_MOVED, CoordinatorLoadInProgress.code}
                if moved:
                    self._coordinator = None
                    self._backoff(deadline, error_for_code(next(iter(moved)))("offset fetch"))
                    continue
                code = response.error_code
                if not code or not self._retries_fetch(code):
                    break
                self._backoff(deadline, error_for_code(code)("offset fetch"))
        if response.error_code:
            raise error_for_code(response.error_code)(f"offset fetch for group {self.config.group_id!r}")
        return {TopicPartition(t.name, p.partition_index): p.committed_offset
                for t in response.topics for p in t.partitions if p.committed_offset >= 0}
