"""A streaming query's ``groupId`` beside an ordinary consumer group, as ``pyq groups`` and
``pyq lag`` show them, and as Kafka's own ``kafka-consumer-groups --describe`` does: the
query's group is a "simple" group (offsets committed with no members, generation -1),
Empty, with its committed offsets and counters; the consumer group is Stable with its
member. Real broker process (pyq's, then Apache Kafka), real SparkSession, real consumer."""

from __future__ import annotations

import time

import pytest
from chispa import assert_df_equality
from pyspark.sql import Row

from connector.client import Admin, Consumer
from reference.kafka_tools import run_tool
from tests.cli.support import pyq_here
from tests.reference.test_kafka_tools_on_pyq import table
from tests.spark.test_source import create, produce, run_available_now

pytestmark = pytest.mark.integration

TOPIC = "sg-clicks"


@pytest.fixture(scope="module")
def bootstrap(broker_under_test):
    """pyq's broker, then Apache Kafka: every test here holds on both."""
    return broker_under_test.bootstrap_servers


def pyq_table(monkeypatch, bootstrap, *args: str) -> list[list[str]]:
    out = pyq_here(monkeypatch, *args, "--bootstrap-server", bootstrap)
    assert out.returncode == 0, out.stderr
    return [line.split() for line in out.stdout.splitlines()]


def kafka_describe(bootstrap: str, group: str) -> list[tuple[str, ...]]:
    """``kafka-consumer-groups --describe --group``'s rows: topic, partition, committed offset,
    log end offset, lag and the member's id."""
    out = run_tool("kafka-consumer-groups", "--bootstrap-server", bootstrap, "--describe",
                   "--group", group).stdout
    return sorted((r["TOPIC"], r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"],
                   r["CONSUMER-ID"]) for r in table(out))


def assert_read(spark, path, records) -> None:
    got = spark.read.parquet(str(path)).select("partition", "offset", "value")
    expected = spark.createDataFrame([Row(partition=p, offset=o, value=v)
                                      for _k, v, _t, p, o, _ts in records], got.schema)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_a_querys_group_is_listed_beside_a_consumer_group(spark, bootstrap, monkeypatch, tmp_path):
    create(bootstrap, TOPIC, 2)
    first = produce(bootstrap, TOPIC, 200, partitions=2)
    out = tmp_path / "out"  # Parquet, not the memory sink: the second run resumes its checkpoint

    consumer = Consumer(bootstrap_servers=bootstrap, group_id="sg-app", auto_offset_reset="earliest",
                        enable_auto_commit=False, session_timeout_ms=10_000, heartbeat_interval_ms=500)
    try:
        consumer.subscribe([TOPIC])
        seen = 0
        deadline = time.monotonic() + 60
        while seen < 100:  # part of the topic: the consumer group has lag, the query none
            assert time.monotonic() < deadline, f"the consumer got {seen} records"
            seen += consumer.poll(200).num_rows
        consumer.commit()
        app_committed = {tp.partition: consumer.position(tp) for tp in consumer.assignment()}
        assert sum(app_committed.values()) == seen

        # the query runs while the consumer group is active, and commits as a simple group
        run_available_now(spark, bootstrap, TOPIC, tmp_path / "ck", None, path=out, groupId="sg-etl")
        assert_read(spark, out, first)

        listed = pyq_table(monkeypatch, bootstrap, "groups", "list")
        assert listed[0] == ["GROUP", "TYPE", "STATE", "MEMBERS", "COORDINATOR", "PROTOCOL"]
        # (the session's Kafka node also holds other modules' groups)
        assert [row[:4] for row in listed[1:] if row[0].startswith("sg-")] == [
            ["sg-app", "consumer", "Stable", "1"], ["sg-etl", "simple", "Empty", "0"]]

        lag = pyq_table(monkeypatch, bootstrap, "lag", "--group", "sg-etl")
        assert lag[0][:8] == ["GROUP", "sg-etl", "TYPE", "simple", "STATE", "Empty", "MEMBERS", "0"]
        assert lag[2] == ["TOPIC", "PARTITION", "COMMITTED", "LATEST", "LAG", "QUERY", "SKIPPED",
                          "LOST", "RETRIED", "DEAD_LETTERED"]
        assert lag[3:] == [[TOPIC, str(p), "100", "100", "0", "sg-etl", "0", "0", "0", "0"]
                           for p in range(2)]

        described = pyq_table(monkeypatch, bootstrap, "groups", "describe", "sg-app", "sg-etl")
        at = next(i for i, row in enumerate(described) if row[:2] == ["GROUP", "sg-etl"])
        app, etl = described[:at - 1], described[at:]  # a blank line between the two groups
        assert app[0][:8] == ["GROUP", "sg-app", "TYPE", "consumer", "STATE", "Stable", "MEMBERS", "1"]
        assert app[2][:8] == ["TOPIC", "PARTITION", "COMMITTED", "LATEST", "LAG", "CONSUMER", "HOST",
                              "CLIENT"]
        assert [row[:6] for row in app[3:]] == [
            [TOPIC, str(p), str(app_committed[p]), "100", str(100 - app_committed[p]),
             consumer.member_id] for p in range(2)]
        assert etl[0][:8] == ["GROUP", "sg-etl", "TYPE", "simple", "STATE", "Empty", "MEMBERS", "0"]
        assert [row[:5] for row in etl[3:]] == [[TOPIC, str(p), "100", "100", "0"] for p in range(2)]

        # Kafka's own tool shows the same: the query's commits (no member), and the member's
        assert kafka_describe(bootstrap, "sg-etl") == [(TOPIC, str(p), "100", "100", "0", "-")
                                                       for p in range(2)]
        assert kafka_describe(bootstrap, "sg-app") == [
            (TOPIC, str(p), str(app_committed[p]), "100", str(100 - app_committed[p]),
             consumer.member_id) for p in range(2)]

        # the query's commits keep working beside the member: a rerun commits the new records
        second = produce(bootstrap, TOPIC, 60, partitions=2, start=200)
        assert kafka_describe(bootstrap, "sg-etl") == [(TOPIC, str(p), "100", "130", "30", "-")
                                                       for p in range(2)]
        run_available_now(spark, bootstrap, TOPIC, tmp_path / "ck", None, path=out, groupId="sg-etl")
        assert_read(spark, out, first + second)  # resumed from its checkpoint: each record once
        lag = pyq_table(monkeypatch, bootstrap, "lag", "--group", "sg-etl")
        assert [row[:5] for row in lag[3:]] == [[TOPIC, str(p), "130", "130", "0"] for p in range(2)]
        assert kafka_describe(bootstrap, "sg-etl") == [(TOPIC, str(p), "130", "130", "0", "-")
                                                       for p in range(2)]
        with Admin(bootstrap_servers=bootstrap) as admin:
            d = admin.describe_groups(["sg-app"])["sg-app"]
            assert (d.state, [m.member_id for m in d.members]) == ("Stable", [consumer.member_id])
    finally:
        consumer.close()
