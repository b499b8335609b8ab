"""pyq's client against Apache Kafka's own SASL/OAUTHBEARER listeners.

One Kafka node of this module's own (not the session's) gets two extra SASL_PLAINTEXT
listeners: ``OIDC``, where Kafka's ``OAuthBearerValidatorCallbackHandler`` checks signed
tokens against the JWKS of the test's identity provider (expected issuer and audience), and
``DEV``, Kafka's default unsecured validator. Since Kafka 4.0 the JVM must be told which
OAuth URLs it may reach (``org.apache.kafka.sasl.oauthbearer.allowed.urls``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from connector.client import Admin, AuthenticationError, Fetcher, Producer
from reference.kafka_cluster import TEST_JVM_OPTIONS, KafkaCluster, free_ports
from tests.security.identity_provider import IdentityProvider

CLIENTS = {"alice": "alice-secret", "stale": "s"}
MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


class OAuthKafka:
    def __init__(self, cluster: KafkaCluster, oidc: str, dev: str) -> None:
        self.cluster, self.oidc, self.dev = cluster, oidc, dev


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    provider = IdentityProvider(CLIENTS)
    provider.misbehave("stale", "expired")
    yield provider
    provider.stop()


@pytest.fixture(scope="module")
def kafka_oauth(tmp_path_factory: pytest.TempPathFactory, idp: IdentityProvider) -> Iterator[OAuthKafka]:
    allowed = f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={idp.jwks_url},{idp.token_url}"
    cluster = KafkaCluster(tmp_path_factory.mktemp("kafka-oauth"), 1,
                           jvm_options=[*TEST_JVM_OPTIONS, allowed])
    node = cluster.nodes[0]
    oidc_port, dev_port = free_ports(2)
    plain = f"PLAINTEXT://127.0.0.1:{node.port}"
    extra = f"OIDC://127.0.0.1:{oidc_port},DEV://127.0.0.1:{dev_port}"
    cluster.overrides.update({
        "listeners": f"{plain},CONTROLLER://127.0.0.1:{node.controller_port},{extra}",
        "advertised.listeners": f"{plain},{extra}",
        "listener.security.protocol.map":
            "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,OIDC:SASL_PLAINTEXT,DEV:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.oidc.oauthbearer.sasl.server.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        "listener.name.oidc.oauthbearer.sasl.jaas.config": f"{MODULE} required;",
        "listener.name.dev.oauthbearer.sasl.jaas.config":
            f'{MODULE} required unsecuredLoginStringClaim_sub="broker";',
        "sasl.oauthbearer.jwks.endpoint.url": idp.jwks_url,
        "sasl.oauthbearer.expected.issuer": idp.issuer,
        "sasl.oauthbearer.expected.audience": idp.audience,
        "auto.create.topics.enable": "false",
    })
    cluster.start()
    try:
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            admin.create_topic("oauth-orders", num_partitions=1)
            admin.create_topic("oauth-dev", num_partitions=1)
        yield OAuthKafka(cluster, f"127.0.0.1:{oidc_port}", f"127.0.0.1:{dev_port}")
    finally:
        cluster.stop()


def _oidc(kafka: OAuthKafka, idp: IdentityProvider, client: str, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": kafka.oidc, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.token.endpoint.url": idp.token_url,
            "sasl.oauthbearer.client.id": client, "sasl.oauthbearer.client.secret": CLIENTS[client],
            "sasl.oauthbearer.scope": "kafka", **extra}


def test_pyq_client_on_kafkas_oidc_listener(kafka_oauth: OAuthKafka, idp: IdentityProvider) -> None:
    opts = _oidc(kafka_oauth, idp, "alice")
    producer = Producer(opts)
    try:
        assert producer.send("oauth-orders", b"pyq via kafka").get(30).offset == 0
    finally:
        producer.close()
    with Fetcher(opts) as fetcher:
        assert [r.value for r in fetcher.iter_records("oauth-orders", 0, 0, 1)] == [b"pyq via kafka"]
    with Admin(opts) as admin:  # Kafka advertises this listener's address to this client
        assert [f"{b.host}:{b.port}" for b in admin.describe_cluster().brokers] == [kafka_oauth.oidc]


def test_kafka_refuses_an_expired_token_from_pyqs_client(kafka_oauth: OAuthKafka,
                                                         idp: IdentityProvider) -> None:
    with pytest.raises(AuthenticationError) as refused:
        with Admin(_oidc(kafka_oauth, idp, "stale", **{"default.api.timeout.ms": 10_000})) as admin:
            admin.list_topics()
    assert "SASL OAUTHBEARER authentication of 'stale'" in str(refused.value)
    # Kafka says no more than RFC 7628's status (the reason is in its log); pyq's broker says why
    assert '{"status":"invalid_token"}' in str(refused.value)


def test_pyq_client_unsecured_on_kafkas_default_validator(kafka_oauth: OAuthKafka) -> None:
    opts = {"bootstrap.servers": kafka_oauth.dev, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.config": "principal=dana"}
    producer = Producer(opts)
    try:
        assert producer.send("oauth-dev", b"unsecured").get(30).offset == 0
    finally:
        producer.close()
