"""Test support for the client's unit tests: clusters, and an in-memory network.

:class:`FakeNetworkClient` stands in for :class:`~connector.client.network_client.NetworkClient`
in *unit* tests of the sender only. It still goes through our codec both ways: every
request is encoded with ``encode_request`` and decoded with ``decode_request`` (what the
broker does), and every canned response body is encoded with ``encode_response`` and
decoded with ``decode_response`` (what the client does) — so a field the sender gets wrong
fails here as it would on the wire. Integration tests use real broker processes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from broker_sim.protocol import api
from broker_sim.protocol.api import APIS, ApiKey
from broker_sim.protocol.records import iter_records
from broker_sim.protocol.schema import Data
from connector.client.metadata import Cluster, Node, PartitionInfo
from connector.client.request_future import RequestFuture


def cluster(leaders: dict[tuple[str, int], int], nodes: tuple[int, ...] = (0, 1)) -> Cluster:
    """A cluster whose partition ``(topic, p)`` is led by ``leaders[(topic, p)]``."""
    return Cluster([Node(n, "localhost", 9000 + n) for n in nodes],
                   [PartitionInfo(t, p, leader, 0, (leader,), (leader,))
                    for (t, p), leader in leaders.items()])


def metadata_response(leaders: dict[tuple[str, int], int], nodes: tuple[int, ...] = (0, 1),
                      version: int = 8) -> Data:
    """A Metadata response body as the client decodes it off the wire."""
    topics: dict[str, list[dict]] = {}
    for (t, p), leader in sorted(leaders.items()):
        topics.setdefault(t, []).append({
            "error_code": 0, "partition_index": p, "leader_id": leader, "leader_epoch": 0,
            "replica_nodes": [leader], "isr_nodes": [leader], "offline_replicas": []})
    body = {"throttle_time_ms": 0, "cluster_id": "test", "controller_id": nodes[0],
            "brokers": [{"node_id": n, "host": "localhost", "port": 9000 + n, "rack": None}
                        for n in nodes],
            "topics": [{"error_code": 0, "name": t, "is_internal": False, "partitions": ps}
                       for t, ps in topics.items()]}
    return roundtrip_response(ApiKey.METADATA, version, body)


def roundtrip_response(api_key: int, version: int, body: Any) -> Data:
    frame = api.encode_response(api_key, version, 7, body)
    cid, decoded = api.decode_response(api_key, version, frame[4:])
    assert cid == 7
    return decoded


@dataclass
class SentRequest:
    node: int
    api_key: int
    version: int
    body: Data  # as the broker decodes it
    future: RequestFuture
    expect_response: bool

    def partitions(self) -> dict[tuple[str, int], list]:
        """Produce requests: {(topic, partition): [records]} decoded from the batch bytes."""
        return {(t.name, p.index): list(iter_records(bytes(p.records)))
                for t in self.body.topic_data for p in t.partition_data}

    def batch_bytes(self) -> dict[tuple[str, int], bytes]:
        return {(t.name, p.index): bytes(p.records)
                for t in self.body.topic_data for p in t.partition_data}


Handler = Callable[[SentRequest], Any]


@dataclass
class FakeNetworkClient:
    """Connections that are up or down at the test's word; responses from handlers."""

    max_in_flight: int = 5
    connected: set[int] = field(default_factory=lambda: {0, 1})
    handlers: dict[int, Handler] = field(default_factory=dict)
    auto_respond: bool = True
    sent: list[SentRequest] = field(default_factory=list)
    in_flight: list[SentRequest] = field(default_factory=list)
    connect_attempts: list[int] = field(default_factory=list)
    poll_timeouts: list[float] = field(default_factory=list)
    wakeups: int = 0
    closed: bool = False
    fatal_error: BaseException | None = None
    #: api_key -> the version the "broker" negotiated; None: it implements no usable version.
    versions: dict[int, int | None] = field(default_factory=dict)
    _cid: int = 0

    # -- the NetworkClient surface the sender uses --
    def ready(self, node: int, now: float) -> bool:
        if node not in self.connected:
            self.connect_attempts.append(node)
            return False
        return self.in_flight_count(node) < self.max_in_flight

    def connection_delay(self, node: int, now: float) -> float:
        return 0.0 if node in self.connected else 50.0

    def least_loaded_node(self, now: float) -> int | None:
        return min(self.connected) if self.connected else None

    def in_flight_count(self, node: int | None = None) -> int:
        return sum(1 for r in self.in_flight if node is None or r.node == node)

    def api_version(self, node: int, api_key: int) -> int:
        version = self.versions.get(api_key, APIS[api_key].max_version)
        if version is None:
            from connector.client.errors import IncompatibleBrokerError
            raise IncompatibleBrokerError(f"broker {node} implements no version of "
                                          f"{APIS[api_key].name} that this client supports")
        return version

    def send(self, node: int, api_key: int, body: Any, now: float, *,
             expect_response: bool = True, timeout_ms: float | None = None,
             version: int | None = None) -> RequestFuture:
        assert node in self.connected, f"send to node {node}, which is not ready"
        version = self.api_version(node, api_key) if version is None else version
        self._cid += 1
        frame = api.encode_request(api_key, version, self._cid, "fake", body)
        header, decoded = api.decode_request(frame[4:])
        assert (header.api_key, header.api_version) == (api_key, version)
        request = SentRequest(node, api_key, version, decoded, RequestFuture(), expect_response)
        self.sent.append(request)
        if expect_response:
            self.in_flight.append(request)
        else:
            request.future.success(None)
        return request.future

    def poll(self, timeout_ms: float, now: float) -> None:
        self.poll_timeouts.append(timeout_ms)
        if self.auto_respond:
            self.respond_all()

    def wakeup(self) -> None:
        self.wakeups += 1

    def close(self) -> None:
        self.closed = True

    # -- test controls --
    def respond_all(self) -> None:
        while self.in_flight:
            request = self.in_flight[0]
            handler = self.handlers.get(request.api_key)
            if handler is None:
                return
            self.respond(request, handler(request))

    def respond(self, request: SentRequest, body_or_error: Any) -> None:
        self.in_flight.remove(request)
        if isinstance(body_or_error, BaseException):
            request.future.failure(body_or_error)
        else:
            request.future.success(roundtrip_response(request.api_key, request.version,
                                                      body_or_error))

    def requests(self, api_key: int) -> list[SentRequest]:
        return [r for r in self.sent if r.api_key == api_key]


def produce_response(request: SentRequest, errors: dict[tuple[str, int], int] | None = None,
                     offsets: dict[tuple[str, int], int] | None = None) -> dict:
    """A Produce response for every partition of ``request``: offset 0 (or ``offsets``),
    error code 0 (or ``errors``)."""
    errors = errors or {}
    offsets = offsets or {}
    return {"throttle_time_ms": 0, "responses": [
        {"name": t.name, "partition_responses": [
            {"index": p.index, "error_code": errors.get((t.name, p.index), 0),
             "base_offset": -1 if errors.get((t.name, p.index)) else offsets.get((t.name, p.index), 0),
             "log_append_time_ms": -1, "log_start_offset": 0, "record_errors": [],
             "error_message": None}
            for p in t.partition_data]}
        for t in request.body.topic_data]}
