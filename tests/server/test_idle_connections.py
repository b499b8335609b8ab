"""``connections.max.idle.ms`` on the broker's clock: a processor driven by hand with a
:class:`~broker_sim.common.clock.ManualClock`, so the limit is checked to the millisecond
without waiting for it."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from broker_sim.common.clock import ManualClock
from broker_sim.network.connection_quotas import ConnectionQuotas
from broker_sim.network.listener import Listener
from broker_sim.network.processor import Processor
from broker_sim.network.request_channel import RequestChannel
from broker_sim.protocol import api
from broker_sim.protocol.api import ApiKey

IDLE_MS = 1_000
IP = "127.0.0.1"


@pytest.fixture
def processor() -> Iterator[tuple[Processor, ManualClock, ConnectionQuotas]]:
    clock = ManualClock(start_ms=50_000)
    quotas = ConnectionQuotas(10)
    channel = RequestChannel(10)
    p = Processor(0, channel, quotas, 1 << 20, connections_max_idle_ms=IDLE_MS, clock=clock)
    channel.add_processor(p)
    yield p, clock, quotas
    p.on_stopped()


def connected(p: Processor, quotas: ConnectionQuotas) -> socket.socket:
    """A client socket whose peer the processor has taken on (as the acceptor hands it)."""
    with socket.create_server((IP, 0)) as listening:
        client = socket.create_connection(listening.getsockname())
        server, _ = listening.accept()
    quotas.inc(IP)
    p.accept(server, IP, 40_000, Listener("PLAINTEXT", "PLAINTEXT", IP, 0))
    p.run_once(0)
    assert p.connection_counts() == {"PLAINTEXT": 1}
    return client


def closed(client: socket.socket) -> bool:
    client.settimeout(5)
    return client.recv(1) == b""


def test_a_connection_idle_for_the_limit_is_closed_and_not_a_millisecond_before(processor) -> None:
    p, clock, quotas = processor
    client = connected(p, quotas)
    clock.advance(IDLE_MS - 1)
    p.run_once(0)
    assert p.connection_counts() == {"PLAINTEXT": 1}
    clock.advance(1)
    p.run_once(0)
    assert p.connection_counts() == {}
    assert closed(client) and quotas.count(IP) == 0


def test_a_request_read_resets_the_idle_time_and_one_in_the_broker_is_not_idle(processor) -> None:
    p, clock, quotas = processor
    client = connected(p, quotas)
    clock.advance(IDLE_MS - 1)
    client.sendall(api.encode_request(ApiKey.API_VERSIONS, 0, 1, "idle-test", {}))
    p.run_once(5)  # reads the request into the channel; the connection is muted until answered
    assert p.channel.receive_request(0) is not None
    clock.advance(IDLE_MS * 10)
    p.run_once(0)
    assert p.connection_counts() == {"PLAINTEXT": 1}  # waiting for its answer: busy
    client.close()
