"""Blocking request/response on the calling thread, for the fetcher and the admin client.

The producer needs a background thread (``send()`` must return at once); the fetcher and
admin do not: their caller waits for the answer anyway. :class:`SyncClient` therefore
runs the :class:`~connector.client.network_client.NetworkClient` loop on the caller's
thread: it polls until a future completes, a node becomes ready or metadata arrives, and
gives up at a deadline with :class:`~connector.client.errors.KafkaTimeoutError`.

Every wait takes an absolute ``deadline_ms`` on the client's monotonic clock, so a
caller composes several steps (find the leader, connect, fetch) under one budget::

    deadline = sync.now() + 5000
    node = sync.leader_for(tp, deadline)
    body = sync.request(node, ApiKey.LIST_OFFSETS, req, deadline)

Threading: one thread at a time (the owner of the network client). The fetcher and the
admin client are not thread-safe for the same reason; use one per thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from broker_sim.common import SYSTEM_CLOCK, Clock
from broker_sim.protocol.errors import (
    TopicAuthorizationFailed,
    UnknownTopicOrPartition,
    is_retriable,
)

from .config import ClientConfig
from .errors import KafkaTimeoutError, NodeNotReadyError
from .metadata import Cluster, Metadata, TopicPartition
from .network_client import NetworkClient
from .request_future import RequestFuture

log = logging.getLogger(__name__)

_IDLE_POLL_MS = 50.0
TOPIC_RETRY_MS = 200.0  # between metadata requests while a new topic is not known yet


class SyncClient:
    def __init__(self, config: ClientConfig, metadata: Metadata | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.metadata = metadata or Metadata(config)
        self.client = NetworkClient(config, self.metadata, clock)

    def now(self) -> float:
        return self.client.now()

    def deadline(self, timeout_ms: float | None = None) -> float:
        return self.now() + (self.config.default_api_timeout_ms if timeout_ms is None
                             else timeout_ms)

    def poll_until(self, done: Callable[[], bool], deadline_ms: float, what: str) -> None:
        """Poll until ``done()`` or the deadline (KafkaTimeoutError naming ``what``)."""
        while not done():
            self._raise_fatal()
            now = self.now()
            if now >= deadline_ms:
                raise KafkaTimeoutError(f"timed out waiting for {what}")
            self.client.poll(min(deadline_ms - now, _IDLE_POLL_MS), now)

    def poll_until_or(self, done: Callable[[], bool], deadline_ms: float) -> bool:
        """Poll until ``done()`` or the deadline; False (no error) if the deadline came first."""
        while not done():
            self._raise_fatal()
            now = self.now()
            if now >= deadline_ms:
                return False
            self.client.poll(min(deadline_ms - now, _IDLE_POLL_MS), now)
        return True

    def _raise_fatal(self) -> None:
        if self.client.fatal_error is not None:
            raise self.client.fatal_error

    def wait(self, future: RequestFuture, deadline_ms: float, what: str = "a response") -> Any:
        self.poll_until(lambda: future.is_done, deadline_ms, what)
        if future.exception is not None:
            raise future.exception
        return future.value

    def await_ready(self, node_id: int, deadline_ms: float, fail_fast: bool = False) -> None:
        """Wait until ``node_id`` can take a request. With ``fail_fast`` a failed connection
        attempt raises NodeNotReadyError at once (the caller has other nodes to try)."""
        while not self.client.ready(node_id, self.now()):
            self._raise_fatal()
            if fail_fast and self.client.connection_failed(node_id):
                error = self.metadata.last_error
                raise NodeNotReadyError(f"node {node_id} is not reachable"
                                        + (f" ({error})" if error else ""))
            now = self.now()
            if now >= deadline_ms:
                error = self.metadata.last_error
                raise KafkaTimeoutError(f"node {node_id} did not become ready"
                                        + (f" (last error: {error})" if error else ""))
            delay = self.client.connection_delay(node_id, now)
            self.client.poll(min(deadline_ms - now, delay or _IDLE_POLL_MS), now)

    def request(self, node_id: int, api_key: int, body: Any, deadline_ms: float,
                timeout_ms: float | None = None, fail_fast: bool = False) -> Any:
        """Send to ``node_id`` once it is ready and wait for the decoded response."""
        self.await_ready(node_id, deadline_ms, fail_fast)
        future = self.client.send(node_id, api_key, body, self.now(), timeout_ms=timeout_ms)
        return self.wait(future, deadline_ms)

    def request_any(self, api_key: int, body: Any, deadline_ms: float) -> Any:
        """Send to the least loaded node, retrying other nodes on connection errors."""
        while True:
            node = self.any_node(deadline_ms)
            try:
                return self.request(node, api_key, body, deadline_ms, fail_fast=True)
            except KafkaTimeoutError:
                raise
            except Exception as e:
                if not is_retriable(e) or self.now() >= deadline_ms:
                    raise
                log.debug("request to node %d failed, trying again: %s", node, e)
                self.client.poll(self.config.retry_backoff_ms, self.now())

    def any_node(self, deadline_ms: float) -> int:
        while True:
            self._raise_fatal()
            now = self.now()
            node = self.client.least_loaded_node(now)
            if node is not None:
                return node
            if now >= deadline_ms:
                raise KafkaTimeoutError("no broker is reachable")
            self.client.poll(min(deadline_ms - now, self.config.reconnect_backoff_ms), now)

    def refresh_metadata(self, topics: tuple[str, ...] | list[str], deadline_ms: float) -> Cluster:
        """Fetch metadata now (tracking ``topics`` from now on); return the new cluster."""
        self.metadata.add_topics(*topics)
        while True:
            version = self.metadata.request_update()

            def updated(asked: int = version) -> bool:
                return self.metadata.version > asked

            try:
                self.poll_until(updated, deadline_ms, "metadata")
            except KafkaTimeoutError as e:
                error = self.metadata.last_error
                if error is not None:
                    raise KafkaTimeoutError(f"timed out waiting for metadata: {error}") from error
                raise e
            cluster = self.metadata.cluster
            # A request already in flight before the topics were added answers without them:
            # ask again until an answer names every topic (present, or with its error).
            unasked = self.metadata.unasked
            if all((t in cluster.topics or cluster.topic_error(t) is not None)
                   and t not in unasked for t in topics) or self.now() >= deadline_ms:
                return cluster

    def await_topic(self, topic: str, deadline_ms: float) -> int | None:
        """The partition count of ``topic`` once metadata shows it; None if not by the deadline.

        A topic created a moment ago is not in every broker's metadata yet, and the brokers
        asked in turn may disagree: keep asking (as a producer waits up to max.block.ms). A
        topic the principal may not describe raises TopicAuthorizationFailed at once: it may
        exist, and waiting would not make it visible.
        """
        answered = False
        while True:
            try:
                cluster = self.refresh_metadata([topic], deadline_ms)
                count = cluster.partition_count(topic)
                if isinstance(cluster.topic_error(topic), TopicAuthorizationFailed):
                    raise TopicAuthorizationFailed(
                        f"topic {topic!r}: this principal may not describe it (an ACL allowing "
                        "Describe, or Read or Write, which imply it, is needed)")
            except KafkaTimeoutError:
                if answered:  # the brokers did answer, without the topic
                    return None
                raise
            answered = True
            now = self.now()
            if count is not None or now >= deadline_ms:
                return count
            self.client.poll(min(TOPIC_RETRY_MS, deadline_ms - now), now)

    def leader_for(self, tp: TopicPartition, deadline_ms: float) -> int:
        """The leader of ``tp``, refreshing metadata until there is one.

        A topic the broker says does not exist, or a partition beyond its partition count,
        raises UnknownTopicOrPartition at once (a reader of existing data should not wait
        for it to appear); a partition without a leader is waited for until the deadline.
        A partition beyond the *cached* count is looked up again first: the topic may have
        grown since (CreatePartitions).
        """
        cluster = self.metadata.cluster
        count = cluster.partition_count(tp.topic)
        if (tp.topic not in self.metadata.topics or cluster.is_bootstrap
                or cluster.topic_error(tp.topic) is not None
                or (count is not None and tp.partition >= count)):
            # Unknown so far, known as missing, or not that large: it may have changed since.
            cluster = self.refresh_metadata([tp.topic], deadline_ms)
        while True:
            leader = cluster.leader_for(tp)
            if leader is not None:
                return leader
            error = cluster.topic_error(tp.topic)
            if error is not None and (isinstance(error, UnknownTopicOrPartition)
                                      or not error.retriable):
                raise error
            count = cluster.partition_count(tp.topic)
            if count is not None and not 0 <= tp.partition < count:
                raise UnknownTopicOrPartition(f"{tp} does not exist: topic {tp.topic!r} has "
                                              f"{count} partition(s)")
            if self.now() + self.config.retry_backoff_ms >= deadline_ms:
                raise KafkaTimeoutError(f"no leader known for {tp}")
            self.client.poll(self.config.retry_backoff_ms, self.now())
            cluster = self.refresh_metadata([tp.topic], deadline_ms)

    def close(self) -> None:
        self.client.close()
