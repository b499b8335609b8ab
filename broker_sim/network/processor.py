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

Threading: every attribute is owned by this processor's thread, except the two
thread-safe queues (new connections from the acceptor, responses from handlers) and the
wake-up socket that other threads write to.
"""

from __future__ import annotations

import logging
import queue
import selectors
import socket
from typing import Any

from ..common.shutdownable_thread import ShutdownableThread
from ..protocol import api
from ..protocol.errors import MalformedFrame, UnsupportedVersion
from ..protocol.framing import FrameDecoder, FrameTooLarge
from ..protocol.header import API_VERSIONS_KEY
from ..protocol.schema import Data
from .connection_quotas import ConnectionQuotas
from .request_channel import Request, RequestChannel, Response

log = logging.getLogger(__name__)

_RECV_SIZE = 256 * 1024


class Connection:
    __slots__ = ("id", "sock", "ip", "decoder", "out", "out_pos", "muted", "interest")

    def __init__(self, conn_id: str, sock: socket.socket, ip: str, max_frame: int) -> None:
        self.id = conn_id
        self.sock = sock
        self.ip = ip
        self.decoder = FrameDecoder(max_frame)
        self.out: Any = None
        self.out_pos = 0
        self.muted = False
        self.interest = 0


class Processor(ShutdownableThread):
    def __init__(self, processor_id: int, channel: RequestChannel, quotas: ConnectionQuotas,
                 max_request_size: int, apis: dict[int, api.ApiSpec] = api.APIS) -> None:
        super().__init__(f"network-processor-{processor_id}")
        self.processor_id = processor_id
        self.channel = channel
        self.quotas = quotas
        self.max_request_size = max_request_size
        self.apis = apis
        self.selector = selectors.DefaultSelector()
        self._new: queue.SimpleQueue[tuple[socket.socket, str, int]] = queue.SimpleQueue()
        self._responses: queue.SimpleQueue[Response] = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self.selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._conns: dict[str, Connection] = {}
        self._next_id = 0

    # ---- called from other threads -------------------------------------------------
    def accept(self, sock: socket.socket, ip: str, port: int) -> None:
        self._new.put((sock, ip, port))
        self.wake()

    def enqueue_response(self, response: Response) -> None:
        self._responses.put(response)
        self.wake()

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
            if mask & selectors.EVENT_READ:
                self._read(conn)
            if mask & selectors.EVENT_WRITE and conn.id in self._conns:
                self._write(conn)

    def _configure_new_connections(self) -> None:
        while True:
            try:
                sock, ip, port = self._new.get_nowait()
            except queue.Empty:
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn_id = f"{ip}:{port}-{self.processor_id}-{self._next_id}"
            self._next_id += 1
            conn = Connection(conn_id, sock, ip, self.max_request_size)
            self._conns[conn_id] = conn
            self._update_interest(conn)

    def _process_responses(self) -> None:
        while True:
            try:
                response = self._responses.get_nowait()
            except queue.Empty:
                return
            conn = self._conns.get(response.request.connection_id)
            if conn is None:
                continue  # the connection closed while its request was in the broker
            if response.close_connection:
                self._close(conn)
            elif response.payload is None:
                self._unmute(conn)
            else:
                conn.out = memoryview(response.payload)
                conn.out_pos = 0
                self._write(conn)

    def _update_interest(self, conn: Connection) -> None:
        want = (0 if conn.muted else selectors.EVENT_READ) | (
            selectors.EVENT_WRITE if conn.out is not None else 0)
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
        try:
            data = conn.sock.recv(_RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            log.info("connection %s: read failed (%s); closing it", conn.id, e)
            self._close(conn)
            return
        if not data:
            self._close(conn)
            return
        conn.decoder.feed(data)
        self._dispatch(conn)

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
        self.channel.send_request(Request(self.processor_id, conn.id, conn.ip, header, body,
                                          len(payload)))

    def _refuse(self, conn: Connection, why: str) -> None:
        """Bad input: one log line naming the peer and the reason, and only this connection closes."""
        log.warning("connection %s from %s: %s; closing it", conn.id, conn.ip, why)
        self._close(conn)

    def _answer_unsupported_api_versions(self, conn: Connection, correlation_id: int) -> None:
        body = Data(error_code=UnsupportedVersion.code, api_keys=api.supported_versions(self.apis),
                    throttle_time_ms=0)
        conn.out = memoryview(api.encode_response(API_VERSIONS_KEY, 0, correlation_id, body))
        conn.out_pos = 0
        self._write(conn)

    def _write(self, conn: Connection) -> None:
        out = conn.out
        if out is None:
            return
        try:
            while conn.out_pos < len(out):
                sent = conn.sock.send(out[conn.out_pos :])
                if sent == 0:
                    break
                conn.out_pos += sent
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as e:
            log.info("connection %s: write failed (%s); closing it", conn.id, e)
            self._close(conn)
            return
        if conn.out_pos < len(out):
            self._update_interest(conn)  # wait for writable
            return
        conn.out = None
        self._unmute(conn)

    def _unmute(self, conn: Connection) -> None:
        conn.muted = False
        self._update_interest(conn)
        if conn.decoder.buffered:
            self._dispatch(conn)

    def _close(self, conn: Connection) -> None:
        if self._conns.pop(conn.id, None) is None:
            return
        if conn.interest:
            try:
                self.selector.unregister(conn.sock)
            except (KeyError, ValueError):
                pass
        try:
            conn.sock.close()
        finally:
            self.quotas.dec(conn.ip)
