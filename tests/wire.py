"""A minimal blocking client over our sans-I/O codec, for tests that need exact requests."""

from __future__ import annotations

import socket
import struct
from typing import Any

from broker_sim.protocol import api


def recv_exact(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by the broker")
        buf += chunk
    return bytes(buf)


def read_frame(s: socket.socket) -> bytes:
    size = struct.unpack(">i", recv_exact(s, 4))[0]
    return recv_exact(s, size)


class WireClient:
    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 15) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self._cid = 0

    def request(self, api_key: int, version: int, body: Any) -> Any:
        self._cid += 1
        self.sock.sendall(api.encode_request(api_key, version, self._cid, "wire-test", body))
        cid, response = api.decode_response(api_key, version, read_frame(self.sock))
        assert cid == self._cid
        return response

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fetch_body(topic: str, partition: int, offset: int, max_wait_ms: int = 0, min_bytes: int = 1,
               max_bytes: int = 1 << 20) -> dict:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": max_bytes,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{"partition": partition, "current_leader_epoch": -1,
                                                         "fetch_offset": offset, "log_start_offset": -1,
                                                         "partition_max_bytes": max_bytes}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def list_offsets_body(topic: str, partition: int, timestamp: int) -> dict:
    return {"replica_id": -1, "isolation_level": 0,
            "topics": [{"name": topic, "partitions": [{"partition_index": partition,
                                                        "current_leader_epoch": -1, "timestamp": timestamp}]}]}
