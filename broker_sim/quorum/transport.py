"""The quorum's links between controllers: one-way frames over TCP on the controllers' own
quorum listener.

Each member listens on its quorum address (``127.0.0.1:port``, one of
``controller.quorum.voters``) and keeps one outbound connection per peer, opened on the
first message and again after a failure. A frame is ``length (u32) | payload``
(:mod:`.codec`). Sending never blocks the caller: each peer has a queue drained by its own
thread; a message that cannot be delivered (peer down, connection reset) is dropped, which
Raft tolerates — the core resends what matters on its timers.

Why a listener of its own rather than the controller's SocketServer: the core's messages are
one-way and unpaired (a leader answers a parked Fetch long after it arrived, a Vote answer may
cross a new request), while the SocketServer pairs each request with one response on a
handler pool shared with brokers' admin requests; a slow CreateTopics must never delay a vote
or a fetch, or the quorum would hold elections under load.

A peer's process that dies closes its sockets: the reader of its inbound connection sees the
end at once and reports the node to ``on_disconnect`` (the last sender seen on that
connection), so a follower need not wait out its fetch timeout to learn its leader is gone.

Threading: the accept thread, one reader thread per inbound connection (calling
``on_message`` with each decoded message, and ``on_disconnect`` once when it ends) and one
sender thread per peer, each a :class:`~broker_sim.common.ShutdownableThread` doing one
accept, frame read or frame write a round; :meth:`close` stops them all (closing the
sockets wakes the blocked ones, a None in a sender's queue ends it).
"""

from __future__ import annotations

import logging
import queue
import socket
import struct
import threading
from collections.abc import Callable

from ..common.shutdownable_thread import ShutdownableThread
from ..raft import Message
from .codec import decode, encode

log = logging.getLogger(__name__)

_LEN = struct.Struct(">I")
_MAX_FRAME = 64 * 1024 * 1024
_QUEUE_LIMIT = 10_000


def parse_voters(spec: str) -> dict[int, tuple[str, int]]:
    """Kafka's ``controller.quorum.voters``: ``1@127.0.0.1:9093,2@127.0.0.1:9094``.

    >>> parse_voters("1@127.0.0.1:9093,2@127.0.0.1:9094")
    {1: ('127.0.0.1', 9093), 2: ('127.0.0.1', 9094)}
    """
    voters: dict[int, tuple[str, int]] = {}
    for item in spec.split(","):
        node, sep, address = item.strip().partition("@")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not node.isdigit() or not port.isdigit() or not host:
            raise ValueError(f"controller.quorum.voters={spec!r} is invalid: "
                             "id@host:port[,id@host:port...] is allowed")
        voters[int(node)] = (host, int(port))
    return voters


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


class _Peer(ShutdownableThread):
    """The outbound link to one peer: a queue and the thread (``quorum-send-<id>``) that
    writes it out, one frame a round; a None in the queue (:meth:`close`) ends it."""

    def __init__(self, node_id: int, address: tuple[str, int]) -> None:
        super().__init__(f"quorum-send-{node_id}")
        self.node_id = node_id
        self.address = address
        self.queue: queue.Queue[bytes | None] = queue.Queue()
        self.sock: socket.socket | None = None
        self.start()

    def run_once(self) -> None:
        frame = self.queue.get()
        if frame is None:
            self.request_stop()
            return
        try:
            if self.sock is None:
                self.sock = socket.create_connection(self.address, timeout=2.0)
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.sock.settimeout(10.0)
            self.sock.sendall(frame)
        except OSError:
            self._drop_connection()

    def on_stopped(self) -> None:
        self._drop_connection()

    def _drop_connection(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None

    def send(self, frame: bytes) -> None:
        if self.queue.qsize() < _QUEUE_LIMIT:
            self.queue.put(frame)

    def close(self) -> None:
        self.queue.put(None)
        sock = self.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Acceptor(ShutdownableThread):
    """``quorum-accept``: one inbound connection a round; ends when the listening socket
    is closed (:meth:`QuorumTransport.close`)."""

    def __init__(self, transport: QuorumTransport) -> None:
        super().__init__("quorum-accept")
        self.transport = transport

    def run_once(self) -> None:
        if not self.transport._accept_one():
            self.request_stop()


class _Reader(ShutdownableThread):
    """``quorum-recv``: one inbound connection's frames, one a round, until it ends."""

    def __init__(self, transport: QuorumTransport, conn: socket.socket) -> None:
        super().__init__("quorum-recv")
        self.transport = transport
        self.conn = conn
        self.src: int | None = None  # the node whose messages this connection carries

    def run_once(self) -> None:
        if not self.transport._read_one(self):
            self.request_stop()

    def on_stopped(self) -> None:
        self.transport._connection_ended(self)


class QuorumTransport:
    """Binds ``host:port`` at construction (``port`` 0: an ephemeral one, see :attr:`port`);
    :meth:`start` begins accepting. ``peers`` maps node ids to quorum addresses and may be
    replaced (:meth:`set_peers`) as voters come and go."""

    def __init__(self, host: str, port: int, on_message: Callable[[Message], None],
                 on_disconnect: Callable[[int], None] | None = None) -> None:
        self._on_message = on_message
        self._on_disconnect = on_disconnect
        self._server = socket.create_server((host, port), reuse_port=False)
        self.host, self.port = self._server.getsockname()[:2]
        self._peers: dict[int, _Peer] = {}
        self._addresses: dict[int, tuple[str, int]] = {}
        self._inbound: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._accept_thread = _Acceptor(self)

    def start(self) -> None:
        self._accept_thread.start()

    def set_peers(self, addresses: dict[int, tuple[str, int]]) -> None:
        with self._lock:
            self._addresses = dict(addresses)
            for node, peer in list(self._peers.items()):
                if addresses.get(node) != peer.address:
                    peer.close()
                    del self._peers[node]

    def send(self, msg: Message) -> None:
        with self._lock:
            if self._closed:
                return
            peer = self._peers.get(msg.dst)
            if peer is None:
                address = self._addresses.get(msg.dst)
                if address is None:
                    return  # a node whose address nobody gave us: nothing to do but drop
                peer = self._peers[msg.dst] = _Peer(msg.dst, address)
        payload = encode(msg)
        peer.send(_LEN.pack(len(payload)) + payload)

    def _accept_one(self) -> bool:
        """Accept one connection and start its reader; False once the listener is closed."""
        try:
            conn, _ = self._server.accept()
        except OSError:
            return False
        with self._lock:
            if self._closed:
                conn.close()
                return False
            self._inbound.add(conn)
        _Reader(self, conn).start()
        return True

    def _read_one(self, reader: _Reader) -> bool:
        """Read one frame of ``reader``'s connection and hand its message on; False when
        the connection ended (closed, reset, an oversized or undecodable frame)."""
        conn = reader.conn
        try:
            head = _recv_exact(conn, _LEN.size)
            if head is None:
                return False
            (length,) = _LEN.unpack(head)
            if length > _MAX_FRAME:
                log.warning("quorum: a %d-byte frame; closing the connection", length)
                return False
            payload = _recv_exact(conn, length)
            if payload is None:
                return False
            try:
                msg = decode(payload)
            except (ValueError, TypeError, KeyError):
                log.warning("quorum: an undecodable frame; closing the connection")
                return False
        except OSError:
            return False
        reader.src = msg.src
        self._on_message(msg)
        return True

    def _connection_ended(self, reader: _Reader) -> None:
        conn = reader.conn
        with self._lock:
            self._inbound.discard(conn)
            closing = self._closed
        conn.close()
        if reader.src is not None and not closing and self._on_disconnect is not None:
            self._on_disconnect(reader.src)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            peers = list(self._peers.values())
            self._peers.clear()
            inbound = list(self._inbound)
        try:
            self._server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._server.close()
        for conn in inbound:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for peer in peers:
            peer.close()
        if self._accept_thread.is_alive():
            self._accept_thread.join(timeout=2)
        for peer in peers:
            peer.join(timeout=2)
