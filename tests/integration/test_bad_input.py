"""Bad input closes only the offending connection; everyone else keeps being served."""

from __future__ import annotations

import os
import socket
import struct

import pytest

from broker_sim.protocol import api
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import UnsupportedVersion
from broker_sim.protocol.header import RequestHeader, write_request_header
from tests.wire import read_frame, wait_for

pytestmark = pytest.mark.integration


def connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def closed_by_peer(s: socket.socket, timeout: float = 10) -> bool:
    s.settimeout(timeout)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def api_versions_ok(port: int, correlation_id: int = 7) -> bool:
    """A well-behaved client on its own connection: ApiVersions v3 round trip."""
    with connect(port) as s:
        s.sendall(api.encode_request(ApiKey.API_VERSIONS, 3, correlation_id, "good-client",
                                     {"client_software_name": "t", "client_software_version": "1"}))
        cid, body = api.decode_response(ApiKey.API_VERSIONS, 3, read_frame(s))
        return cid == correlation_id and body.error_code == 0 and len(body.api_keys) == len(api.APIS)


@pytest.fixture
def broker(broker_factory):
    return broker_factory(overrides={"socket.request.max.bytes": "1048576"})


def test_random_bytes_close_only_that_connection(broker):
    good = connect(broker.port)  # opened before, must survive
    bad = connect(broker.port)
    bad.sendall(struct.pack(">i", 64) + os.urandom(64))
    assert closed_by_peer(bad)
    assert api_versions_ok(broker.port)
    good.sendall(api.encode_request(ApiKey.API_VERSIONS, 0, 1, None, {}))
    assert api.decode_response(ApiKey.API_VERSIONS, 0, read_frame(good))[0] == 1
    good.close()


def test_truncated_frame_then_hang_up(broker):
    s = connect(broker.port)
    s.sendall(struct.pack(">i", 1000) + b"\x00\x12\x00\x00")
    s.close()
    assert api_versions_ok(broker.port)


def test_huge_frame_is_refused_before_its_body(broker):
    s = connect(broker.port)
    s.sendall(struct.pack(">i", 0x7FFFFFFF))  # claims 2 GiB; we send nothing more
    assert closed_by_peer(s)
    assert api_versions_ok(broker.port)
    assert "exceeds the limit" in broker.output()


def test_unknown_api_key_closes_connection(broker):
    s = connect(broker.port)
    out = bytearray()
    write_request_header(out, RequestHeader(999, 0, 1, "x"), 1)
    s.sendall(struct.pack(">i", len(out)) + out)
    assert closed_by_peer(s)
    assert api_versions_ok(broker.port)
    assert "unknown api key 999" in broker.output()


def test_unsupported_api_versions_version_gets_v0_error_reply(broker):
    s = connect(broker.port)
    out = bytearray()
    write_request_header(out, RequestHeader(ApiKey.API_VERSIONS, 77, 42, "future-client"), 2)
    out += b"\x00"
    s.sendall(struct.pack(">i", len(out)) + out)
    cid, body = api.decode_response(ApiKey.API_VERSIONS, 0, read_frame(s))
    assert cid == 42
    assert body.error_code == UnsupportedVersion.code
    assert any(k.api_key == ApiKey.API_VERSIONS and k.max_version == 4 for k in body.api_keys)
    # the connection stays usable: the client falls back to a version we know
    s.sendall(api.encode_request(ApiKey.API_VERSIONS, 0, 43, None, {}))
    assert api.decode_response(ApiKey.API_VERSIONS, 0, read_frame(s))[1].error_code == 0


def test_unsupported_version_of_other_api_closes_connection(broker):
    s = connect(broker.port)
    out = bytearray()
    write_request_header(out, RequestHeader(ApiKey.METADATA, 99, 1, "x"), 1)
    s.sendall(struct.pack(">i", len(out)) + out)
    assert closed_by_peer(s)
    assert api_versions_ok(broker.port)


def test_pipelined_requests_answered_in_order(broker):
    s = connect(broker.port)
    payload = b"".join(api.encode_request(ApiKey.API_VERSIONS, v % 4, cid, "p", {})
                       for cid, v in zip(range(100, 150), range(50), strict=True))
    s.sendall(payload)
    got = []
    for v in range(50):
        cid, _ = api.decode_response(ApiKey.API_VERSIONS, v % 4, read_frame(s))
        got.append(cid)
    assert got == list(range(100, 150))


def test_connections_beyond_the_per_ip_limit_are_refused(broker_factory):
    broker = broker_factory(overrides={"max.connections.per.ip": "3"})
    held = [connect(broker.port) for _ in range(3)]
    for cid, s in enumerate(held):  # answered, so accepted and counted by the broker
        s.sendall(api.encode_request(ApiKey.API_VERSIONS, 0, cid, "held", {}))
        assert api.decode_response(ApiKey.API_VERSIONS, 0, read_frame(s))[0] == cid
    extra = connect(broker.port)
    assert closed_by_peer(extra)
    assert "too many connections from 127.0.0.1" in broker.output()
    held[0].close()
    # the broker frees the slot when it sees the close; until then a new one is refused
    assert wait_for(lambda: api_versions_ok(broker.port), 10, what="a freed slot")
    for s in held[1:]:
        s.close()
