"""df.write / writeStream .format("pyq"): acks=all, exact round trips, exactly-once replays."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.sql import Row
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from connector.client import Admin, Fetcher
from tests.wire import wait_for

pytestmark = pytest.mark.integration

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
INPUT = StructType([StructField("key", BinaryType()), StructField("value", BinaryType()),
                    StructField("partition", IntegerType()), StructField("headers", HEADERS)])


@pytest.fixture(scope="module")
def bootstrap(broker_under_test):
    """pyq's broker, then Apache Kafka: every test here holds on both."""
    return broker_under_test.bootstrap_servers


def create(bootstrap, topic, partitions=3):
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topic(topic, partitions, 1)


def test_round_trip_keys_headers_and_partitions(spark, bootstrap):
    create(bootstrap, "sink-rt")
    rows = [Row(key=b"k%d" % i if i % 5 else None, value=b"v%d" % i, partition=i % 3,
                headers=[Row(key="h", value=b"%d" % i)] if i % 2 else [])
            for i in range(300)]
    df = spark.createDataFrame(rows, INPUT)
    df.write.format("pyq").option("kafka.bootstrap.servers", bootstrap).option("topic", "sink-rt") \
        .mode("append").save()
    back = (spark.read.format("pyq").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", "sink-rt").option("includeHeaders", "true").load()
            .select("key", "value", "partition", "headers"))
    assert_df_equality(back, df, ignore_row_order=True, ignore_nullable=True)


def test_invalid_input_fails_before_anything_is_written(spark, bootstrap):
    create(bootstrap, "sink-bad")
    no_value = spark.createDataFrame([Row(key=b"k")])
    with pytest.raises(Exception, match="has no 'value' column"):
        no_value.write.format("pyq").option("kafka.bootstrap.servers", bootstrap) \
            .option("topic", "sink-bad").mode("append").save()
    wrong_type = spark.createDataFrame([Row(value=3)])
    with pytest.raises(Exception, match="column 'value' has type bigint"):
        wrong_type.write.format("pyq").option("kafka.bootstrap.servers", bootstrap) \
            .option("topic", "sink-bad").mode("append").save()
    good = spark.createDataFrame([Row(value=b"x")])
    with pytest.raises(Exception, match="topic 'nowhere' does not exist"):
        good.write.format("pyq").option("kafka.bootstrap.servers", bootstrap) \
            .option("topic", "nowhere").mode("append").save()
    for mode, message in [("overwrite", "save mode Overwrite is not supported .* use Append"),
                          ("errorifexists", "UNSUPPORTED_DATA_SOURCE_SAVE_MODE"),  # PySpark's own
                          ("ignore", "UNSUPPORTED_DATA_SOURCE_SAVE_MODE")]:
        with pytest.raises(Exception, match=message):
            good.write.format("pyq").option("kafka.bootstrap.servers", bootstrap) \
                .option("topic", "sink-bad").mode(mode).save()
    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        assert fetcher.offset_bounds("sink-bad", 0) == (0, 0)


def test_streaming_sink_writes_each_row_with_acks_all(spark, bootstrap, tmp_path):
    create(bootstrap, "sink-in", 2)
    create(bootstrap, "sink-out", 2)
    spark.createDataFrame([Row(value=b"e%d" % i) for i in range(500)]).write.format("pyq") \
        .option("kafka.bootstrap.servers", bootstrap).option("topic", "sink-in").mode("append").save()
    query = (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", "sink-in").option("startingOffsets", "earliest").load()
             .selectExpr("key", "upper(cast(value as string)) as value")
             .writeStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
             .option("topic", "sink-out").option("exactlyOnce", "true").option("queryName", "upper")
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert query.exception() is None
    with Fetcher({"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}) as fetcher:
        wait_for(lambda: sum(fetcher.offset_bounds("sink-out", p)[1] for p in (0, 1)) > 500,
                 timeout=20, what="the commit markers")  # (markers take offsets too)
    out = spark.read.format("pyq").option("kafka.bootstrap.servers", bootstrap) \
        .option("subscribe", "sink-out").option("kafka.isolation.level", "read_committed").load()
    assert sorted(r.value for r in out.collect()) == sorted(b"E%d" % i for i in range(500))


def test_a_topic_created_a_moment_ago_is_waited_for(spark, cluster_factory):
    """A broker learns of a new topic at its next heartbeat to the controller: until then it
    answers Metadata without it. A write that asks such a broker right after the creation
    waits for the topic instead of calling it missing (as a producer waits max.block.ms)."""
    cluster = cluster_factory(3, overrides={"broker.heartbeat.interval.ms": "3000"},
                              session_timeout_ms=15_000)
    first, last = cluster.brokers[0].bootstrap_servers, cluster.brokers[-1].bootstrap_servers
    df = spark.createDataFrame([Row(value=b"v%d" % i) for i in range(50)])
    writes = {  # the topic checked by the driver, and a topic only the executors look up
        "fresh": lambda: df.write.format("pyq").option("topic", "fresh"),
        "fresh-by-column": lambda: df.selectExpr("'fresh-by-column' as topic", "value").write.format("pyq"),
    }
    for topic, writer in writes.items():
        with Admin({"bootstrap.servers": first}) as admin:  # the creation goes through broker 0
            admin.create_topic(topic, 2, 3)
        writer().option("kafka.bootstrap.servers", last).mode("append").save()
    for topic in writes:
        back = (spark.read.format("pyq").option("kafka.bootstrap.servers", first)
                .option("subscribe", topic).load().select("value"))
        assert_df_equality(back, df, ignore_row_order=True, ignore_nullable=True)
