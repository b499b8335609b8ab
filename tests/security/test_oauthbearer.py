"""SASL/OAUTHBEARER on pyq's broker with librdkafka, kafka-python and pyq's client.

A real identity provider runs in the test process (tests/security/identity_provider.py:
token endpoint and JWKS over HTTP, RSA keys made here). The broker validates tokens against
its JWKS with an expected issuer and audience and an ACL authorizer: ``alice`` may use the
``orders*`` topics, ``bob`` nothing, ``admin`` is a super user. A second broker runs Kafka's
unsecured development mode.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.request
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer as CkConsumer
from confluent_kafka import KafkaError as CkKafkaError
from confluent_kafka import Producer as CkProducer

from broker_sim.process import BrokerProcess
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import SaslAuthenticationFailed, TopicAuthorizationFailed
from broker_sim.security.acl import AclBinding, Operation, PatternType, Permission, ResourceType
from broker_sim.security.oauthbearer import JwksValidator, OAuthBearerConfig, TokenRefused
from broker_sim.server.config import BrokerConfig
from broker_sim.server.config import ConfigError as BrokerConfigError
from connector.client import Admin, AuthenticationError, ConfigError, Fetcher, Producer
from connector.client.oauthbearer import TokenSource, settings, unsecured_token
from tests.cli.support import pyq
from tests.security.identity_provider import IdentityProvider
from tests.security.test_sasl_wire import METADATA_ALL, Wire
from tests.wire import wait_for

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KpTopicPartition
    from kafka.errors import KafkaError as KafkaPythonError
    from kafka.net.sasl.oauth import AbstractTokenProvider

CLIENTS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret",
           "carol": "carol-secret", "stale": "s", "stranger": "s", "outsider": "s", "forger": "s",
           "brief": "s"}


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    provider = IdentityProvider(CLIENTS)
    for client, how in (("stale", "expired"), ("stranger", "issuer"), ("outsider", "audience"),
                        ("forger", "unknown-key"), ("brief", "short")):
        provider.misbehave(client, how)
    yield provider
    provider.stop()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, idp: IdentityProvider) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("oauth"), overrides={
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "OAUTHBEARER",
        "sasl.oauthbearer.jwks.endpoint.url": idp.jwks_url,
        "sasl.oauthbearer.expected.issuer": idp.issuer,
        "sasl.oauthbearer.expected.audience": idp.audience,
        "authorizer.class.name": "pyq", "super.users": "User:admin",
        "auto.create.topics.enable": "false"})
    proc.start()
    try:
        with Admin(pyq_options(proc, idp, "admin")) as admin:
            for topic in ("orders-pyq", "orders-rd", "orders-kp", "orders-java"):
                admin.create_topic(topic, num_partitions=1)
            admin.create_acls([
                AclBinding.create(kind, name, PatternType.PREFIXED, "User:alice", "*", op, Permission.ALLOW)
                for kind, name, ops in ((ResourceType.TOPIC, "orders", (Operation.READ, Operation.WRITE,
                                                                          Operation.DESCRIBE)),
                                        (ResourceType.GROUP, "alice", (Operation.READ,)))
                for op in ops])
        yield proc
    finally:
        proc.stop()


def pyq_options(proc: BrokerProcess, idp: IdentityProvider, client: str, **extra: Any) -> dict[str, Any]:
    """librdkafka's spelling, which pyq's client takes as it is."""
    return {"bootstrap.servers": proc.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.token.endpoint.url": idp.token_url,
            "sasl.oauthbearer.client.id": client, "sasl.oauthbearer.client.secret": CLIENTS[client],
            "sasl.oauthbearer.scope": "kafka", **extra}


def _end_offset(proc: BrokerProcess, idp: IdentityProvider, topic: str) -> int:
    with Admin(pyq_options(proc, idp, "admin")) as admin:
        return next(iter(admin.list_offsets({(topic, 0): "latest"}).values())).offset


def _read_back(opts: dict[str, Any], topic: str, until: int) -> list[bytes | None]:
    with Fetcher(opts) as fetcher:
        return [r.value for r in fetcher.iter_records(topic, 0, 0, until)]


# ---- pyq's client ----------------------------------------------------------------------
def test_pyq_client_oidc_and_the_sub_claim_is_the_acl_principal(broker: BrokerProcess,
                                                                 idp: IdentityProvider) -> None:
    alice = pyq_options(broker, idp, "alice")
    producer = Producer(alice)
    try:
        assert producer.send("orders-pyq", b"from alice").get(10).offset == 0
    finally:
        producer.close()
    assert _read_back(alice, "orders-pyq", 1) == [b"from alice"]

    bob = Producer(pyq_options(broker, idp, "bob"), enable_idempotence=False, acks=1)
    try:
        with pytest.raises(TopicAuthorizationFailed):
            bob.send("orders-pyq", b"from bob").get(10)
    finally:
        bob.close()
    assert _end_offset(broker, idp, "orders-pyq") == 1  # nothing of bob's appended


def test_pyq_client_with_javas_jaas_spelling(broker: BrokerProcess, idp: IdentityProvider) -> None:
    opts = {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.oauthbearer.token.endpoint.url": idp.token_url,
            "sasl.login.callback.handler.class":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
            "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                                'required clientId="alice" clientSecret="alice-secret" scope="kafka";'}
    producer = Producer(opts)
    try:
        assert producer.send("orders-java", b"jaas").get(10).offset == 0
    finally:
        producer.close()
    assert _read_back(opts, "orders-java", 1) == [b"jaas"]


def test_pyq_client_with_kafka_41_spellings(broker: BrokerProcess, idp: IdentityProvider) -> None:
    opts = {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.token.endpoint.url": idp.token_url,
            "sasl.oauthbearer.jwt.retriever.class":
                "org.apache.kafka.common.security.oauthbearer.ClientCredentialsJwtRetriever",
            "sasl.oauthbearer.client.credentials.client.id": "alice",
            "sasl.oauthbearer.client.credentials.client.secret": "alice-secret",
            "sasl.oauthbearer.scope": "kafka"}
    with Admin(opts) as admin:
        assert {"orders-pyq", "orders-java"} <= admin.list_topics()


def test_token_is_renewed_after_80_percent_of_its_lifetime(idp: IdentityProvider) -> None:
    resolved = settings("oidc", idp.token_url, "carol", "carol-secret", None, None, None, {}, None)
    now = [1_000_000.0]
    source = TokenSource(resolved, now=lambda: now[0])
    first = source.token()
    now[0] += 0.79 * idp.lifetime_s
    assert source.token() == first and source.fetches == 1
    now[0] += 0.02 * idp.lifetime_s
    source.token()
    assert source.fetches == 2


def test_a_client_reconnects_with_a_fresh_token_when_its_session_ends(
        broker: BrokerProcess, idp: IdentityProvider) -> None:
    with Admin(pyq_options(broker, idp, "brief")) as admin:  # brief's tokens live 3 s
        assert admin.describe_cluster().brokers
        fetched = idp.token_requests
        deadline = time.time() + 3.5
        wait_for(lambda: time.time() > deadline, what="brief's first token to expire")
        assert admin.describe_cluster().brokers  # the broker closed the session; a new token
    assert idp.token_requests > fetched


def test_token_is_fetched_once_and_shared(broker: BrokerProcess, idp: IdentityProvider) -> None:
    opts = pyq_options(broker, idp, "alice", **{"client.id": f"shared-{uuid.uuid4().hex[:6]}"})
    with Admin(opts) as admin:
        admin.list_topics()
    before = idp.token_requests
    for _ in range(3):
        with Admin(opts) as admin:
            assert "orders-pyq" in admin.list_topics()
    assert idp.token_requests == before  # cached: well inside 80% of an hour's lifetime


@pytest.mark.parametrize(("client", "why"), [
    ("stale", "the token expired at"),
    ("stranger", "the token's issuer 'http://elsewhere.example/' is not the expected"),
    ("outsider", "the token's audience 'another-service' holds none of the expected ['pyq-test']"),
    ("forger", "which the JWKS of"),
])
def test_bad_tokens_are_refused_with_the_reason_and_others_are_served(
        broker: BrokerProcess, idp: IdentityProvider, client: str, why: str) -> None:
    with pytest.raises(AuthenticationError) as refused:
        with Admin(pyq_options(broker, idp, client, **{"default.api.timeout.ms": 5000})) as admin:
            admin.list_topics()
    assert "SASL OAUTHBEARER authentication of" in str(refused.value)
    assert why in str(refused.value)
    with Admin(pyq_options(broker, idp, "alice")) as admin:  # the others keep being served
        assert "orders-pyq" in admin.list_topics()


def test_refusal_on_the_wire_is_rfc7628s_error_challenge_then_a_closed_connection(
        broker: BrokerProcess, idp: IdentityProvider) -> None:
    w = Wire(broker.bootstrap_servers)
    assert w.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"}).error_code == 0
    token = idp.mint("alice", exp=-3600, iat=-7200)
    challenge = w.call(ApiKey.SASL_AUTHENTICATE, 2,
                       {"auth_bytes": f"n,,\x01auth=Bearer {token}\x01\x01".encode()})
    assert challenge.error_code == 0
    assert json.loads(bytes(challenge.auth_bytes)) == {"status": "invalid_token"}
    final = w.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x01"})
    assert final.error_code == SaslAuthenticationFailed.code
    assert "the OAUTHBEARER token was refused: the token expired at" in final.error_message
    assert w.closed()  # nothing is served on that connection


def test_session_ends_with_its_token(broker: BrokerProcess, idp: IdentityProvider) -> None:
    w = Wire(broker.bootstrap_servers)
    assert w.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"}).error_code == 0
    token = idp.mint("alice", lifetime_s=3)
    ok = w.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": f"n,,\x01auth=Bearer {token}\x01\x01".encode()})
    assert (ok.error_code, bytes(ok.auth_bytes)) == (0, b"")
    assert w.call(ApiKey.METADATA, 8, METADATA_ALL).brokers  # served while the token is valid

    def refused() -> bool:
        try:
            w.call(ApiKey.METADATA, 8, METADATA_ALL)
        except (OSError, EOFError, ConnectionError):
            return True
        return False
    wait_for(refused, timeout=15, interval=0.5, what="the broker closing the connection at exp")


def test_key_rotation_a_token_of_the_new_key_is_accepted(broker: BrokerProcess, idp: IdentityProvider) -> None:
    with Admin(pyq_options(broker, idp, "alice")) as admin:  # the JWKS is cached by now
        admin.list_topics()
    fetched = idp.jwks_requests
    new_kid = idp.rotate()
    token = idp.mint("carol")
    assert json.loads(_b64(token.split(".")[0]))["kid"] == new_kid
    with Admin(pyq_options(broker, idp, "carol")) as admin:  # carol's token: signed by the new key
        assert admin.describe_cluster().brokers
    assert idp.jwks_requests == fetched + 1  # the unknown kid made the broker fetch the JWKS again


def test_a_jwks_outage_fails_fast_and_keys_held_keep_working(idp: IdentityProvider) -> None:
    config = OAuthBearerConfig(jwks_endpoint_url=idp.jwks_url, expected_issuer=idp.issuer,
                               expected_audience=(idp.audience,))
    cold = JwksValidator(config)
    idp.jwks_failure = 503
    try:
        with pytest.raises(TokenRefused, match=f"the JWKS endpoint {idp.jwks_url} answered HTTP 503"):
            cold.validate(idp.mint("alice"))
        asked = idp.jwks_requests
        started = time.monotonic()
        with pytest.raises(TokenRefused, match="answered HTTP 503"):  # within the backoff: not asked
            cold.validate(idp.mint("alice"))
        assert idp.jwks_requests == asked and time.monotonic() - started < 1
    finally:
        idp.jwks_failure = None

    def validated() -> str | None:
        try:
            return cold.validate(idp.mint("alice")).principal_name
        except TokenRefused:
            return None
    assert wait_for(validated, what="the endpoint back") == "alice"

    idp.jwks_failure = 503  # keys held: a token of a key held still passes, a new key cannot be had
    try:
        assert cold.validate(idp.mint("alice")).principal_name == "alice"
        idp.rotate()
        with pytest.raises(TokenRefused, match="which the JWKS of"):
            cold.validate(idp.mint("alice"))
    finally:
        idp.jwks_failure = None


def _b64(part: str) -> bytes:
    import base64
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def test_refusing_token_endpoint_names_the_url_and_status(broker: BrokerProcess, idp: IdentityProvider) -> None:
    opts = pyq_options(broker, idp, "alice", **{"sasl.oauthbearer.client.secret": "wrong",
                                                 "default.api.timeout.ms": 5000})
    with pytest.raises(AuthenticationError) as refused:
        with Admin(opts) as admin:
            admin.list_topics()
    assert f"the token endpoint {idp.token_url} answered HTTP 401 to client 'alice'" in str(refused.value)


def test_an_unreachable_token_endpoint_is_named(broker: BrokerProcess, idp: IdentityProvider) -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/token"
    opts = pyq_options(broker, idp, "alice", **{"sasl.oauthbearer.token.endpoint.url": url,
                                                 "default.api.timeout.ms": 5000})
    with pytest.raises(AuthenticationError, match=f"OAUTHBEARER: no token from the token endpoint {url}"):
        with Admin(opts) as admin:
            admin.list_topics()


@pytest.mark.parametrize(("options", "message"), [
    ({"sasl.oauthbearer.method": "oidc"}, "Missing configuration sasl.oauthbearer.token.endpoint.url"),
    ({"sasl.oauthbearer.method": "jwt-bearer"},
     "Invalid value 'jwt-bearer' for configuration sasl.oauthbearer.method: must be one of default, oidc"),
    ({"sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.token.endpoint.url": "ftp://idp/token",
      "sasl.oauthbearer.client.id": "a", "sasl.oauthbearer.client.secret": "b"},
     "sasl.oauthbearer.token.endpoint.url: must be an http:// or https:// URL"),
    ({"sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.token.endpoint.url": "http://idp/token",
      "sasl.oauthbearer.client.id": "a"}, "Missing configuration sasl.oauthbearer.client.secret"),
    ({}, "Missing configuration sasl.oauthbearer.config: sasl.oauthbearer.method=default"),
    ({"sasl.oauthbearer.config": "principal=a colour=blue"}, "'colour=blue' is not one of"),
    ({"sasl.oauthbearer.config": "principal=a", "sasl.username": "a"},
     "Invalid value for configuration sasl.username: sasl.mechanism=OAUTHBEARER takes no user"),
    ({"sasl.oauthbearer.config": "principal=a",
      "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required username=a;"},
     "sasl.mechanism=OAUTHBEARER needs org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"),
    ({"sasl.oauthbearer.token.endpoint.url": "http://idp/token", "sasl.oauthbearer.client.id": "a",
      "sasl.oauthbearer.client.credentials.client.id": "b", "sasl.oauthbearer.client.secret": "s"},
     "sasl.oauthbearer.client.credentials.client.id: it differs from sasl.oauthbearer.client.id"),
    ({"sasl.oauthbearer.token.endpoint.url": "http://idp/token", "sasl.oauthbearer.client.id": "a",
      "sasl.oauthbearer.client.secret": "s", "sasl.oauthbearer.jwt.retriever.class": "x.JwtBearerJwtRetriever"},
     "Invalid value x.JwtBearerJwtRetriever for configuration sasl.oauthbearer.jwt.retriever.class"),
    ({"sasl.oauthbearer.config": "principal=a",
      "sasl.login.callback.handler.class": "com.example.MyHandler"},
     "Invalid value com.example.MyHandler for configuration sasl.login.callback.handler.class"),
])
def test_bad_oauthbearer_options_are_refused_at_construction(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        Producer({"bootstrap.servers": "127.0.0.1:9", "security.protocol": "SASL_SSL",
                  "sasl.mechanism": "OAUTHBEARER", **options})
    assert message in str(refused.value)


def test_oauthbearer_options_without_oauthbearer_are_refused() -> None:
    with pytest.raises(ConfigError, match="sasl.oauthbearer.client.id is set but only OAUTHBEARER uses it"):
        Producer({"bootstrap.servers": "127.0.0.1:9", "security.protocol": "SASL_SSL",
                  "sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": "p",
                  "sasl.oauthbearer.client.id": "a"})


# ---- librdkafka ------------------------------------------------------------------------
def _ck(proc: BrokerProcess, idp: IdentityProvider, client: str, **extra: Any) -> dict[str, Any]:
    return {**pyq_options(proc, idp, client), **extra}


def test_librdkafka_oidc(broker: BrokerProcess, idp: IdentityProvider) -> None:
    reports: list[Any] = []
    producer = CkProducer(_ck(broker, idp, "alice"))
    producer.produce("orders-rd", b"from librdkafka", on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(30) == 0 and reports == [None]

    consumer = CkConsumer(_ck(broker, idp, "alice", **{"group.id": "alice-rd",
                                                        "auto.offset.reset": "earliest"}))
    try:
        consumer.subscribe(["orders-rd"])
        msg = wait_for(lambda: (m := consumer.poll(0.5)) is not None and m.error() is None and m,
                       what="librdkafka consuming as alice")
        assert msg.value() == b"from librdkafka"
    finally:
        consumer.close()

    refused: list[Any] = []
    bob = CkProducer(_ck(broker, idp, "bob"))
    bob.produce("orders-rd", b"from bob", on_delivery=lambda err, msg: refused.append(err))
    bob.flush(30)
    assert [e.code() for e in refused] == [CkKafkaError.TOPIC_AUTHORIZATION_FAILED]


# ---- kafka-python ----------------------------------------------------------------------
class ClientCredentialsProvider(AbstractTokenProvider):
    """kafka-python's token provider hook: a client-credentials grant to the test's endpoint."""

    def __init__(self, idp: IdentityProvider, client: str) -> None:
        self.idp, self.client = idp, client

    def token(self) -> str:
        import base64
        basic = base64.b64encode(f"{self.client}:{CLIENTS[self.client]}".encode()).decode()
        request = urllib.request.Request(self.idp.token_url, method="POST",
                                         data=b"grant_type=client_credentials&scope=kafka",
                                         headers={"Authorization": f"Basic {basic}"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            return str(json.loads(answer.read())["access_token"])


def _kp(proc: BrokerProcess, idp: IdentityProvider, client: str) -> dict[str, Any]:
    return {"bootstrap_servers": proc.bootstrap_servers, "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": ClientCredentialsProvider(idp, client)}


def test_kafka_python_token_provider(broker: BrokerProcess, idp: IdentityProvider) -> None:
    producer = KafkaProducer(**_kp(broker, idp, "alice"))
    try:
        assert producer.send("orders-kp", b"from kafka-python").get(30).offset == 0
    finally:
        producer.close()
    consumer = KafkaConsumer(**_kp(broker, idp, "alice"), consumer_timeout_ms=10_000)
    try:
        tp = KpTopicPartition("orders-kp", 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        assert [m.value for m in consumer][:1] == [b"from kafka-python"]
    finally:
        consumer.close()


def test_kafka_python_and_librdkafka_are_refused_bad_tokens(
        broker: BrokerProcess, idp: IdentityProvider) -> None:
    # kafka-python 3.0 retries a refused login until bootstrap_timeout_ms, then raises
    # KafkaTimeoutError without the broker's message. librdkafka refuses an expired token
    # itself, so it is given one for another audience, and reports the broker's reason
    with pytest.raises(KafkaPythonError):
        KafkaProducer(**_kp(broker, idp, "stale"), max_block_ms=3000, bootstrap_timeout_ms=3000)
    errors: list[Any] = []
    rd = CkProducer(_ck(broker, idp, "outsider", error_cb=errors.append))
    try:
        rd.produce("orders-rd", b"never")
        wait_for(lambda: rd.poll(0.2) is not None and any(
            e.code() == CkKafkaError._AUTHENTICATION for e in errors), what="librdkafka's auth error")
        assert any("the token's audience 'another-service' holds none of the expected" in e.str()
                   for e in errors), [e.str() for e in errors]
    finally:
        rd.purge()
        rd.flush(0)


# ---- the unsecured development mode ------------------------------------------------------
@pytest.fixture(scope="module")
def unsecured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("oauth-unsecured"), overrides={
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "OAUTHBEARER",
        "authorizer.class.name": "pyq", "super.users": "User:admin", "auto.create.topics.enable": "false"})
    proc.start()
    yield proc
    proc.stop()


class UnsecuredProvider(AbstractTokenProvider):
    """kafka-python's hook giving an unsigned token (alg none), as for Kafka's development mode."""

    def __init__(self, principal: str) -> None:
        self.settings = settings(None, None, None, None, None, f"principal={principal}", None, {}, None)

    def token(self) -> str:
        return unsecured_token(self.settings, time.time())[0]


def _unsecured(proc: BrokerProcess, principal: str) -> dict[str, Any]:
    return {"bootstrap.servers": proc.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.config": f"principal={principal}"}


def test_unsecured_tokens_with_pyq_librdkafka_and_kafka_python(unsecured: BrokerProcess, idp: IdentityProvider) -> None:
    with Admin(_unsecured(unsecured, "admin")) as admin:
        admin.create_topic("dev", num_partitions=1)
        admin.create_acls([AclBinding.create(ResourceType.TOPIC, "dev", PatternType.LITERAL, "User:dana",
                                             "*", Operation.WRITE, Permission.ALLOW)])
    producer = Producer(_unsecured(unsecured, "dana"))
    try:
        assert producer.send("dev", b"pyq").get(10).offset == 0
    finally:
        producer.close()
    reports: list[Any] = []
    rd = CkProducer({**_unsecured(unsecured, "dana"), "enable.sasl.oauthbearer.unsecure.jwt": True})
    rd.produce("dev", b"librdkafka", on_delivery=lambda err, msg: reports.append(err))
    assert rd.flush(30) == 0 and reports == [None]
    kp = KafkaProducer(bootstrap_servers=unsecured.bootstrap_servers, security_protocol="SASL_PLAINTEXT",
                       sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=UnsecuredProvider("dana"))
    try:
        assert kp.send("dev", b"kafka-python").get(30).offset == 2
    finally:
        kp.close()
    # the principal is the token's sub: eve has no ACL
    eve = Producer(_unsecured(unsecured, "eve"), enable_idempotence=False, acks=1)
    try:
        with pytest.raises(TopicAuthorizationFailed):
            eve.send("dev", b"eve").get(10)
    finally:
        eve.close()
    # a signed token is not what this listener takes
    w = Wire(unsecured.bootstrap_servers)
    assert w.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"}).error_code == 0
    w.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": f"n,,\x01auth=Bearer {idp.mint('dana')}\x01\x01".encode()})
    final = w.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x01"})
    assert final.error_code == SaslAuthenticationFailed.code
    assert "accepts only unsecured tokens (alg 'none'), this one is signed with 'RS256'" in final.error_message


def test_an_unsigned_token_is_refused_where_a_jwks_is_configured(broker: BrokerProcess) -> None:
    with pytest.raises(AuthenticationError, match="the token's algorithm 'none' is not allowed"):
        with Admin({**_unsecured(broker, "admin"), "default.api.timeout.ms": 5000}) as admin:
            admin.list_topics()


@pytest.mark.parametrize(("props", "message"), [
    ({"sasl.oauthbearer.jwks.endpoint.url": "ldap://idp/keys"},
     "sasl.oauthbearer.jwks.endpoint.url='ldap://idp/keys' is not allowed: must be an http://, https:// or file: URL"),
    ({"sasl.oauthbearer.clock.skew.seconds": "-1"},
     "sasl.oauthbearer.clock.skew.seconds='-1' is not allowed: must be an integer >= 0"),
    ({"sasl.oauthbearer.jwks.endpoint.refresh.ms": "soon"},
     "sasl.oauthbearer.jwks.endpoint.refresh.ms='soon' is not allowed: must be an integer >= 1"),
    ({"sasl.oauthbearer.sub.claim.name": " "}, "sasl.oauthbearer.sub.claim.name=' ' is not allowed"),
    ({"sasl.enabled.mechanisms": "OAUTHBEARER,GSSAPI"},
     "must be a comma-separated list of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER"),
])
def test_bad_broker_oauthbearer_options_are_refused(props: dict[str, str], message: str) -> None:
    with pytest.raises(BrokerConfigError) as refused:
        BrokerConfig.from_properties(props)
    assert message in str(refused.value)


def test_broker_oauthbearer_options_are_read() -> None:
    config = BrokerConfig.from_properties({
        "sasl.enabled.mechanisms": "OAUTHBEARER", "sasl.oauthbearer.jwks.endpoint.url": "https://idp/keys",
        "sasl.oauthbearer.expected.audience": "a, b", "sasl.oauthbearer.sub.claim.name": "client_id",
        "sasl.oauthbearer.clock.skew.seconds": "5"})
    assert config.sasl_enabled_mechanisms == ("OAUTHBEARER",)
    assert (config.oauthbearer.expected_audience, config.oauthbearer.sub_claim_name,
            config.oauthbearer.clock_skew_seconds) == (("a", "b"), "client_id", 5)
    assert config.static_properties()["sasl.oauthbearer.jwks.endpoint.url"] == ("https://idp/keys", True)
    assert BrokerConfig().sasl_enabled_mechanisms == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def test_the_pyq_command_with_a_java_properties_file(broker: BrokerProcess, idp: IdentityProvider,
                                                     tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
        f"sasl.oauthbearer.token.endpoint.url={idp.token_url}\n"
        "sasl.login.callback.handler.class="
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n"
        "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
        'required clientId="alice" clientSecret="alice-secret" scope="kafka";\n')
    listed = pyq("topics", "list", "--bootstrap-server", broker.bootstrap_servers,
                 "--command-config", str(config))
    assert listed.returncode == 0, listed.stderr
    assert "orders-pyq" in listed.stdout.split()
    refused = pyq("topics", "list", "--bootstrap-server", broker.bootstrap_servers,
                  "--command-config", str(config), "-X", "sasl.oauthbearer.method=jwt")
    assert refused.returncode != 0
    assert "Invalid value 'jwt' for configuration sasl.oauthbearer.method" in refused.stderr
