"""SASL on the wire, byte by byte: both handshake versions, what passes before
authentication, refused mechanisms, and mutual TLS principals in ACLs."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker_sim.network.blocking_client import read_frame
from broker_sim.process import BrokerProcess
from broker_sim.protocol import api
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    SaslAuthenticationFailed,
    TopicAuthorizationFailed,
    UnsupportedSaslMechanism,
)
from broker_sim.security.acl import AclBinding, Operation, PatternType, Permission, ResourceType
from broker_sim.security.local_ca import Identity, LocalCA
from connector.client import Admin, AuthenticationError, Fetcher, Producer

METADATA_ALL = {"topics": None, "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("sasl-wire"), overrides={
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512"},
        add_scram=["SCRAM-SHA-512=[name=ann,password=ann-pw]"])
    proc.start()
    yield proc
    proc.stop()


class Wire:
    """A raw socket speaking the codec, one request at a time."""

    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.cid = 0

    def call(self, key: int, version: int, body: dict) -> Any:
        self.cid += 1
        self.sock.sendall(api.encode_request(key, version, self.cid, "wire", body))
        cid, response = api.decode_response(key, version, read_frame(self.sock))
        assert cid == self.cid
        return response

    def raw(self, token: bytes) -> bytes:
        self.sock.sendall(len(token).to_bytes(4, "big") + token)
        return bytes(read_frame(self.sock))

    def closed(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True


def test_v1_handshake_then_authenticate_then_requests(broker: BrokerProcess) -> None:
    w = Wire(broker.bootstrap_servers)
    assert w.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "w", "client_software_version": "1"}).error_code == 0
    hs = w.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert (hs.error_code, hs.mechanisms) == (0, ["PLAIN", "SCRAM-SHA-512"])
    ok = w.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x00ann\x00ann-pw"})
    assert (ok.error_code, ok.session_lifetime_ms) == (0, 0)
    assert w.call(ApiKey.METADATA, 8, METADATA_ALL).brokers  # served once authenticated
    again = w.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert again.error_code == 34  # ILLEGAL_SASL_STATE: already authenticated


def test_v0_handshake_carries_bare_tokens(broker: BrokerProcess) -> None:
    w = Wire(broker.bootstrap_servers)
    assert w.call(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}).error_code == 0
    assert w.raw(b"\x00ann\x00ann-pw") == b""  # the broker's (empty) PLAIN answer, bare
    assert w.call(ApiKey.METADATA, 8, METADATA_ALL).brokers
    bad = Wire(broker.bootstrap_servers)
    bad.call(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
    token = b"\x00ann\x00nope"
    bad.sock.sendall(len(token).to_bytes(4, "big") + token)
    assert bad.closed()  # a bare-token exchange cannot carry an error: closed


def test_nothing_is_served_before_authentication(broker: BrokerProcess) -> None:
    w = Wire(broker.bootstrap_servers)
    w.sock.sendall(api.encode_request(ApiKey.METADATA, 8, 1, "wire", METADATA_ALL))
    assert w.closed()


def test_refused_mechanism_and_wrong_password_are_answered_then_closed(broker: BrokerProcess) -> None:
    w = Wire(broker.bootstrap_servers)
    hs = w.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"})  # not enabled
    assert hs.error_code == UnsupportedSaslMechanism.code and "SCRAM-SHA-256" not in hs.mechanisms
    assert w.closed()
    w = Wire(broker.bootstrap_servers)
    w.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    failed = w.call(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\x00ann\x00wrong"})
    assert failed.error_code == SaslAuthenticationFailed.code
    assert "Invalid username or password" in failed.error_message
    assert w.closed()


def test_client_certificate_subjects_are_principals(tmp_path: Path) -> None:
    ca = LocalCA(tmp_path / "ca")
    reader, other = ca.issue("reader"), ca.issue("other")
    proc = BrokerProcess(tmp_path / "mtls", overrides={
        "listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(ca.issue("broker").pem),
        "ssl.truststore.location": str(ca.ca_path), "ssl.client.auth": "required",
        "authorizer.class.name": "pyq", "super.users": f"User:{other.subject}"}).start()
    try:
        def opts(who: Identity | None) -> dict[str, str]:
            o = {"bootstrap.servers": proc.bootstrap_servers, "security.protocol": "SSL",
                 "ssl.ca.location": str(ca.ca_path)}
            if who is not None:
                o.update({"ssl.certificate.location": str(who.cert), "ssl.key.location": str(who.key)})
            return o

        with pytest.raises(AuthenticationError), Admin(opts(None)) as admin:  # no certificate
            admin.describe_cluster(10_000)
        with Admin(opts(other)) as admin:  # a super user by its subject, "CN=other,O=pyq"
            admin.create_topic("mtls", num_partitions=1)
            admin.create_acls([AclBinding.create(ResourceType.TOPIC, "mtls", PatternType.LITERAL,
                                                 f"User:{reader.subject}", "*", Operation.READ,
                                                 Permission.ALLOW)])
        producer = Producer(opts(other))
        producer.send("mtls", b"for the reader").get(10)
        producer.close()
        with Fetcher(opts(reader)) as fetcher:
            assert [r.value for r in fetcher.iter_records("mtls", 0, 0, 1)] == [b"for the reader"]
        denied = Producer(opts(reader), enable_idempotence=False, acks=1)
        try:
            with pytest.raises(TopicAuthorizationFailed):
                denied.send("mtls", b"no").get(10)
        finally:
            denied.close()
    finally:
        proc.stop()
