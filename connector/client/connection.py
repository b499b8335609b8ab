"""One TCP connection to one broker: connect, negotiate API versions, pipeline requests.

States (one way, except back to DISCONNECTED on any failure)::

    DISCONNECTED --connect()--> CONNECTING --TCP up--> [HANDSHAKING] --> NEGOTIATING
         ^                                                                    |
         |                    READY <-- [AUTHENTICATING] <-- ApiVersions -----+
         +------ close(error): every in-flight request fails with that error

* **HANDSHAKING** (``security.protocol`` SSL or SASL_SSL): the TLS handshake, non-blocking,
  driven by the selector (``handshake_events`` says what it waits for). A failed handshake
  (untrusted certificate, wrong host name, a port that does not speak TLS) closes the
  connection with :class:`AuthenticationError`.
* **AUTHENTICATING** (SASL_PLAINTEXT or SASL_SSL): after ApiVersions, SaslHandshake v1
  names ``sasl.mechanism``, then SaslAuthenticate requests carry the mechanism's tokens
  (KIP-152) until it is done; a refusal closes with :class:`AuthenticationError` carrying
  the broker's message. A plaintext client that gets TLS bytes back (a TLS port) fails
  the same way, at once.

* **NEGOTIATING**: the first request on a new connection is ApiVersions at the highest
  version this codec knows. For each API the connection then uses the highest version
  both sides implement (``min(our max, broker max)``, provided it is at least both
  minimums); an API the broker lacks, or whose ranges do not overlap, is unusable. A
  broker that does not know our ApiVersions version answers UNSUPPORTED_VERSION in a v0
  body listing its own range (KIP-511); we retry once at the version it supports.
* **READY**: requests are written in order and their responses come back in the same
  order (Kafka guarantees it per connection), so in-flight requests wait in a FIFO and
  each response must carry the correlation id of the FIFO's head; anything else is a
  protocol violation that closes the connection. At most
  ``max.in.flight.requests.per.connection`` requests that expect a response are in
  flight; a request sent with ``expect_response=False`` (acks=0 produce) completes once
  its last byte has been handed to the kernel.
* **Reconnect backoff**: after a failure the next attempt waits ``reconnect.backoff.ms``,
  doubling with every consecutive failure up to ``reconnect.backoff.max.ms``; a
  connection that reaches READY resets the count.

Threading: owned by the single thread that owns the
:class:`~connector.client.network_client.NetworkClient`; nothing here locks. Sockets are
non-blocking: ``connect`` returns at once, reads and writes take what the kernel has.
"""

from __future__ import annotations

import enum
import errno
import logging
import selectors
import socket
import ssl
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker_sim.protocol import api
from broker_sim.protocol.api import APIS, ApiKey
from broker_sim.protocol.errors import (
    MalformedFrame,
    SaslAuthenticationFailed,
    UnsupportedVersion,
    error_for_code,
)
from broker_sim.protocol.framing import FrameDecoder, uninitialized_buffer

from .config import ClientConfig
from .errors import AuthenticationError, DisconnectError, IncompatibleBrokerError, NodeNotReadyError
from .request_future import RequestFuture
from .security import sasl_client, tls_context

log = logging.getLogger(__name__)

MAX_RESPONSE_SIZE = 1 << 30  # a fetch response is bounded by fetch.max.bytes anyway
#: What one ``recv`` takes while no large frame is being filled: enough for many small
#: responses at once, and little to copy when it turns out to be the start of a fetch
#: response (the rest of which is received in place).
_RECV_SIZE = FrameDecoder.DIRECT_FRAME_BYTES
_UNSUPPORTED_VERSION = UnsupportedVersion.code.to_bytes(2, "big")
_TLS_WRITE_SLICE = 256 * 1024
_TLS_WAIT = (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError, InterruptedError)
#: A TLS record (handshake or alert) starts with content type 0x15/0x16, version 0x03.
_TLS_RECORD_STARTS = (b"\x15\x03", b"\x16\x03")


class ConnectionState(enum.Enum):
    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    HANDSHAKING = "tls-handshake"
    NEGOTIATING = "negotiating"
    AUTHENTICATING = "authenticating"
    READY = "ready"


SETTING_UP = (ConnectionState.CONNECTING, ConnectionState.HANDSHAKING, ConnectionState.NEGOTIATING,
              ConnectionState.AUTHENTICATING)


@dataclass(slots=True)
class InFlightRequest:
    correlation_id: int
    api_key: int
    version: int
    future: RequestFuture
    sent_ms: float
    deadline_ms: float
    expect_response: bool


def negotiate_versions(broker_api_keys: list[Any]) -> dict[int, int]:
    """api_key -> the highest version both this codec and the broker implement."""
    versions: dict[int, int] = {}
    for entry in broker_api_keys:
        spec = APIS.get(entry.api_key)
        if spec is None:
            continue
        high = min(spec.max_version, entry.max_version)
        if high >= max(spec.min_version, entry.min_version):
            versions[entry.api_key] = high
    return versions


def _decode(request: InFlightRequest, payload: bytes | bytearray | memoryview) -> tuple[int, Any]:
    if request.api_key == ApiKey.API_VERSIONS and payload[4:6] == _UNSUPPORTED_VERSION:
        # KIP-511: the broker answered a version it does not know in a v0 body.
        return api.decode_response(ApiKey.API_VERSIONS, 0, payload)
    return api.decode_response(request.api_key, request.version, payload)


class BrokerConnection:
    """The connection to broker ``node_id`` at ``host:port`` (see the module docstring)."""

    def __init__(self, node_id: int, host: str, port: int, config: ClientConfig) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.config = config
        self.state = ConnectionState.DISCONNECTED
        self.sock: socket.socket | None = None
        self.api_versions: dict[int, int] = {}
        self.in_flight: deque[InFlightRequest] = deque()
        self._unsent: deque[tuple[memoryview, InFlightRequest | None]] = deque()
        self._decoder = FrameDecoder(MAX_RESPONSE_SIZE, uninitialized_buffer)
        self._next_correlation_id = 0
        self._received_any = False
        #: What the TLS handshake waits for (selector events), while HANDSHAKING.
        self.handshake_events = selectors.EVENT_WRITE
        self._failures = 0
        self._last_attempt_ms = -float("inf")
        self._setup_deadline_ms = 0.0
        #: Called with this connection just before its socket closes (the network client
        #: unregisters the socket from its selector, so a reused fd is never confused).
        self.on_socket_closing: Callable[[BrokerConnection], None] | None = None
        #: Called with this connection and the error after a connect attempt fails or an
        #: established connection is lost (the network client asks for fresh metadata:
        #: the broker may be gone and its partitions led elsewhere).
        self.on_failure: Callable[[BrokerConnection, BaseException], None] | None = None

    def __repr__(self) -> str:
        return f"<BrokerConnection node={self.node_id} {self.host}:{self.port} {self.state.value}>"

    # ---- state ----------------------------------------------------------------------
    @property
    def is_ready(self) -> bool:
        return self.state is ConnectionState.READY

    @property
    def is_disconnected(self) -> bool:
        return self.state is ConnectionState.DISCONNECTED

    def can_send_more(self) -> bool:
        return (self.state is ConnectionState.READY
                and len(self.in_flight) < self.config.max_in_flight_requests_per_connection)

    @property
    def wants_write(self) -> bool:
        return self.state is ConnectionState.CONNECTING or bool(self._unsent)

    def backoff_ms(self) -> float:
        if self._failures == 0:
            return 0.0
        base = self.config.reconnect_backoff_ms * 2 ** min(self._failures - 1, 30)
        return float(min(base, self.config.reconnect_backoff_max_ms))

    def connection_delay(self, now: float) -> float:
        """Milliseconds worth waiting before trying this connection again.

        Disconnected: the rest of the reconnect backoff (0: connect now). Connecting: until
        the setup deadline. Ready: forever — if it cannot take a request now, it has the
        most requests in flight, and their responses wake the selector anyway.
        """
        if self.state is ConnectionState.DISCONNECTED:
            return max(0.0, self._last_attempt_ms + self.backoff_ms() - now)
        if self.state is ConnectionState.READY:
            return float("inf")
        return max(0.0, self._setup_deadline_ms - now)

    def can_connect(self, now: float) -> bool:
        return self.state is ConnectionState.DISCONNECTED and self.connection_delay(now) <= 0

    # ---- connecting -----------------------------------------------------------------
    def connect(self, now: float) -> None:
        """Start a non-blocking connect; the selector reports completion as writable."""
        assert self.state is ConnectionState.DISCONNECTED
        self._last_attempt_ms = now
        self._setup_deadline_ms = now + self.config.socket_connection_setup_timeout_ms
        try:
            infos = socket.getaddrinfo(self.host, self.port, 0, socket.SOCK_STREAM)
            family, _, _, _, address = infos[0]
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError as e:
            self._failed(DisconnectError(f"cannot resolve {self.host}:{self.port}: {e}"))
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        code = sock.connect_ex(address)
        self.sock = sock
        if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN):
            self.close(DisconnectError(f"connect to {self.host}:{self.port} failed: "
                                       f"{errno.errorcode.get(code, code)}"))
            return
        self.state = ConnectionState.CONNECTING
        log.debug("connecting to node %d at %s:%d", self.node_id, self.host, self.port)

    def finish_connect(self, now: float) -> None:
        """The socket became writable while CONNECTING: check the outcome, then start TLS
        or negotiate."""
        assert self.sock is not None
        code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            self.close(DisconnectError(f"connect to {self.host}:{self.port} failed: "
                                       f"{errno.errorcode.get(code, code)}"))
            return
        if self.config.uses_tls:
            try:
                self.sock = tls_context(self.config).wrap_socket(
                    self.sock, server_hostname=self.host, do_handshake_on_connect=False)
            except (ssl.SSLError, OSError) as e:
                self.close(AuthenticationError(f"TLS set-up for broker {self.node_id} "
                                               f"({self.host}:{self.port}) failed: {e}"))
                return
            self.state = ConnectionState.HANDSHAKING
            self.handshake(now)
            return
        self._negotiate(now)

    def _negotiate(self, now: float) -> None:
        self.state = ConnectionState.NEGOTIATING
        self._send_api_versions(APIS[ApiKey.API_VERSIONS].max_version, now)

    def handshake(self, now: float) -> None:
        """One step of the TLS handshake (the selector reported ``handshake_events``)."""
        sock: Any = self.sock
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            self.handshake_events = selectors.EVENT_READ
            return
        except ssl.SSLWantWriteError:
            self.handshake_events = selectors.EVENT_WRITE
            return
        except (ssl.SSLError, OSError) as e:
            hint = "" if isinstance(e, ssl.SSLCertVerificationError) else \
                " (is it a TLS listener? security.protocol must match the broker's listener)"
            self.close(AuthenticationError(f"TLS handshake with broker {self.node_id} "
                                           f"({self.host}:{self.port}) failed: {e}{hint}"))
            return
        log.debug("node %d: %s established", self.node_id, sock.version())
        self._negotiate(now)

    def _send_api_versions(self, version: int, now: float) -> None:
        future = RequestFuture()
        future.add_callback(lambda body: self._on_api_versions(version, body, now))
        future.add_errback(lambda e: None)  # close() already reported the failure
        body = {"client_software_name": "pyq", "client_software_version": "0.1.0"}
        self._enqueue(ApiKey.API_VERSIONS, version, body, future, now,
                      self.config.socket_connection_setup_timeout_ms, True)

    def _on_api_versions(self, version: int, body: Any, now: float) -> None:
        if body.error_code == UnsupportedVersion.code and version > 0:
            theirs = [k for k in body.api_keys if k.api_key == ApiKey.API_VERSIONS]
            retry = min(theirs[0].max_version, version - 1) if theirs else 0
            self._send_api_versions(retry, now)
            return
        if body.error_code:
            self.close(IncompatibleBrokerError(f"ApiVersions failed with error {body.error_code}"))
            return
        self.api_versions = negotiate_versions(body.api_keys)
        if self.config.uses_sasl:
            self._authenticate(now)
            return
        self._ready()

    def _ready(self) -> None:
        self.state = ConnectionState.READY
        self._failures = 0
        log.debug("node %d ready; versions %s", self.node_id, self.api_versions)

    # ---- SASL -----------------------------------------------------------------------
    def _auth_failed(self, why: str) -> None:
        oauth = self.config.oauthbearer
        who = oauth.identity if oauth is not None else self.config.sasl_username
        self.close(AuthenticationError(
            f"SASL {self.config.sasl_mechanism} authentication of {who!r} "
            f"with broker {self.node_id} ({self.host}:{self.port}) failed: {why}"))

    def _authenticate(self, now: float) -> None:
        self.state = ConnectionState.AUTHENTICATING
        if ApiKey.SASL_HANDSHAKE not in self.api_versions or \
                ApiKey.SASL_AUTHENTICATE not in self.api_versions:
            self._auth_failed("the broker implements no SaslHandshake v1 / SaslAuthenticate")
            return
        mechanism = sasl_client(self.config)
        timeout = self.config.socket_connection_setup_timeout_ms

        def on_handshake(body: Any) -> None:
            if body.error_code:
                self._auth_failed(f"{error_for_code(body.error_code).__name__}; the broker enables "
                                  f"{', '.join(body.mechanisms) or 'no mechanism'}")
                return
            try:
                first = mechanism.first()
            except SaslAuthenticationFailed as e:  # OAUTHBEARER: no token from the endpoint
                self._auth_failed(e.message)
                return
            step(first)

        def step(token: bytes) -> None:
            future = RequestFuture()
            future.add_callback(on_answer)
            future.add_errback(lambda e: None)  # close() already reported the failure
            self._enqueue(ApiKey.SASL_AUTHENTICATE, self.api_versions[ApiKey.SASL_AUTHENTICATE],
                          {"auth_bytes": token}, future, now, timeout, True)

        def on_answer(body: Any) -> None:
            if body.error_code:
                self._auth_failed(body.error_message or error_for_code(body.error_code).__name__)
                return
            try:
                token = mechanism.respond(bytes(body.auth_bytes))
            except SaslAuthenticationFailed as e:
                self._auth_failed(e.message)
                return
            if token is None:
                log.debug("node %d: authenticated as %s (%s)", self.node_id,
                          self.config.sasl_username, mechanism.mechanism)
                self._ready()
            else:
                step(token)

        future = RequestFuture()
        future.add_callback(on_handshake)
        future.add_errback(lambda e: None)
        self._enqueue(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism.mechanism}, future, now,
                      timeout, True)

    # ---- requests -------------------------------------------------------------------
    def version_for(self, api_key: int) -> int:
        version = self.api_versions.get(api_key)
        if version is None:
            raise IncompatibleBrokerError(
                f"broker {self.node_id} implements no version of {APIS[api_key].name} "
                f"that this client supports (v{APIS[api_key].min_version}-"
                f"v{APIS[api_key].max_version})")
        return version

    def send(self, api_key: int, body: Any, now: float, timeout_ms: float,
             expect_response: bool = True, version: int | None = None) -> RequestFuture:
        """Queue a request (written as far as the socket takes it now)."""
        if self.state is not ConnectionState.READY:
            raise NodeNotReadyError(f"node {self.node_id} is {self.state.value}")
        future = RequestFuture()
        self._enqueue(api_key, self.version_for(api_key) if version is None else version,
                      body, future, now, timeout_ms, expect_response)
        return future

    def _enqueue(self, api_key: int, version: int, body: Any, future: RequestFuture,
                 now: float, timeout_ms: float, expect_response: bool) -> None:
        self._next_correlation_id = (self._next_correlation_id + 1) & 0x7FFFFFFF
        cid = self._next_correlation_id
        data = api.encode_request(api_key, version, cid, self.config.client_id, body)
        request = InFlightRequest(cid, api_key, version, future, now, now + timeout_ms,
                                  expect_response)
        if expect_response:
            self.in_flight.append(request)
        self._unsent.append((memoryview(data), None if expect_response else request))
        self.flush()

    def flush(self) -> list[InFlightRequest]:
        """Write what the socket takes; returns no-response requests now fully written."""
        done: list[InFlightRequest] = []
        sock = self.sock
        unsent = self._unsent
        # TLS: fixed slices, so a write TLS could not finish is retried with the same bytes.
        limit = _TLS_WRITE_SLICE if self.config.uses_tls else None
        while unsent and sock is not None:
            view, request = unsent[0]
            try:
                n = sock.send(view if limit is None else view[:limit])
            except _TLS_WAIT:
                break
            except OSError as e:
                self.close(self._io_error("write to", e))
                return done
            if n < len(view):
                unsent[0] = (view[n:], request)
                break
            unsent.popleft()
            if request is not None:
                done.append(request)
        for request in done:
            request.future.success(None)
        return done

    def receive(self) -> list[tuple[InFlightRequest, Any]]:
        """Read what has arrived; complete each whole response's future and return them.

        Whole frames are taken out as they complete, so a large response (a fetch) gets a
        buffer of its own as soon as its size is known and the rest of it is received
        straight into that buffer (``recv_into``): one copy, by the kernel.
        """
        sock = self.sock
        assert sock is not None
        tls = self.config.uses_tls
        decoder = self._decoder
        frames: list[bytearray] = []
        error: MalformedFrame | None = None
        eof = False
        try:
            while True:
                direct = decoder.direct_buffer()
                if direct is not None:
                    received = sock.recv_into(direct)
                    if not received:
                        eof = True
                        break
                    decoder.advance(received)
                    drained = received < len(direct)
                else:
                    chunk = sock.recv(_RECV_SIZE)
                    if not chunk:
                        eof = True  # answer what arrived first: it may say why (a failed login)
                        break
                    if not self._received_any:
                        self._received_any = True
                        if not tls and chunk[:2] in _TLS_RECORD_STARTS:
                            self.close(AuthenticationError(
                                f"broker {self.node_id} ({self.host}:{self.port}) answered with TLS: "
                                f"it is a TLS listener, but security.protocol is "
                                f"{self.config.security_protocol}"))
                            return []
                    decoder.feed(chunk)
                    drained = len(chunk) < _RECV_SIZE
                while (payload := decoder.next_frame()) is not None:
                    frames.append(payload)
                if drained and not tls:
                    break  # TLS hands out one record at a time: read until it wants more
        except MalformedFrame as e:
            error = e
        except _TLS_WAIT:
            pass
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):  # closed, with or without close_notify
            eof = True
        except OSError as e:
            self.close(self._io_error("read from", e))
            return []
        out = []
        try:
            for payload in frames:
                if not self.in_flight:
                    raise MalformedFrame("response with no request in flight")
                request = self.in_flight[0]  # popped only once decoded: close() fails it
                cid, body = _decode(request, payload)
                if cid != request.correlation_id:
                    raise MalformedFrame(f"correlation id {cid} does not match the oldest "
                                         f"request in flight ({request.correlation_id})")
                self.in_flight.popleft()
                out.append((request, body))
        except MalformedFrame as e:
            error = e
        # Complete after decoding: a callback may send on, or close, this connection.
        for request, body in out:
            request.future.success(body)
        if error is not None:
            self.close(DisconnectError(f"bad response from node {self.node_id}: {error}"))
        elif eof and self.sock is sock:
            self.close(DisconnectError(f"node {self.node_id} closed the connection"))
        return out

    def _io_error(self, what: str, e: OSError) -> BaseException:
        """A failed read or write. A TLS alert from the broker (TLS 1.3 sends "certificate
        required" or "unknown CA" after the client's side of the handshake is done) is a
        refusal, not a network problem: an AuthenticationError, not retried."""
        if isinstance(e, ssl.SSLError) and "ALERT" in str(getattr(e, "reason", "") or ""):
            return AuthenticationError(f"broker {self.node_id} ({self.host}:{self.port}) refused "
                                       f"the TLS session: {e.reason} (a client certificate it "
                                       "trusts may be required: ssl.certificate.location)")
        return DisconnectError(f"{what} node {self.node_id} failed: {e}")

    def expired_request(self, now: float) -> InFlightRequest | None:
        """The oldest in-flight request whose deadline has passed, if any."""
        for request in self.in_flight:
            if request.deadline_ms <= now:
                return request
        return None

    def next_deadline(self) -> float:
        deadline = min((r.deadline_ms for r in self.in_flight), default=float("inf"))
        if self.state in SETTING_UP:
            deadline = min(deadline, self._setup_deadline_ms)
        return deadline

    def setup_timed_out(self, now: float) -> bool:
        return self.state in SETTING_UP and now >= self._setup_deadline_ms

    # ---- closing --------------------------------------------------------------------
    def close(self, error: BaseException | None = None) -> None:
        """Close the socket; fail every request in flight or unsent with ``error``."""
        was_ready = self.state is ConnectionState.READY
        if self.sock is not None:
            if self.on_socket_closing is not None:
                self.on_socket_closing(self)
            try:
                self.sock.close()
            except OSError as e:  # already broken; nothing more to release
                log.debug("closing socket of node %d: %s", self.node_id, e)
        self.sock = None
        if error is not None and not was_ready:
            self._failed(error)
        elif error is not None:
            self._failures += 1
            log.info("connection to node %d (%s:%d) lost: %s", self.node_id, self.host,
                     self.port, error)
        self.state = ConnectionState.DISCONNECTED
        self.api_versions = {}
        self._received_any = False
        self.handshake_events = selectors.EVENT_WRITE
        self._decoder = FrameDecoder(MAX_RESPONSE_SIZE, uninitialized_buffer)
        pending = list(self.in_flight) + [r for _, r in self._unsent if r is not None]
        self.in_flight.clear()
        self._unsent.clear()
        if error is not None and was_ready and self.on_failure is not None:
            self.on_failure(self, error)  # before the futures fail: their errbacks may retry
        failure = error or DisconnectError(f"connection to node {self.node_id} closed")
        for request in pending:
            if not request.future.is_done:
                request.future.failure(failure)

    def _failed(self, error: BaseException) -> None:
        self._failures += 1
        self.state = ConnectionState.DISCONNECTED
        log.warning("connection to node %d (%s:%d) failed (attempt %d, next in %.0f ms): %s",
                    self.node_id, self.host, self.port, self._failures, self.backoff_ms(), error)
        if self.on_failure is not None:
            self.on_failure(self, error)
