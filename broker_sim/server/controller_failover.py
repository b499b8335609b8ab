"""A broker's link to a controller quorum: every controller's address, following the active
one.

``controller=127.0.0.1:9093,127.0.0.1:9094,127.0.0.1:9095`` gives a broker every controller
of the cluster. :class:`QuorumControllerClient` talks to one of them at a time, exactly as
:class:`~.controller_client.RemoteControllerClient` talks to a lone controller; when a call
fails — a connection refused or reset, which is also how a standby controller refuses a
broker's heartbeat, metadata poll or forwarded change (NOT_CONTROLLER: it closes the
connection) — it moves to the next address and the call raises NetworkException
(retriable): the heartbeat and metadata loops try again on their own schedule; a forwarded
admin request is tried at the next address until it is answered (or for
``FORWARD_RETRY_S``), so the client's connection survives a controller failover. So a broker finds the new active
controller within one try per standby after an election.

Threading: several threads call at once (the heartbeat loop, the metadata poller, request
handlers forwarding changes). ``_move_lock`` serialises moves; a failure on an address the
client already left does not move it again.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from ..network.blocking_client import BlockingConnection
from ..protocol.errors import NetworkException
from .controller_client import RemoteControllerClient

log = logging.getLogger(__name__)


def parse_controllers(spec: str) -> list[tuple[str, int]]:
    """``host:port[,host:port...]``, as the broker's ``controller`` option holds it.

    >>> parse_controllers("127.0.0.1:9093, 127.0.0.1:9094")
    [('127.0.0.1', 9093), ('127.0.0.1', 9094)]
    """
    out = []
    for item in spec.split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"controller={spec!r} is invalid: HOST:PORT[,HOST:PORT...] is "
                             "allowed")
        out.append((host, int(port)))
    return out


class QuorumControllerClient(RemoteControllerClient):
    """``request_timeout_s`` bounds a heartbeat or AlterPartition: a controller that does not
    answer within it (paused, partitioned away) is left for the next one, well before the
    broker's session could expire at the new active controller (half a session by default)."""

    FORWARD_RETRY_S = 10.0
    FORWARD_BACKOFF_S = 0.05

    def __init__(self, addresses: list[tuple[str, int]], broker_id: int,
                 request_timeout_s: float = 1.5) -> None:
        if not addresses:
            raise ValueError("controller='' is invalid: at least one HOST:PORT is needed")
        self.addresses = list(addresses)
        self._index = 0
        self._move_lock = threading.Lock()
        self.request_timeout_s = request_timeout_s
        super().__init__(*self.addresses[0], broker_id)
        self._conn = BlockingConnection(self.host, self.port, f"broker-{broker_id}",
                                        timeout_s=request_timeout_s)

    def _move_on(self, failed: tuple[str, int]) -> None:
        """The controller at ``failed`` did not answer: use the next address."""
        with self._move_lock:
            if (self.host, self.port) != failed:
                return  # another caller moved already
            self._index = (self._index + 1) % len(self.addresses)
            self.host, self.port = self.addresses[self._index]
            log.info("broker %d: controller %s:%d did not answer; trying %s:%d",
                     self.broker_id, failed[0], failed[1], self.host, self.port)
            old = [self._conn, self._metadata_conn]
            self._conn = BlockingConnection(self.host, self.port, f"broker-{self.broker_id}",
                                            timeout_s=self.request_timeout_s)
            self._metadata_conn = BlockingConnection(
                self.host, self.port, f"broker-{self.broker_id}-metadata", timeout_s=10.0)
            with self._admin_lock:
                old.extend(self._admin_idle)
                self._admin_idle = []
        for conn in old:
            conn.close()

    def _call(self, key: int, version: int, body: Any) -> Any:
        address = (self.host, self.port)
        try:
            return super()._call(key, version, body)
        except NetworkException:
            self._move_on(address)
            raise

    def _call_admin(self, key: int, version: int, body: Any) -> Any:
        """A forwarded change goes to the active controller wherever it is now: on a failure
        the next address is tried, with a short backoff, for up to
        ``FORWARD_RETRY_S`` (an election takes well under that), as Kafka's forwarding
        manager retries until the request's timeout; only then does NetworkException reach
        the request handler. A controller that failed mid-request may have applied the
        change: the retry then gets the controller's answer to a repeat (a topic that
        exists, say), which is what a client retrying on its own would get."""
        deadline = time.monotonic() + self.FORWARD_RETRY_S
        while True:
            try:
                return self._call_admin_once(key, version, body)
            except NetworkException:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(self.FORWARD_BACKOFF_S)

    def _call_admin_once(self, key: int, version: int, body: Any) -> Any:
        address = (self.host, self.port)
        with self._admin_lock:
            conn = self._admin_idle.pop() if self._admin_idle else None
        if conn is not None and (conn.host, conn.port) != address:
            conn.close()  # pooled before a move: to a controller this client has left
            conn = None
        if conn is None:
            conn = BlockingConnection(*address, f"broker-{self.broker_id}-admin",
                                      timeout_s=self.ADMIN_TIMEOUT_S)
        try:
            return conn.request(key, version, body)
        except NetworkException:
            self._move_on(address)
            raise
        finally:
            with self._admin_lock:
                self._admin_idle.append(conn)

    def fetch_metadata(self, body: dict) -> Any:
        address = (self.host, self.port)
        try:
            return super().fetch_metadata(body)
        except NetworkException:
            self._move_on(address)
            raise
