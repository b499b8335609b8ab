"""A minimal blocking client over our sans-I/O codec, for tests that need exact requests."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from broker_sim.network.blocking_client import read_exact, read_frame
from broker_sim.protocol import api

T = TypeVar("T")

__all__ = ["read_exact", "read_frame"]  # re-exported: tests read raw frames through tests.wire


class WireClient:
    """One connection; with ``options`` (pyq client options of a SASL_SSL listener, as
    ``client_options(user)`` gives them) it is TLS, authenticated by SaslHandshake v1 and
    SaslAuthenticate v2 with the client's own SCRAM mechanism before any request."""

    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 15,
                 options: dict[str, Any] | None = None) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self._cid = 0
        if options is not None:
            try:
                self._secure(host, options)
            except BaseException:
                self.sock.close()
                raise

    def _secure(self, host: str, options: dict[str, Any]) -> None:
        from connector.client.config import ClientConfig
        from connector.client.security import sasl_client, tls_context

        config = ClientConfig.from_options(options)
        assert config.security_protocol == "SASL_SSL", config.security_protocol
        self.sock = tls_context(config).wrap_socket(self.sock, server_hostname=host)
        mechanism = sasl_client(config)
        r = self.request(api.ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism.mechanism})
        assert r.error_code == 0, r
        token: bytes | None = mechanism.first()
        while token is not None:
            r = self.request(api.ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
            if r.error_code:
                raise PermissionError(f"SASL authentication failed: {r.error_message}")
            token = mechanism.respond(bytes(r.auth_bytes))

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


def partition_states(port: int, topic: str) -> dict[int, tuple[int, list[int], int]]:
    """{partition: (leader, isr, leader_epoch)} as a broker's Metadata answers it."""
    with WireClient(port) as c:
        r = c.request(3, 8, {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
                             "include_cluster_authorized_operations": False,
                             "include_topic_authorized_operations": False})
    t = r.topics[0]
    if t.error_code:
        return {}
    return {p.partition_index: (p.leader_id, sorted(p.isr_nodes), p.leader_epoch) for p in t.partitions}


def wait_for(condition: Callable[[], T | None | Literal[False]], timeout: float = 30.0,
             interval: float = 0.1, what: str = "condition") -> T:
    """Poll ``condition`` every ``interval`` seconds until it returns something true, and
    return that (so never None or False); an OSError or AssertionError it raises counts as not yet. On a timeout,
    AssertionError naming ``what`` and the last value."""
    import time
    deadline = time.monotonic() + timeout
    last: T | None | Literal[False] = None
    while time.monotonic() < deadline:
        try:
            last = condition()
        except (OSError, ConnectionError, AssertionError):
            last = None
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def produce_body(topic: str, partition: int, records: bytes, acks: int = -1, timeout_ms: int = 10_000,
                 transactional_id: str | None = None) -> dict:
    """A Produce request body; transactional records need a ``transactional_id`` (as on Kafka)."""
    return {"transactional_id": transactional_id, "acks": acks, "timeout_ms": timeout_ms,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}]}


def create_topic(port: int, name: str, partitions: int = 2, replication_factor: int = 1,
                 configs: dict[str, str] | None = None) -> None:
    """CreateTopics v4 on the broker at ``port``; asserts it succeeded."""
    from broker_sim.protocol.api import ApiKey

    with WireClient(port) as c:
        r = c.request(ApiKey.CREATE_TOPICS, 4, {
            "topics": [{"name": name, "num_partitions": partitions,
                        "replication_factor": replication_factor, "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
            "timeout_ms": 10_000, "validate_only": False})
    assert r.topics[0].error_code == 0, r


def wait_for_topic_everywhere(bootstrap: str, topic: str, partitions: int,
                              timeout: float = 30.0) -> None:
    """Until every broker of ``bootstrap`` answers Metadata with ``topic``'s partitions,
    each with a leader. CreateTopics itself returns only once every live broker knows the
    topic (auto-creation too); this remains for a broker that was down or is restarting,
    and for tests that do not care how the topic came to be."""
    from broker_sim.protocol.api import ApiKey

    for address in bootstrap.split(","):
        port = int(address.rsplit(":", 1)[1])

        def ready(port: int = port) -> bool:
            with WireClient(port) as c:
                r = c.request(ApiKey.METADATA, 1, {"topics": [{"name": topic}]})
            found = [t for t in r.topics if t.name == topic and t.error_code == 0]
            return bool(found) and len(found[0].partitions) == partitions and all(
                p.leader_id >= 0 for p in found[0].partitions)

        wait_for(ready, timeout, what=f"{topic} in the metadata of {address}")
