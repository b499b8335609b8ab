"""Spark's reads and writes through pyq over SASL_SSL, configured as for a managed Kafka.

The options are what a Spark Kafka job copied from a managed service looks like
(``kafka.security.protocol``, ``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``, a CA),
against ``EmbeddedCluster(security="SASL_SSL")``; rows must arrive exactly (chispa), and a
wrong password fails the query with the clear authentication error.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from chispa import assert_df_equality
from pyspark.sql import Row

from connector.client import Admin
from connector.cluster import EmbeddedCluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secured() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(brokers=1, security="SASL_SSL", users={"etl": "etl-secret"}) as cluster:
        with Admin(cluster.client_options()) as admin:
            admin.create_topic("secure-in", num_partitions=2)
            admin.create_topic("secure-out", num_partitions=2)
        yield cluster


def _jaas_options(cluster: EmbeddedCluster, password: str = "etl-secret") -> dict[str, str]:
    """Java-style options, as a Spark Kafka job has them."""
    assert cluster.security is not None
    return {"kafka.bootstrap.servers": cluster.bootstrap_servers,
            "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
                                      f'required username="etl" password="{password}";',
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": str(cluster.security.ca.ca_path)}


def test_batch_write_then_read_over_sasl_ssl(spark, secured: EmbeddedCluster) -> None:
    options = _jaas_options(secured)
    df = spark.createDataFrame([Row(key=f"k{i}", value=f"v{i}") for i in range(500)])
    df.write.format("pyq").options(**options).option("topic", "secure-in").mode("append").save()
    back = (spark.read.format("pyq").options(**options).option("subscribe", "secure-in").load()
            .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value"))
    assert_df_equality(back, df, ignore_row_order=True, ignore_nullable=True)


def test_streaming_read_and_write_over_sasl_ssl(spark, secured: EmbeddedCluster, tmp_path) -> None:
    options = secured.spark_options()  # librdkafka-style names work the same
    with Admin(secured.client_options()) as admin:  # its own topics: independent of the others
        admin.create_topic("secure-stream-in", num_partitions=2)
        admin.create_topic("secure-stream-out", num_partitions=2)
    rows = spark.createDataFrame([Row(value=f"s{i}") for i in range(300)])
    rows.write.format("pyq").options(**options).option("topic", "secure-stream-in") \
        .mode("append").save()
    stream = (spark.readStream.format("pyq").options(**options)
              .option("subscribe", "secure-stream-in").option("startingOffsets", "earliest").load()
              .selectExpr("CAST(value AS STRING) AS value"))
    query = (stream.writeStream.format("pyq").options(**options)
             .option("topic", "secure-stream-out")
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    got = (spark.read.format("pyq").options(**options).option("subscribe", "secure-stream-out")
           .load().selectExpr("CAST(value AS STRING) AS value"))
    assert_df_equality(got, rows, ignore_row_order=True, ignore_nullable=True)


def test_a_wrong_password_fails_the_read_at_once(spark, secured: EmbeddedCluster) -> None:
    started = time.monotonic()
    with pytest.raises(Exception, match="SASL SCRAM-SHA-512 authentication of 'etl'"):
        spark.read.format("pyq").options(**_jaas_options(secured, "wrong")) \
            .option("subscribe", "secure-in").load().collect()
    assert time.monotonic() - started < 30


def test_unknown_kafka_options_are_refused_before_anything_runs(spark, secured: EmbeddedCluster) -> None:
    options = secured.spark_options()
    df = spark.createDataFrame([Row(value="x")])
    for name, value, says in [("kafka.acks", "1", "the sink always waits for the in-sync replicas"),
                              ("kafka.sasl.kerberos.service.name", "kafka", "a client option pyq implements"),
                              ("kafka.security.protocol", "SASL_SSLL", "must be one of PLAINTEXT")]:
        with pytest.raises(Exception, match=says):
            df.write.format("pyq").options(**{**options, name: value}).option("topic", "secure-out") \
                .mode("append").save()
    with pytest.raises(Exception, match="kafka.linger.ms"):
        spark.read.format("pyq").options(**{**options, "kafka.linger.ms": "5"}) \
            .option("subscribe", "secure-in").load()
