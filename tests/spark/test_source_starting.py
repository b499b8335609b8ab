"""Where a pyq read starts: the group's committed offsets (and whose they are), a
timestamp, and the topics a pattern picks — against a real broker and SparkSession."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.sql import Row

from connector.client import Admin
from tests.spark.test_source import create, produce, run_available_now

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def bootstrap(broker_under_test):
    """pyq's broker, then Apache Kafka: every test here holds on both."""
    return broker_under_test.bootstrap_servers


def _rows(spark, records, schema):
    return spark.createDataFrame([Row(partition=p, offset=o, value=v)
                                  for _k, v, _t, p, o, _ts in records], schema)


def test_committed_resumes_a_new_query_where_the_group_left_off(spark, bootstrap, tmp_path):
    create(bootstrap, "resume-src", 2)
    first = produce(bootstrap, "resume-src", 1000, partitions=2)
    run_available_now(spark, bootstrap, "resume-src", tmp_path / "ck1", "resume_first",
                      groupId="resume-group", queryName="resume-etl")
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        committed = admin.fetch_offsets("resume-group", [("resume-src", 0), ("resume-src", 1)])
    assert [om.offset for om in committed.values()] == [500, 500]
    assert all('"query": "resume-etl"' in om.metadata for om in committed.values())

    second = produce(bootstrap, "resume-src", 600, partitions=2, start=1000)
    # a new query (fresh checkpoint) of the same group and name starts at the commits
    run_available_now(spark, bootstrap, "resume-src", tmp_path / "ck2", "resume_second",
                      startingOffsets="committed", groupId="resume-group",
                      queryName="resume-etl")
    got = spark.sql("select partition, offset, value from resume_second")
    assert_df_equality(got, _rows(spark, second, got.schema), ignore_row_order=True,
                       ignore_nullable=True)
    assert spark.sql("select count(*) from resume_first").first()[0] == len(first)


def test_committed_offsets_of_another_query_are_not_reused(spark, bootstrap, tmp_path):
    create(bootstrap, "owned-src", 1)
    produce(bootstrap, "owned-src", 100, partitions=1)
    run_available_now(spark, bootstrap, "owned-src", tmp_path / "ck1", None,
                      path=tmp_path / "out1", groupId="owned-group", queryName="owner")
    reader = (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", "owned-src").option("startingOffsets", "committed")
              .option("groupId", "owned-group").option("queryName", "intruder").load())
    with pytest.raises(Exception, match="committed by query 'owner', not 'intruder'"):
        (reader.writeStream.format("memory").queryName("owned_intruder")
         .option("checkpointLocation", str(tmp_path / "ck2"))
         .trigger(availableNow=True).start().awaitTermination(120))
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        committed = admin.fetch_offsets("owned-group", [("owned-src", 0)])
    assert [om.offset for om in committed.values()] == [100]
    assert all('"query": "owner"' in om.metadata for om in committed.values())


def test_starting_timestamp_reads_records_from_that_time_on(spark, bootstrap):
    create(bootstrap, "ts-src", 3)
    records = produce(bootstrap, "ts-src", 900, partitions=3)  # timestamps 1_700_000_000_000 + i
    got = (spark.read.format("pyq").option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", "ts-src").option("startingTimestamp", "1700000000600")
           .option("endingOffsets", "latest").load()
           .select("partition", "offset", "value"))
    later = [r for r in records if r[5] >= 1_700_000_000_600]
    assert len(later) == 300
    assert_df_equality(got, _rows(spark, later, got.schema), ignore_row_order=True,
                       ignore_nullable=True)


def test_subscribe_pattern_reads_every_matching_topic_and_no_other(spark, bootstrap):
    for name in ("pat-orders", "pat-refunds", "other-orders"):
        create(bootstrap, name, 2)
    wanted = (produce(bootstrap, "pat-orders", 40, partitions=2)
              + produce(bootstrap, "pat-refunds", 30, partitions=2, start=40))
    produce(bootstrap, "other-orders", 20, partitions=2, start=70)
    got = (spark.read.format("pyq").option("kafka.bootstrap.servers", bootstrap)
           .option("subscribePattern", "pat-.*").option("startingOffsets", "earliest")
           .load().select("topic", "partition", "offset", "value"))
    expected = spark.createDataFrame([Row(topic=t, partition=p, offset=o, value=v)
                                      for _k, v, t, p, o, _ts in wanted], got.schema)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
