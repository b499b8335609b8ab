"""A small blocking request/response connection over the shared codec.

Used by the broker for its own outgoing traffic (heartbeats to the controller, replica
fetches from leaders), where one request at a time per connection is what is wanted.
Reconnects lazily after an error. Not thread-safe: one owner thread per instance (the
controller client serialises callers with its own lock).
"""

from __future__ import annotations

import itertools
import socket
import struct
from typing import Any

from ..protocol import api
from ..protocol.errors import NetworkException

_SIZE = struct.Struct(">i")


class BlockingConnection:
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
            size = _SIZE.unpack(self._recv_exact(sock, 4))[0]
            payload = self._recv_exact(sock, size)
        except OSError as e:
            self.close()
            raise NetworkException(f"request to {self.host}:{self.port} failed: {e}") from e
        got, response = api.decode_response(api_key, version, payload)
        if got != cid:
            self.close()
            raise NetworkException(f"response correlation id {got} does not match request {cid}")
        return response

    @staticmethod
    def _recv_exact(sock: socket.socket, n: int) -> bytearray:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = sock.recv_into(view[got:])
            if k == 0:
                raise ConnectionError("connection closed by peer")
            got += k
        return buf

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None
