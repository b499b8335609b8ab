"""The jobs on a secured pyq cluster (SASL_SSL, SCRAM-SHA-512, ACLs on), and a Spark job
ported from ``format("kafka")`` with Spark's own option spellings and a JKS trust store.

The jobs get their security from a Java client properties file (``--command-config``: a
``ScramLoginModule`` jaas line and a keytool-written JKS trust store) and ``-X``, as
``kafka-console-*.sh`` or ``pyq`` would: generate_events produces, sessionize turns the
clicks into window counts and dead letters, replay_dead_letters reports them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import Row

from connector.client import Admin, Fetcher
from connector.cluster import EmbeddedCluster
from tests.conftest import KAFKA_USERS
from tests.keytool_stores import truststore
from tests.secured import secured_pyq_cluster

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "jobs"))

import generate_events  # noqa: E402
import replay_dead_letters  # noqa: E402
import sessionize  # noqa: E402

pytestmark = pytest.mark.integration
TRUST_PASS = "trust-secret"
JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" '
        f'password="{KAFKA_USERS["admin"]}";')


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with secured_pyq_cluster(tmp_path_factory.mktemp("secured-jobs")) as started:
        yield started


@pytest.fixture(scope="module")
def jks_truststore(cluster: EmbeddedCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert cluster.security is not None
    return truststore(cluster.security.ca.ca_path,
                      tmp_path_factory.mktemp("jks") / "truststore.jks", "JKS", TRUST_PASS)


def _end(admin: Admin, topic: str) -> list[int]:
    parts = admin.describe_topics([topic])[topic].partitions
    offsets = admin.list_offsets({(topic, p.partition): "latest" for p in parts})
    return [o.offset for _, o in sorted(offsets.items())]


def test_jobs_run_on_a_secured_cluster_from_a_command_config(spark, cluster, jks_truststore,
                                                             tmp_path, capsys):
    mechanism = cluster.client_options("admin")["sasl.mechanism"]
    props = tmp_path / "client.properties"
    props.write_text("# as handed out for a managed cluster\n"
                     "security.protocol=SASL_SSL\n"
                     f"sasl.mechanism={mechanism}\n"
                     f"sasl.jaas.config={JAAS}\n"
                     "ssl.truststore.type=JKS\n"
                     f"ssl.truststore.location={jks_truststore}\n"
                     f"ssl.truststore.password={TRUST_PASS}\n")
    connection = ["--bootstrap-server", cluster.bootstrap_servers, "--command-config", str(props),
                  "-X", "client.id=secured-jobs"]
    assert generate_events.main([*connection, "--topic", "sec-clicks", "--count", "400",
                                 "--malformed-fraction", "0.05", "--partitions", "2",
                                 "--seed", "3", "--no-progress"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    malformed = int(line.split()[3].strip("("))
    assert line == f"produced 400 events ({malformed} malformed)" and malformed > 0

    args = [*connection, "--input-topic", "sec-clicks", "--output-topic", "sec-counts",
            "--dead-letter-topic", "sec-dlq", "--group-id", "sec-sessionize",
            "--parquet-dir", str(tmp_path / "events"), "--checkpoint-dir", str(tmp_path / "ck")]
    totals: dict[str, int] = {}
    client = cluster.client_options("admin")
    with Admin(client) as admin:
        for _ in range(4):  # AvailableNow may end before the last retries are dead-lettered
            assert sessionize.main(args, spark=spark) == 0
            counts = json.loads(capsys.readouterr().out.split("SUMMARY ", 1)[1].splitlines()[0])
            for k, v in counts.items():
                totals[k] = totals.get(k, 0) + v
            if "sec-dlq" in admin.list_topics() and sum(_end(admin, "sec-dlq")) >= malformed:
                break
        dead = sum(_end(admin, "sec-dlq"))
        counts_end = _end(admin, "sec-counts")
    assert totals["events_in"] == 400 and totals["malformed"] == malformed == dead
    with Fetcher(client) as fetcher:
        results = [json.loads(r.value) for p, end in enumerate(counts_end)
                   for r in fetcher.iter_records("sec-counts", p, 0, end)]
    latest = sessionize.latest_totals(results)
    assert sum(latest.values()) + totals["late_dropped"] == 400 - malformed

    assert replay_dead_letters.main([*connection, "--topic", "sec-dlq"], spark=spark) == 0
    assert f"dead letters in sec-dlq: {malformed}" in capsys.readouterr().out


def test_connection_option_errors_and_the_deprecated_spelling(cluster, jks_truststore, tmp_path,
                                                              capsys):
    props = tmp_path / "wrong.properties"
    props.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                     f"sasl.jaas.config={JAAS}\nssl.truststore.type=JKS\n"
                     f"ssl.truststore.location={jks_truststore}\n"
                     "ssl.truststore.password=not-the-password\n")
    with pytest.raises(SystemExit) as e:
        generate_events.main(["--command-config", str(props), "--count", "1"])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert (f"Invalid value {jks_truststore} for configuration ssl.truststore.location: "
            "ssl.truststore.password is wrong") in err and "not-the-password" not in err
    with pytest.raises(SystemExit):
        generate_events.main(["-X", "ssl.truststore.typo=JKS", "--count", "1"])
    assert "Unknown configuration 'ssl.truststore.typo'" in capsys.readouterr().err

    with Admin(cluster.client_options("admin")) as admin:
        admin.create_topic("sec-deprecated", num_partitions=1)
    x = [f"-X{k}={v}" for k, v in cluster.client_options("admin").items() if k != "bootstrap.servers"]
    assert generate_events.main(["--bootstrap-servers", cluster.bootstrap_servers, *x,
                                 "--topic", "sec-deprecated", "--count", "5", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("--bootstrap-servers is deprecated; use --bootstrap-server") == 1
    assert captured.out.strip().endswith("produced 5 events (0 malformed)")


def test_a_ported_spark_job_with_sparks_option_spellings(spark, cluster, jks_truststore):
    """A Spark job written for format("kafka") against a managed cluster: Spark's kafka.*
    spellings, a JKS trust store, SCRAM through sasl.jaas.config."""
    with Admin(cluster.client_options("admin")) as admin:
        admin.create_topic("ported-in", num_partitions=2)
        admin.create_topic("ported-out", num_partitions=2)
    kafka_options = {
        "kafka.bootstrap.servers": cluster.bootstrap_servers,
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": JAAS,
        "kafka.ssl.truststore.type": "JKS",
        "kafka.ssl.truststore.location": str(jks_truststore),
        "kafka.ssl.truststore.password": TRUST_PASS,
    }
    rows = spark.createDataFrame([Row(key=f"k{i}", value=f"click {i}") for i in range(200)])
    # .mode("append"): PySpark refuses df.write's default ErrorIfExists for every Python data
    # source (README, "save mode"), the one change besides format a batch write needs.
    rows.write.format("pyq").options(**kafka_options).option("topic", "ported-in") \
        .mode("append").save()

    (spark.read.format("pyq").options(**kafka_options).option("subscribe", "ported-in")
     .option("startingOffsets", "earliest").option("endingOffsets", "latest").load()
     .selectExpr("key", "CAST(upper(CAST(value AS STRING)) AS BINARY) AS value")
     .write.format("pyq").options(**kafka_options).option("topic", "ported-out")
     .mode("append").save())

    back = (spark.read.format("pyq").options(**kafka_options).option("subscribe", "ported-out")
            .load().selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value"))
    expected = spark.createDataFrame([Row(key=f"k{i}", value=f"CLICK {i}") for i in range(200)])
    assert_df_equality(back, expected, ignore_row_order=True, ignore_nullable=True)
