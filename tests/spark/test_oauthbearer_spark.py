"""Spark's reads and writes through pyq over SASL/OAUTHBEARER (OIDC client credentials),
with the options a Spark Kafka job has for it (``kafka.sasl.jaas.config`` with
``OAuthBearerLoginModule``, ``kafka.sasl.oauthbearer.token.endpoint.url``,
``kafka.sasl.login.callback.handler.class``), unchanged but for ``format("pyq")``.

The identity provider (token endpoint and JWKS) runs in the test process; the Spark
workers fetch their tokens from it, and the broker validates them against its JWKS.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from chispa import assert_df_equality
from pyspark.sql import Row

from broker_sim.process import BrokerProcess
from connector.client import Admin
from tests.security.identity_provider import IdentityProvider

pytestmark = pytest.mark.integration

CLIENTS = {"etl": "etl-secret"}


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    provider = IdentityProvider(CLIENTS)
    yield provider
    provider.stop()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, idp: IdentityProvider) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("oauth-spark"), overrides={
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "OAUTHBEARER",
        "sasl.oauthbearer.jwks.endpoint.url": idp.jwks_url,
        "sasl.oauthbearer.expected.issuer": idp.issuer,
        "sasl.oauthbearer.expected.audience": idp.audience, "auto.create.topics.enable": "false"})
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


def _spark_options(proc: BrokerProcess, idp: IdentityProvider, secret: str = "etl-secret") -> dict[str, str]:
    """What a Spark Kafka job on an OAuth-secured cluster passes (Java's names)."""
    return {"kafka.bootstrap.servers": proc.bootstrap_servers,
            "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "OAUTHBEARER",
            "kafka.sasl.oauthbearer.token.endpoint.url": idp.token_url,
            "kafka.sasl.login.callback.handler.class":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
            "kafka.sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                                      f'required clientId="etl" clientSecret="{secret}" scope="kafka";'}


def test_batch_write_then_read_over_oauthbearer(spark, broker: BrokerProcess, idp: IdentityProvider) -> None:
    options = _spark_options(broker, idp)
    with Admin({k.removeprefix("kafka."): v for k, v in options.items()}) as admin:
        admin.create_topic("oauth-in", num_partitions=2)
    df = spark.createDataFrame([Row(key=f"k{i}", value=f"v{i}") for i in range(300)])
    df.write.format("pyq").options(**options).option("topic", "oauth-in").mode("append").save()
    back = (spark.read.format("pyq").options(**options).option("subscribe", "oauth-in").load()
            .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value"))
    assert_df_equality(back, df, ignore_row_order=True, ignore_nullable=True)


def test_a_refused_client_secret_fails_the_read_at_once(spark, broker: BrokerProcess,
                                                        idp: IdentityProvider) -> None:
    started = time.monotonic()
    with pytest.raises(Exception, match=f"the token endpoint {idp.token_url} answered HTTP 401"):
        spark.read.format("pyq").options(**_spark_options(broker, idp, "wrong")) \
            .option("subscribe", "oauth-in").load().collect()
    assert time.monotonic() - started < 30
