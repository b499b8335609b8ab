"""All connections of one client, multiplexed on one selector and driven by ``poll``.

The network client keeps one :class:`~connector.client.connection.BrokerConnection` per
broker node (addresses come from the current :class:`~connector.client.metadata.Cluster`,
bootstrap nodes included) and does all socket I/O inside :meth:`NetworkClient.poll`:

1. if a metadata refresh is due (:meth:`Metadata.time_to_next_update`), send a Metadata
   request to the least loaded node (at most one in flight);
2. wait on the selector for at most ``timeout_ms`` — less if a request deadline or a
   connection-setup deadline comes first — or until :meth:`wakeup` is called;
3. finish connects, write pending bytes, read and decode responses, completing each
   request's :class:`~connector.client.request_future.RequestFuture` (its callbacks run
   right here, on the polling thread);
4. close connections with a request older than ``request.timeout.ms`` (responses on a
   connection are ordered, so everything behind a timed-out request is lost too: every
   request in flight on it fails with :class:`RequestTimeoutError`) and connections
   that did not come up within ``socket.connection.setup.timeout.ms``.

A failed TLS handshake or SASL authentication (:class:`AuthenticationError`) is fatal for
the client: it is kept in :attr:`NetworkClient.fatal_error` and in the metadata, and every
caller waiting on this client raises it instead of retrying the same credentials.

Every failed connect attempt and every lost connection requests a metadata refresh (as
Kafka's ``handleServerDisconnect`` does): a dead broker's partitions get new leaders,
and the client must learn them even when nothing is sent to the dead broker any more
(the producer drains nothing for a node that is not ready, so no produce error would
ever ask for the refresh). Refreshes are still at most one per ``retry.backoff.ms``.

Typical use by an I/O loop::

    if client.ready(node, now):               # starts connecting if needed
        future = client.send(node, ApiKey.PRODUCE, body, now)
        future.add_callback(handle_response)
    client.poll(timeout_ms, now)

Threading: exactly one thread owns a NetworkClient and calls everything except
:meth:`wakeup` (the producer's sender thread; the caller's thread for the fetcher and
admin, which use :class:`~connector.client.sync_client.SyncClient`). :meth:`wakeup` may
be called from any thread: it writes a byte to a socket pair watched by the selector.
"""

from __future__ import annotations

import logging
import random
import selectors
import socket
from typing import Any

from broker_sim.common import SYSTEM_CLOCK, Clock
from broker_sim.protocol.api import ApiKey

from .config import ClientConfig
from .connection import BrokerConnection, ConnectionState
from .errors import AuthenticationError, DisconnectError, NodeNotReadyError, RequestTimeoutError
from .metadata import Metadata
from .request_future import RequestFuture

log = logging.getLogger(__name__)

_FOREVER_MS = 3_600_000.0


class NetworkClient:
    def __init__(self, config: ClientConfig, metadata: Metadata | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.metadata = metadata
        self.clock = clock
        self._selector = selectors.DefaultSelector()
        self._connections: dict[int, BrokerConnection] = {}
        self._registered: dict[int, tuple[socket.socket, int]] = {}
        self._addresses: dict[int, tuple[str, int]] = {}
        self._metadata_future: RequestFuture | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._wakeup_pending = False
        self._closed = False
        #: The first authentication failure: the client is unusable from then on.
        self.fatal_error: AuthenticationError | None = None

    def now(self) -> float:
        return self.clock.monotonic_ms()

    # ---- nodes and connections ------------------------------------------------------
    def add_node(self, node_id: int, host: str, port: int) -> None:
        """Make a node known without metadata (tests, or a coordinator's address)."""
        self._addresses[node_id] = (host, port)

    def _address(self, node_id: int) -> tuple[str, int] | None:
        if self.metadata is not None:
            node = self.metadata.cluster.node(node_id)
            if node is not None:
                self._addresses[node_id] = (node.host, node.port)
        return self._addresses.get(node_id)

    def _connection(self, node_id: int) -> BrokerConnection:
        conn = self._connections.get(node_id)
        address = self._address(node_id)
        if conn is not None and (address is None or address == (conn.host, conn.port)):
            return conn
        if address is None:
            raise NodeNotReadyError(f"node {node_id} is not known")
        if conn is not None:  # the node moved: start over at the new address
            self._close_connection(conn, DisconnectError(f"node {node_id} changed address"))
        conn = BrokerConnection(node_id, address[0], address[1], self.config)
        conn.on_socket_closing = self._unregister
        conn.on_failure = self._on_connection_failure
        self._connections[node_id] = conn
        return conn

    def ready(self, node_id: int, now: float) -> bool:
        """True if a request can be sent to ``node_id`` now; otherwise start connecting
        (never after an authentication failure)."""
        if self.fatal_error is not None:
            return False
        try:
            conn = self._connection(node_id)
        except NodeNotReadyError:
            return False
        if conn.is_ready:
            return conn.can_send_more()
        if conn.can_connect(now):
            conn.connect(now)
            self._update_interest(conn)
        return False

    def is_ready(self, node_id: int) -> bool:
        conn = self._connections.get(node_id)
        return conn is not None and conn.can_send_more()

    def connection_failed(self, node_id: int) -> bool:
        conn = self._connections.get(node_id)
        return conn is not None and conn.is_disconnected and conn.backoff_ms() > 0

    def connection_delay(self, node_id: int, now: float) -> float:
        """Milliseconds worth waiting before trying ``node_id`` again (see
        :meth:`BrokerConnection.connection_delay`); 0 for a node never tried."""
        conn = self._connections.get(node_id)
        return 0.0 if conn is None else conn.connection_delay(now)

    def in_flight_count(self, node_id: int | None = None) -> int:
        if node_id is not None:
            conn = self._connections.get(node_id)
            return 0 if conn is None else len(conn.in_flight)
        return sum(len(c.in_flight) for c in self._connections.values())

    def api_version(self, node_id: int, api_key: int) -> int:
        return self._connection(node_id).version_for(api_key)

    def least_loaded_node(self, now: float) -> int | None:
        """A ready node with the fewest requests in flight; else one that is connecting
        or may connect now; None if every known node is backing off."""
        if self.metadata is not None:
            nodes = list(self.metadata.cluster.brokers)
            if not nodes:  # an empty broker list would strand us: fall back to bootstrap
                nodes = list(self._addresses)
        else:
            nodes = list(self._addresses)
        if not nodes:
            return None
        start = random.randrange(len(nodes))
        best, best_load, connecting, connectable = None, None, None, None
        for i in range(len(nodes)):
            node = nodes[(start + i) % len(nodes)]
            conn = self._connections.get(node)
            if conn is not None and conn.is_ready:
                load = len(conn.in_flight)
                if load < self.config.max_in_flight_requests_per_connection and (
                        best_load is None or load < best_load):
                    best, best_load = node, load
            elif conn is not None and not conn.is_disconnected:
                connecting = node
            elif conn is None or conn.can_connect(now):
                connectable = node
        if best is not None:
            return best
        return connecting if connecting is not None else connectable

    # ---- requests -------------------------------------------------------------------
    def send(self, node_id: int, api_key: int, body: Any, now: float, *,
             expect_response: bool = True, timeout_ms: float | None = None,
             version: int | None = None) -> RequestFuture:
        """Send a request to a ready node (see :meth:`ready`); returns its future."""
        conn = self._connection(node_id)
        future = conn.send(api_key, body, now,
                           self.config.request_timeout_ms if timeout_ms is None else timeout_ms,
                           expect_response, version)
        self._update_interest(conn)
        return future

    # ---- the I/O loop ---------------------------------------------------------------
    def poll(self, timeout_ms: float, now: float) -> None:
        """Do all pending I/O, waiting up to ``timeout_ms`` for something to happen."""
        timeout = max(0.0, timeout_ms)
        if self.metadata is not None:
            timeout = min(timeout, self._maybe_update_metadata(now))
        for conn in self._connections.values():
            timeout = min(timeout, max(0.0, conn.next_deadline() - now))
        events = self._selector.select(timeout / 1000.0)
        now = self.now()
        for key, mask in events:
            conn = key.data
            if conn is None:
                self._drain_wakeups()
                # Cleared only after draining: a wakeup() that finds the flag still set
                # skips its write, and is safe to skip because poll() is returning anyway.
                self._wakeup_pending = False
                continue
            if conn.sock is not key.fileobj:
                continue  # closed and maybe reopened while handling an earlier event
            if conn.state is ConnectionState.CONNECTING:
                conn.finish_connect(now)
            elif conn.state is ConnectionState.HANDSHAKING:
                conn.handshake(now)
            else:
                if mask & selectors.EVENT_WRITE:
                    conn.flush()
                if mask & selectors.EVENT_READ and conn.sock is not None:
                    conn.receive()
        self._handle_timeouts(now)
        for conn in list(self._connections.values()):
            self._update_interest(conn)

    def _handle_timeouts(self, now: float) -> None:
        for conn in list(self._connections.values()):
            if conn.setup_timed_out(now):
                self._close_connection(conn, DisconnectError(
                    f"connection to node {conn.node_id} was not set up within "
                    f"{self.config.socket_connection_setup_timeout_ms} ms"))
                continue
            expired = conn.expired_request(now)
            if expired is not None:
                self._close_connection(conn, RequestTimeoutError(
                    f"request {expired.correlation_id} to node {conn.node_id} timed out after "
                    f"{now - expired.sent_ms:.0f} ms"))

    def _maybe_update_metadata(self, now: float) -> float:
        """Send a Metadata request if one is due; returns ms until it is worth checking again."""
        assert self.metadata is not None
        if self._metadata_future is not None:
            return _FOREVER_MS  # the request's own deadline bounds the wait
        wait = self.metadata.time_to_next_update(now)
        if wait > 0:
            return wait
        node = self.least_loaded_node(now)
        if node is None:
            return float(self.config.reconnect_backoff_ms)
        if not self.ready(node, now):
            delay = self.connection_delay(node, now)
            return delay if delay > 0 else float(self.config.reconnect_backoff_ms)
        metadata = self.metadata
        metadata.attempt_started(now)
        future = self.send(node, ApiKey.METADATA, metadata.request_body(), now)
        self._metadata_future = future

        def done(body: Any) -> None:
            self._metadata_future = None
            metadata.update(body, self.now())

        def failed(error: BaseException) -> None:
            self._metadata_future = None
            metadata.failed_update(error, self.now())

        future.add_callback(done)
        future.add_errback(failed)
        return _FOREVER_MS

    def wakeup(self) -> None:
        """Interrupt a blocked :meth:`poll` (any thread); cheap when one is pending."""
        if self._wakeup_pending:
            return
        self._wakeup_pending = True
        try:
            self._wake_w.send(b"\x00")
        except (BlockingIOError, InterruptedError):
            pass  # the pipe is full: a wakeup is pending anyway
        except OSError as e:
            log.debug("wakeup after close ignored: %s", e)

    def _drain_wakeups(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def _update_interest(self, conn: BrokerConnection) -> None:
        sock = conn.sock
        if sock is None:
            return
        old = self._registered.get(conn.node_id)
        if old is not None and old[0] is not sock:
            self._unregister(conn)
            old = None
        if conn.state is ConnectionState.CONNECTING:
            mask = selectors.EVENT_WRITE
        elif conn.state is ConnectionState.HANDSHAKING:
            mask = conn.handshake_events
        else:
            mask = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.wants_write else 0)
        if old is None:
            self._selector.register(sock, mask, conn)
        elif old[1] != mask:
            self._selector.modify(sock, mask, conn)
        self._registered[conn.node_id] = (sock, mask)

    # ---- closing --------------------------------------------------------------------
    def disconnect(self, node_id: int, error: BaseException | None = None) -> None:
        conn = self._connections.get(node_id)
        if conn is not None:
            self._close_connection(conn, error or DisconnectError(f"disconnected node {node_id}"))

    def _on_connection_failure(self, conn: BrokerConnection, error: BaseException) -> None:
        """A connect failed or a connection was lost: the broker may be gone and its
        partitions led by another, so refresh metadata (Kafka's handleServerDisconnect;
        refreshes stay at most one per ``retry.backoff.ms``). An authentication failure is
        fatal instead (see the module docstring)."""
        if isinstance(error, AuthenticationError):
            log.error("%s", error)
            if self.fatal_error is None:
                self.fatal_error = error
                if self.metadata is not None:
                    self.metadata.set_fatal(error)
            return
        if self.metadata is not None and not self._closed:
            self.metadata.request_update()

    def _unregister(self, conn: BrokerConnection) -> None:
        old = self._registered.pop(conn.node_id, None)
        if old is not None:
            try:
                self._selector.unregister(old[0])
            except (KeyError, ValueError, OSError) as e:
                log.debug("unregister of a closed socket: %s", e)

    def _close_connection(self, conn: BrokerConnection, error: BaseException) -> None:
        self._unregister(conn)
        conn.close(error)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for conn in list(self._connections.values()):
            self._unregister(conn)
            conn.close()  # no error: a deliberate close; pending requests still fail
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()
