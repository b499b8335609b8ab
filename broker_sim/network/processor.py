"""A network processor: one thread, one selector, many connections.

Life of a request on a connection::

    readable -> recv into the connection's FrameDecoder -> a whole frame?
      -> decode (sans-I/O codec) -> RequestChannel.send_request -> MUTE the connection
    ... a handler answers -> enqueue_response + wakeup
      -> write the response (partial writes wait for writable) -> UNMUTE
      -> a further frame already buffered? dispatch it at once; else read again.

Muting is what keeps responses in request order on a connection (kafka-python raises on
a reordered correlation id) while different connections are served concurrently: a muted
connection is not read, so at most one of its requests is in the broker at a time, and
pipelined requests wait in the socket buffer.

Bad input costs only its own connection: a frame larger than ``socket.request.max.bytes``
is refused from its 4-byte size prefix (the body is never read into memory), and a frame
that does not decode closes the connection after one log line. An ApiVersions request of a
version we do not know is answered with UNSUPPORTED_VERSION in a v0 body so that the
client can fall back (KIP-511).

TLS listeners: the socket is wrapped non-blocking and the handshake is driven by this same
selector loop (``do_handshake`` until it stops asking to read or write), so a slow or
silent peer holds no thread; garbage instead of a ClientHello fails the handshake and
closes only that connection. After the handshake, reads drain what TLS has already
decrypted (the selector cannot see it), and writes go in fixed-size slices so a write
that TLS could not finish is retried with the same bytes, as OpenSSL requires.

Zero-copy responses: a Fetch response may come as a list of parts, buffers and segment
file ranges (:class:`~broker_sim.protocol.primitives.ExternalBytes`, the log's
``FileRecords``). Buffers go out with ``send``; a file range with ``os.sendfile`` on the
non-blocking socket, resumed from where it stopped when the socket is writable again, so
a consumer with a small receive window holds only its own connection, never the
processor. Each range pins its segment (the reader guard) until its last byte is out or
the connection closes, so retention, a roll or the cleaner's swap cannot pull the file
from under a transfer; a truncation can, and once one has begun every further
``sendfile`` of the range is refused (:func:`.file_send.send_file_region`): the connection is
closed, its client having received a prefix of the response as it was read, never a
byte written after. TLS connections get the copying path: the handlers never give them
file ranges, and a range that reaches one anyway is read into memory here.
Large request frames (produce) are received straight into a buffer of their own
(:meth:`FrameDecoder.direct_buffer`), which the log then writes as is.

SASL listeners: until the connection's :class:`~.session.Session` is authenticated only
ApiVersions, SaslHandshake and SaslAuthenticate pass (anything else closes the
connection); after a v0 handshake the next frames are bare SASL tokens, handed on as
SaslAuthenticate requests of version ``RAW_SASL_VERSION``.

Idle connections (nothing read or written for ``connections.max.idle.ms``, no request in
the broker) are closed, as read on the broker's :class:`~broker_sim.common.clock.Clock`; connections are kept in least-recently-active order, so the check
looks at the oldest only. This also ends handshakes that never finish.

Metrics: each answered request is recorded in :attr:`Processor.stats` (a
:class:`~.request_stats.RequestStats`: API, latency since the frame was read, request and
response sizes) when its response is taken off the queue; :meth:`Processor.connection_counts`
counts open connections per listener. Both are read by the metrics endpoint at scrape time.

Threading: every attribute is owned by this processor's thread, except the two
thread-safe queues (new connections from the acceptor, responses from handlers) and the
wake-up socket that other threads write to; ``stats`` and ``connection_counts`` may be read
(never written) from any thread.
"""

from __future__ import annotations

import logging
import os
import queue
import selectors
import socket
import ssl
from collections import OrderedDict
from typing import Any

from ..common.clock import SYSTEM_CLOCK, Clock
from ..common.shutdownable_thread import ShutdownableThread
from ..protocol import api
from ..protocol.errors import MalformedFrame, UnsupportedVersion
from ..protocol.framing import FrameDecoder, FrameTooLarge, uninitialized_buffer
from ..protocol.header import API_VERSIONS_KEY, RequestHeader
from ..protocol.primitives import ExternalBytes, ExternalBytesChanged
from ..protocol.schema import Data
from ..security.principal import from_certificate
from .connection_quotas import ConnectionQuotas
from .file_send import send_file_region
from .listener import Listener
from .request_channel import Request, RequestChannel, Response
from .request_stats import RequestStats
from .session import Session

log = logging.getLogger(__name__)

#: One ``recv`` while no large frame is being filled: many small requests at once, and
#: little to move when it is the start of a produce request (the rest of which is
#: received straight into the frame's own buffer).
_RECV_SIZE = FrameDecoder.DIRECT_FRAME_BYTES
_TLS_WRITE_SLICE = 256 * 1024
#: What one read of a TLS connection takes at most (TLS is always fed through the decoder).
_TLS_RECV_SIZE = 256 * 1024
#: The version a bare SASL token (after SaslHandshake v0) is handed on with.
RAW_SASL_VERSION = -1
#: What may pass before a SASL connection has authenticated.
_PRE_AUTH_APIS = frozenset({API_VERSIONS_KEY, api.ApiKey.SASL_HANDSHAKE, api.ApiKey.SASL_AUTHENTICATE})
_TLS_WAIT = (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError, InterruptedError)
#: Handshake failures that mean the peer does not speak TLS at all (a plaintext client)
#: and after which OpenSSL sends no alert of its own. Not PACKET_LENGTH_TOO_LONG: OpenSSL
#: answers it with record_overflow itself, and a second fatal alert after it is wrong.
_NOT_TLS = frozenset({"WRONG_VERSION_NUMBER", "HTTP_REQUEST", "UNKNOWN_PROTOCOL",
                      "RECORD_LAYER_FAILURE"})
#: A TLS fatal alert, protocol_version (70), as a bare record: what a TLS server answers a
#: peer that does not speak TLS, so a plaintext Kafka client can say "this is a TLS port"
#: instead of retrying. OpenSSL closes without it; we write these seven bytes ourselves.
_PROTOCOL_VERSION_ALERT = b"\x15\x03\x03\x00\x02\x02\x46"


class _FileChanged(Exception):
    """A file range of a zero-copy response changed (or went) while it was being sent."""


class Connection:
    __slots__ = ("id", "sock", "ip", "decoder", "out", "part", "out_pos", "muted",
                 "interest", "session", "tls", "handshaking", "handshake_interest", "last_active",
                 "close_after_write")

    def __init__(self, conn_id: str, sock: socket.socket, ip: str, max_frame: int,
                 listener: Listener, now_ms: int) -> None:
        self.id = conn_id
        self.sock = sock
        self.ip = ip
        self.decoder = FrameDecoder(max_frame, uninitialized_buffer)
        #: The response being written: its parts in wire order (buffers and file ranges),
        #: the part being written and the position in it; None when nothing is pending.
        self.out: list[Any] | None = None
        self.part = 0
        self.out_pos = 0
        self.muted = False
        self.interest = 0
        self.session = Session(listener, ip)
        self.tls = listener.ssl_context is not None
        self.handshaking = self.tls
        self.handshake_interest = selectors.EVENT_READ  # the server waits for a ClientHello
        self.last_active = now_ms  # the processor's clock, milliseconds
        self.close_after_write = False


class Processor(ShutdownableThread):
    def __init__(self, processor_id: int, channel: RequestChannel, quotas: ConnectionQuotas,
                 max_request_size: int, apis: dict[int, api.ApiSpec] = api.APIS,
                 connections_max_idle_ms: int = 600_000, clock: Clock = SYSTEM_CLOCK) -> None:
        super().__init__(f"network-processor-{processor_id}")
        self.processor_id = processor_id
        self.channel = channel
        self.quotas = quotas
        self.max_request_size = max_request_size
        self.apis = apis
        self.max_idle_ms = connections_max_idle_ms
        self.clock = clock
        self.selector = selectors.DefaultSelector()
        self._new: queue.SimpleQueue[tuple[socket.socket, str, int, Listener]] = queue.SimpleQueue()
        self._responses: queue.SimpleQueue[Response] = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self.selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._conns: OrderedDict[str, Connection] = OrderedDict()  # least recently active first
        self._next_id = 0
        #: Per-API counts, latencies and sizes (written by this thread only).
        self.stats = RequestStats()

    # ---- called from other threads -------------------------------------------------
    def accept(self, sock: socket.socket, ip: str, port: int, listener: Listener) -> None:
        self._new.put((sock, ip, port, listener))
        self.wake()

    def enqueue_response(self, response: Response) -> None:
        self._responses.put(response)
        self.wake()

    def connection_counts(self) -> dict[str, int]:
        """Open connections per listener name (any thread; a snapshot)."""
        while True:
            try:  # one C-level copy, which our thread cannot interleave with under the GIL
                conns = list(self._conns.values())
                break
            except RuntimeError:  # changed during the copy (a build without a GIL): again
                continue
        counts: dict[str, int] = {}
        for conn in conns:
            name = conn.session.listener_name
            counts[name] = counts.get(name, 0) + 1
        return counts

    def wake(self) -> None:
        try:
            self._wake_w.send(b"\x00")
        except (BlockingIOError, OSError):
            pass  # a wake-up is already pending (buffer full) or we are shutting down

    # ---- the processor thread ------------------------------------------------------
    def on_stopped(self) -> None:
        for conn in list(self._conns.values()):
            self._close(conn)
        self.selector.close()
        self._wake_r.close()
        self._wake_w.close()

    def run_once(self, timeout: float = 0.5) -> None:
        self._configure_new_connections()
        self._process_responses()
        for key, mask in self.selector.select(timeout):
            conn = key.data
            if conn is None:
                try:
                    while self._wake_r.recv(4096):
                        pass
                except BlockingIOError:
                    pass
                continue
            if conn.handshaking:
                self._handshake(conn)
                continue
            if mask & selectors.EVENT_READ:
                self._read(conn)
            if mask & selectors.EVENT_WRITE and conn.id in self._conns:
                self._write(conn)
        self._close_idle()

    def _configure_new_connections(self) -> None:
        while True:
            try:
                sock, ip, port, listener = self._new.get_nowait()
            except queue.Empty:
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if listener.ssl_context is not None:
                try:
                    sock = listener.ssl_context.wrap_socket(sock, server_side=True,
                                                            do_handshake_on_connect=False)
                except (ssl.SSLError, OSError) as e:
                    log.warning("connection from %s:%d on %s: TLS setup failed (%s); closing it",
                                ip, port, listener.name, e)
                    sock.close()
                    self.quotas.dec(ip)
                    continue
            conn_id = f"{ip}:{port}-{self.processor_id}-{self._next_id}"
            self._next_id += 1
            conn = Connection(conn_id, sock, ip, self.max_request_size, listener,
                              self.clock.monotonic_ms())
            self._conns[conn_id] = conn
            self._update_interest(conn)

    def _touch(self, conn: Connection) -> None:
        conn.last_active = self.clock.monotonic_ms()
        self._conns.move_to_end(conn.id)

    def _close_idle(self) -> None:
        """Close connections idle for ``connections.max.idle.ms`` (oldest first; a
        connection with a request in the broker is busy, not idle)."""
        now = self.clock.monotonic_ms()
        while self._conns:
            conn = next(iter(self._conns.values()))
            if now - conn.last_active < self.max_idle_ms:
                return
            if conn.muted or conn.out is not None:
                self._touch(conn)
                continue
            log.info("connection %s from %s on %s: idle for %.0f ms%s; closing it", conn.id, conn.ip,
                     conn.session.listener_name, now - conn.last_active,
                     " during the TLS handshake" if conn.handshaking else "")
            self._close(conn)

    def _handshake(self, conn: Connection) -> None:
        """One step of a server-side TLS handshake, driven by the selector."""
        sock: Any = conn.sock
        self._touch(conn)
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            conn.handshake_interest = selectors.EVENT_READ
            self._update_interest(conn)
            return
        except ssl.SSLWantWriteError:
            conn.handshake_interest = selectors.EVENT_WRITE
            self._update_interest(conn)
            return
        except (ssl.SSLError, OSError, ValueError) as e:
            reason = getattr(e, "reason", None)
            if reason in _NOT_TLS:
                try:
                    os.write(sock.fileno(), _PROTOCOL_VERSION_ALERT)
                except OSError:
                    pass  # the peer is gone already; closing is all that is left
            self._refuse(conn, f"TLS handshake failed ({reason or e})")
            return
        conn.handshaking = False
        conn.session.principal = from_certificate(sock.getpeercert(binary_form=True))
        log.debug("connection %s: TLS %s established, principal %s", conn.id, sock.version(),
                  conn.session.principal)
        self._update_interest(conn)
        self._read(conn)  # the client's first request may already be decrypted and waiting

    def _process_responses(self) -> None:
        while True:
            try:
                response = self._responses.get_nowait()
            except queue.Empty:
                return
            request = response.request
            payload = response.payload
            self.stats.record(request.header.api_key, request.received_ns, request.size,
                              response.size)
            conn = self._conns.get(request.connection_id)
            if conn is None:
                response.release()
                continue  # the connection closed while its request was in the broker
            if response.close_connection:
                response.release()
                self._close(conn)
            elif payload is None:
                self._unmute(conn)
            else:
                conn.close_after_write = response.close_after_send
                if isinstance(payload, list):
                    if conn.tls:  # no sendfile through TLS: copy the file ranges in
                        payload = self._copied(payload)
                    conn.out = payload
                else:
                    conn.out = [memoryview(payload)]
                conn.part = 0
                conn.out_pos = 0
                self._write(conn)

    @staticmethod
    def _copied(parts: list[Any]) -> list[Any]:
        """A zero-copy response with its file ranges read into memory (the TLS path)."""
        out = []
        try:
            for part in parts:
                out.append(memoryview(part.read()) if isinstance(part, ExternalBytes) else part)
        finally:
            for part in parts:
                if isinstance(part, ExternalBytes):
                    part.release()
        return out

    def _update_interest(self, conn: Connection) -> None:
        want = conn.handshake_interest if conn.handshaking else (
            (0 if conn.muted else selectors.EVENT_READ)
            | (selectors.EVENT_WRITE if conn.out is not None else 0))
        if want == conn.interest:
            return
        if conn.interest == 0:
            self.selector.register(conn.sock, want, conn)
        elif want == 0:
            self.selector.unregister(conn.sock)
        else:
            self.selector.modify(conn.sock, want, conn)
        conn.interest = want

    def _read(self, conn: Connection) -> None:
        decoder = conn.decoder
        try:
            if conn.tls:
                data = self._recv_tls(conn)
                if data:
                    decoder.feed(data)
                received = len(data)
            elif (direct := decoder.direct_buffer()) is not None:
                received = conn.sock.recv_into(direct)  # a large frame, straight into place
                decoder.advance(received)
            else:
                data = conn.sock.recv(_RECV_SIZE)
                if data:
                    decoder.feed(data)
                received = len(data)
        except _TLS_WAIT:
            return
        except ssl.SSLZeroReturnError:
            received = 0
        except OSError as e:
            log.info("connection %s: read failed (%s); closing it", conn.id, e)
            self._close(conn)
            return
        if not received:
            self._close(conn)
            return
        self._touch(conn)
        self._dispatch(conn)

    @staticmethod
    def _recv_tls(conn: Connection) -> bytes:
        """Up to ``_TLS_RECV_SIZE`` bytes, then whatever TLS has decrypted beyond that: the
        selector only sees the kernel's buffer, not OpenSSL's. Raises SSLWantReadError
        when nothing at all is available yet."""
        sock: Any = conn.sock
        chunks = [sock.recv(_TLS_RECV_SIZE)]
        total = len(chunks[0])
        while chunks[-1] and total < _TLS_RECV_SIZE:
            try:
                chunks.append(sock.recv(_TLS_RECV_SIZE - total))
            except _TLS_WAIT:
                break
            total += len(chunks[-1])
        while chunks[-1] and (pending := sock.pending()):
            chunks.append(sock.recv(pending))
        return b"".join(chunks)

    def _dispatch(self, conn: Connection) -> None:
        """Take the next whole frame, if any, and hand it to the handlers; then mute."""
        try:
            payload = conn.decoder.next_frame()
        except FrameTooLarge as e:
            self._refuse(conn, str(e))
            return
        except MalformedFrame as e:
            self._refuse(conn, f"malformed frame ({e})")
            return
        if payload is None:
            return
        conn.muted = True
        self._update_interest(conn)
        session = conn.session
        if session.sasl_raw_tokens:  # after SaslHandshake v0: a bare token, no header
            header = RequestHeader(api.ApiKey.SASL_AUTHENTICATE, RAW_SASL_VERSION, 0, None)
            self.channel.send_request(Request(self.processor_id, conn.id, conn.ip, header,
                                              Data(auth_bytes=bytes(payload)), len(payload),
                                              session=session))
            return
        try:
            header, body = api.decode_request(payload, self.apis)
        except api.UnsupportedApiVersion as e:
            if e.header.api_key == API_VERSIONS_KEY:
                self._answer_unsupported_api_versions(conn, e.header.correlation_id)
            else:
                self._refuse(conn, str(e))
            return
        except MalformedFrame as e:
            self._refuse(conn, f"undecodable request ({e})")
            return
        if session.expires_at_ms is not None and self.clock.wall_ms() >= session.expires_at_ms:
            log.info("connection %s from %s: the token of %s expired; closing it (the client "
                     "reconnects with a new one)", conn.id, conn.ip, session.principal)
            self._close(conn)
            return
        if not session.authenticated and header.api_key not in _PRE_AUTH_APIS:
            self._refuse(conn, f"{self.apis[header.api_key].name} request before SASL "
                               f"authentication on listener {session.listener_name}")
            return
        self.channel.send_request(Request(self.processor_id, conn.id, conn.ip, header, body,
                                          len(payload), session=session))

    def _refuse(self, conn: Connection, why: str) -> None:
        """Bad input: one log line naming the peer and the reason, and only this connection closes."""
        log.warning("connection %s from %s: %s; closing it", conn.id, conn.ip, why)
        self._close(conn)

    def _answer_unsupported_api_versions(self, conn: Connection, correlation_id: int) -> None:
        body = Data(error_code=UnsupportedVersion.code, api_keys=api.supported_versions(self.apis),
                    throttle_time_ms=0)
        conn.out = [memoryview(api.encode_response(API_VERSIONS_KEY, 0, correlation_id, body))]
        conn.part = conn.out_pos = 0
        self._write(conn)

    def _write(self, conn: Connection) -> None:
        """Write what the socket takes of the pending response; the rest waits for writable.

        Buffers go out with ``send`` (TLS: in fixed slices, so a retried write passes
        OpenSSL the same bytes again); file ranges with non-blocking ``os.sendfile``,
        resumed where it stopped, so a slow reader holds only its own connection. (No
        TCP_CORK to merge the parts into full segments: a corked sender waits for a full
        segment, which a peer with a receive window below one MSS never opens.)
        """
        parts = conn.out
        if parts is None:
            return
        try:
            while conn.part < len(parts):
                part = parts[conn.part]
                if isinstance(part, ExternalBytes):
                    self._send_file(conn, part)  # whole, or BlockingIOError: wait for writable
                else:
                    limit = _TLS_WRITE_SLICE if conn.tls else len(part)
                    while conn.out_pos < len(part):
                        sent = conn.sock.send(part[conn.out_pos : conn.out_pos + limit])
                        if sent == 0:
                            break
                        conn.out_pos += sent
                    if conn.out_pos < len(part):
                        break
                conn.part += 1
                conn.out_pos = 0
        except _TLS_WAIT:
            pass
        except _FileChanged as e:
            log.warning("connection %s: %s; closing it rather than send a response whose "
                        "bytes may have changed", conn.id, e)
            self._close(conn)
            return
        except OSError as e:
            log.info("connection %s: write failed (%s); closing it", conn.id, e)
            self._close(conn)
            return
        self._touch(conn)
        if conn.part < len(parts):
            self._update_interest(conn)  # wait for writable
            return
        conn.out = None
        self._release_parts(parts)
        if conn.close_after_write:  # e.g. after SASL_AUTHENTICATION_FAILED
            self._close(conn)
            return
        self._unmute(conn)

    @staticmethod
    def _send_file(conn: Connection, part: ExternalBytes) -> None:
        """``sendfile`` a file range from ``conn.out_pos`` to its end (BlockingIOError when
        the socket is full: resumed from there when writable).

        A range whose file was truncated since the read is refused before a byte of it
        moves (``send_file_region`` raises ExternalBytesChanged): bytes in the socket cannot
        be taken back, so a changed file costs the client a closed connection after a
        prefix of the response as it was read, never wrong bytes.
        """
        size = len(part)
        sock_fd = conn.sock.fileno()
        try:
            while conn.out_pos < size:
                n = send_file_region(sock_fd, part, conn.out_pos, size - conn.out_pos)
                if n == 0:  # the file ends before the range: it changed
                    raise _FileChanged("the segment file is shorter than its range")
                conn.out_pos += n
        except ExternalBytesChanged as e:
            raise _FileChanged(f"the segment file was truncated under a zero-copy fetch ({e})") from e

    @staticmethod
    def _release_parts(parts: list[Any]) -> None:
        for part in parts:
            if isinstance(part, ExternalBytes):
                part.release()

    def _unmute(self, conn: Connection) -> None:
        conn.muted = False
        self._update_interest(conn)
        if conn.decoder.buffered:
            self._dispatch(conn)

    def _close(self, conn: Connection) -> None:
        if self._conns.pop(conn.id, None) is None:
            return
        if conn.out is not None:  # a response cut short: its file ranges are let go
            self._release_parts(conn.out)
            conn.out = None
        if conn.interest:
            try:
                self.selector.unregister(conn.sock)
            except (KeyError, ValueError):
                pass
        try:
            conn.sock.close()
        finally:
            self.quotas.dec(conn.ip)
