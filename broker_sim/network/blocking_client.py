"""Blocking sockets speaking the protocol: the one frame reader, and a request/response connection.

:func:`read_into`, :func:`read_exact` and :func:`read_frame` are the only code in pyq that
reads size-prefixed frames from a blocking socket; the broker's own outgoing connections,
the tests' wire client and the benchmarks all use them. (The broker's processors and
the client read non-blocking sockets incrementally instead.)

:class:`BlockingConnection` is used by the broker for its own outgoing traffic
(heartbeats to the controller, replica fetches from leaders), where one request at a time
per connection is what is wanted.
"""

from __future__ import annotations

import itertools
import socket
import struct
from typing import Any

from ..protocol import api
from ..protocol.errors import NetworkException
from ..protocol.framing import FrameDecoder, uninitialized_buffer

_SIZE = struct.Struct(">i")


def read_into(sock: socket.socket, view: memoryview) -> bool:
    """Fill ``view`` from ``sock``; False on a clean end of stream before its first byte.

    A peer closing part-way through raises ConnectionError.
    """
    pos, n = 0, len(view)
    while pos < n:
        k = sock.recv_into(view[pos:])
        if k == 0:
            if pos == 0:
                return False
            raise ConnectionError("connection closed by peer in the middle of a frame")
        pos += k
    return True


def read_exact(sock: socket.socket, n: int) -> bytearray:
    """Exactly ``n`` bytes from ``sock``; ConnectionError if the peer closes first."""
    buf = bytearray(n)
    if n and not read_into(sock, memoryview(buf)):
        raise ConnectionError("connection closed by peer")
    return buf


def read_frame(sock: socket.socket) -> bytearray | memoryview:
    """One frame's body (the 4-byte big-endian size prefix read and dropped). A large one
    (a follower's fetch response) is received into a buffer that is not zero-filled first."""
    size = _SIZE.unpack(read_exact(sock, 4))[0]
    if size < FrameDecoder.DIRECT_FRAME_BYTES:
        return read_exact(sock, size)
    buf = uninitialized_buffer(size)
    if not read_into(sock, buf):
        raise ConnectionError("connection closed by peer")
    return buf


class BlockingConnection:
    """One request at a time over one socket; reconnects lazily after an error.

    Not thread-safe: one owner thread per instance (the controller client serialises its
    callers with its own lock). Any I/O error closes the socket and raises NetworkException.
    """

    def __init__(self, host: str, port: int, client_id: str, timeout_s: float = 10.0) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._sock: socket.socket | None = None
        self._ids = itertools.count(1)

    def _connect(self) -> socket.socket:
        if self._sock is None:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sock = sock
        return self._sock

    def request(self, api_key: int, version: int, body: Any, timeout_s: float | None = None) -> Any:
        """Send one request and wait for its response; NetworkException on any I/O error."""
        cid = next(self._ids) & 0x7FFFFFFF
        try:
            sock = self._connect()
            sock.settimeout(timeout_s if timeout_s is not None else self.timeout_s)
            sock.sendall(api.encode_request(api_key, version, cid, self.client_id, body))
            payload = read_frame(sock)
        except OSError as e:
            self.close()
            raise NetworkException(f"request to {self.host}:{self.port} failed: {e}") from e
        got, response = api.decode_response(api_key, version, payload)
        if got != cid:
            self.close()
            raise NetworkException(f"response correlation id {got} does not match request {cid}")
        return response

    def abort(self) -> None:
        """Make a request blocked in another thread fail at once (NetworkException): shut
        the socket down without closing it; the owner's error path closes it. Safe from any
        thread (used to stop a thread waiting on a long poll)."""
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # not connected (any more)

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None
