"""NetworkClient and BrokerConnection against a scripted TCP peer speaking our codec.

The peer is a real socket served by a thread; it decodes requests and encodes responses
with the same codec the broker uses, so these tests exercise non-blocking connects,
version negotiation, pipelining, timeouts and reconnect backoff over a real connection.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Any

import pytest

from broker_sim.protocol import api
from broker_sim.protocol.api import APIS, ApiKey
from broker_sim.protocol.errors import UnsupportedVersion
from broker_sim.protocol.schema import Data
from connector.client.config import ClientConfig
from connector.client.connection import negotiate_versions
from connector.client.errors import DisconnectError, RequestTimeoutError
from connector.client.network_client import NetworkClient
from tests.wire import read_frame

Responder = Callable[[Any, Any], Any]  # (header, body) -> response body, or None: no answer


class ScriptedPeer:
    """Accepts one connection at a time and answers each request with ``responder``."""

    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.requests: list[tuple[int, int]] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                try:
                    while True:
                        header, body = api.decode_request(read_frame(conn))
                        self.requests.append((header.api_key, header.api_version))
                        answer = self.responder(header, body)
                        if answer is None:
                            continue
                        version, payload = answer if isinstance(answer, tuple) else (
                            header.api_version, answer)
                        conn.sendall(api.encode_response(header.api_key, version,
                                                         header.correlation_id, payload))
                except (ConnectionError, OSError):
                    continue

    def close(self) -> None:
        self.server.close()


def api_versions_body(max_versions: dict[int, int] | None = None) -> dict[str, Any]:
    keys = []
    for spec in APIS.values():
        top = (max_versions or {}).get(spec.key, spec.max_version)
        keys.append({"api_key": spec.key, "min_version": spec.min_version, "max_version": top})
    return {"error_code": 0, "api_keys": keys, "throttle_time_ms": 0}


def standard(header, body):
    if header.api_key == ApiKey.API_VERSIONS:
        return api_versions_body({ApiKey.FETCH: 7})
    if header.api_key == ApiKey.FIND_COORDINATOR:
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "node_id": 0,
                "host": "h", "port": 1}
    return None  # anything else: never answered


@pytest.fixture
def peer():
    peers = []

    def start(responder: Responder = standard) -> ScriptedPeer:
        peers.append(ScriptedPeer(responder))
        return peers[-1]

    yield start
    for p in peers:
        p.close()


def client_for(port: int, **overrides) -> NetworkClient:
    cfg = ClientConfig(bootstrap_servers=(("127.0.0.1", port),), **{
        "request_timeout_ms": 300, "socket_connection_setup_timeout_ms": 300,
        "reconnect_backoff_ms": 50, "reconnect_backoff_max_ms": 400, **overrides})
    client = NetworkClient(cfg)
    client.add_node(0, "127.0.0.1", port)
    return client


def poll_until(client: NetworkClient, condition, timeout_ms: float = 5000) -> None:
    deadline = client.now() + timeout_ms
    while not condition():
        assert client.now() < deadline, "condition not reached"
        client.poll(20, client.now())


def test_negotiation_picks_the_highest_common_version_per_api():
    broker = [Data(api_key=1, min_version=0, max_version=13),   # Fetch: ours is 4-11
              Data(api_key=0, min_version=0, max_version=2),    # Produce: ours starts at 3
              Data(api_key=3, min_version=1, max_version=5),
              Data(api_key=999, min_version=0, max_version=1)]  # unknown to us
    assert negotiate_versions(broker) == {1: 11, 3: 5}


def test_connect_negotiate_and_pipeline_requests(peer):
    p = peer()
    client = client_for(p.port)
    poll_until(client, lambda: client.ready(0, client.now()))
    assert client.api_version(0, ApiKey.FETCH) == 7  # the peer's max, below ours
    futures = [client.send(0, ApiKey.FIND_COORDINATOR, {"key": f"g{i}", "key_type": 0},
                           client.now()) for i in range(3)]
    assert client.in_flight_count(0) == 3
    poll_until(client, lambda: all(f.is_done for f in futures))
    assert all(f.value.node_id == 0 for f in futures)
    client.close()


def test_max_in_flight_limits_readiness(peer):
    p = peer()
    client = client_for(p.port, max_in_flight_requests_per_connection=2)
    poll_until(client, lambda: client.ready(0, client.now()))
    for _ in range(2):
        client.send(0, ApiKey.METADATA, {"topics": []}, client.now())  # never answered
    assert not client.ready(0, client.now())
    client.close()


def test_unsupported_api_versions_version_falls_back_to_what_the_broker_knows(peer):
    def old_broker(header, body):
        if header.api_key != ApiKey.API_VERSIONS:
            return None
        if header.api_version > 2:  # KIP-511: error in a v0 body naming our range
            return 0, {"error_code": UnsupportedVersion.code, "api_keys": [
                {"api_key": ApiKey.API_VERSIONS, "min_version": 0, "max_version": 2}]}
        return api_versions_body({ApiKey.API_VERSIONS: 2})

    p = peer(old_broker)
    client = client_for(p.port)
    poll_until(client, lambda: client.ready(0, client.now()))
    assert p.requests == [(ApiKey.API_VERSIONS, 4), (ApiKey.API_VERSIONS, 2)]
    assert client.api_version(0, ApiKey.API_VERSIONS) == 2
    client.close()


def hung(header, body):
    """Answers the handshake, then nothing."""
    return api_versions_body() if header.api_key == ApiKey.API_VERSIONS else None


def test_responses_out_of_order_close_the_connection_and_fail_every_request(peer):
    p = peer()  # answers FindCoordinator (sent second) but never Metadata (sent first)
    client = client_for(p.port)
    poll_until(client, lambda: client.ready(0, client.now()))
    first = client.send(0, ApiKey.METADATA, {"topics": []}, client.now())
    second = client.send(0, ApiKey.FIND_COORDINATOR, {"key": "g", "key_type": 0}, client.now())
    poll_until(client, lambda: first.is_done and second.is_done)
    assert isinstance(first.exception, DisconnectError)
    assert isinstance(second.exception, DisconnectError)
    client.close()


def test_a_request_without_answer_times_out_and_closes_the_connection(peer):
    p = peer(hung)
    client = client_for(p.port, request_timeout_ms=200)
    poll_until(client, lambda: client.ready(0, client.now()))
    lost = client.send(0, ApiKey.METADATA, {"topics": []}, client.now())
    behind = client.send(0, ApiKey.FIND_COORDINATOR, {"key": "g", "key_type": 0}, client.now())
    start = client.now()
    poll_until(client, lambda: lost.is_done)
    assert 190 <= client.now() - start < 2000
    assert isinstance(lost.exception, RequestTimeoutError)
    assert behind.failed and not client.is_ready(0)
    poll_until(client, lambda: client.ready(0, client.now()))  # and it reconnects
    client.close()


def test_a_peer_that_never_finishes_the_handshake_is_dropped(peer):
    p = peer(lambda header, body: None)
    client = client_for(p.port, socket_connection_setup_timeout_ms=150)
    client.ready(0, client.now())
    poll_until(client, lambda: client.connection_failed(0))
    client.close()


def test_reconnect_backoff_grows_exponentially_up_to_the_maximum():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = client_for(port, reconnect_backoff_ms=50, reconnect_backoff_max_ms=120)
    delays = []
    for _ in range(3):
        assert not client.ready(0, client.now())  # starts a connection attempt
        poll_until(client, lambda: client.connection_failed(0))
        delays.append(client._connections[0].backoff_ms())
        assert client.connection_delay(0, client.now()) > 0
        poll_until(client, lambda: client.connection_delay(0, client.now()) == 0)
    assert delays == [50, 100, 120]
    client.close()


def test_wakeup_interrupts_a_long_poll(peer):
    p = peer()
    client = client_for(p.port)
    threading.Timer(0.05, client.wakeup).start()
    start = client.now()
    client.poll(5000, start)
    assert client.now() - start < 2000
    client.close()


def test_closing_fails_what_is_in_flight(peer):
    p = peer()
    client = client_for(p.port)
    poll_until(client, lambda: client.ready(0, client.now()))
    future = client.send(0, ApiKey.METADATA, {"topics": []}, client.now())
    client.close()
    assert isinstance(future.exception, DisconnectError)
