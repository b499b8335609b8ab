"""Porting test: the Python examples of Spark's Structured Streaming + Kafka Integration Guide,
run against a pyq broker with ``format("kafka")`` replaced by ``format("pyq")``.

Each example below keeps the guide's code as it is: the same options, the same topic names
(``topic1``, ``topic2``, the pattern ``topic.*``), the same ``selectExpr``. ``servers`` stands
for the guide's ``"host1:port1,host2:port2"``. The test around an example only gives it data
and looks at what it returns, with chispa. The one place a ported job must change is
PySpark's, not pyq's: ``df.write`` defaults to the ErrorIfExists save mode, which PySpark
refuses for every Python data source before pyq is called, so the batch writes need
``.mode("append")`` (:func:`test_batch_write_needs_append_spelled_out` shows both). The
guide's streaming writes name no checkpoint location, as a job run with
``spark.sql.streaming.checkpointLocation`` set does; the fixture :func:`checkpoints` sets it.

The guide's examples do not show ``assign`` or the timestamp options; the last tests read
with them in the same style, from the guide's option table.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, Row

from connector.client import Admin, Producer

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000  # record i of a partition has timestamp T0 + 1000 * i


def create(servers: str, topic: str, partitions: int) -> None:
    with Admin({"bootstrap.servers": servers}) as admin:
        admin.create_topic(topic, partitions, 1)


#: Every record ``produce`` wrote to the module's broker, per (topic, partition), in offset order.
LOG: dict[tuple[str, int], list[Row]] = {}


def produce(servers: str, topic: str, partition: int, count: int, first: int = 0,
            headers: bool = False) -> list[Row]:
    """``count`` records into one partition: key ``<topic>-<partition>-k<i % 3>`` (None
    for every 5th), value ``<topic>-<partition>-v<i>``, timestamp ``T0 + 1000 * i``; with
    ``headers``, two headers, the second one null. Returns them (and adds them to ``LOG``)
    as rows of the guide's ``selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")``."""
    rows = []
    with Producer({"bootstrap.servers": servers, "acks": "all"}) as producer:
        for i in range(first, first + count):
            key = None if i % 5 == 4 else f"{topic}-{partition}-k{i % 3}"
            value = f"{topic}-{partition}-v{i}"
            extra = [("trace", f"t{i}".encode()), ("empty", None)] if headers else None
            producer.send(topic, value.encode(), key.encode() if key else None, partition,
                          headers=extra, timestamp=T0 + 1000 * i)
            rows.append(Row(key=key, value=value))
        producer.flush()
    LOG.setdefault((topic, partition), []).extend(rows)
    return rows


@pytest.fixture(scope="module")
def servers(shared_broker) -> str:
    """A broker holding the guide's topics: topic1 (partitions 0 and 1, 100 records each)
    and topic2 (partition 0, 40 records), and a topic the pattern does not match."""
    bootstrap = shared_broker.bootstrap_servers
    LOG.clear()
    for topic, partitions in (("topic1", 2), ("topic2", 1), ("other", 1)):
        create(bootstrap, topic, partitions)
    produce(bootstrap, "topic1", 0, 100)
    produce(bootstrap, "topic1", 1, 100)
    produce(bootstrap, "topic2", 0, 40)
    produce(bootstrap, "other", 0, 10)
    return bootstrap


def log(topic: str, partition: int) -> list[Row]:
    """What the partition holds now (list index = offset)."""
    return list(LOG[(topic, partition)])


def check(spark, got: DataFrame, rows: list[Row]) -> None:
    assert got.columns == ["key", "value"]
    expected = spark.createDataFrame(rows, "key string, value string")
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def run_stream(spark, df: DataFrame, name: str, new_records) -> DataFrame:
    """Run the example's streaming DataFrame into a memory table: the guide's reads start at
    the latest offsets, so ``new_records()`` produces while the query runs."""
    query = df.writeStream.format("memory").queryName(name).start()
    try:
        query.processAllAvailable()  # the starting offsets are resolved: the latest ones
        new_records()
        query.processAllAvailable()
        assert query.exception() is None, query.exception()
    finally:
        query.stop()
    return spark.sql(f"select * from {name}")


# ---- Creating a Kafka source for streaming queries --------------------------------------------
def test_stream_subscribe_to_one_topic(spark, servers):
    # Subscribe to 1 topic
    df = spark \
        .readStream \
        .format("pyq") \
        .option("kafka.bootstrap.servers", servers) \
        .option("subscribe", "topic1") \
        .load()
    df = df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")

    new: list[Row] = []
    got = run_stream(spark, df, "port_one_topic", lambda: new.extend(
        produce(servers, "topic1", 0, 10, first=1000) + produce(servers, "topic2", 0, 5, first=1000)))
    check(spark, got, new[:10])  # what arrived after the start, on topic1 only


def test_stream_subscribe_with_headers(spark, servers):
    # Subscribe to 1 topic, with headers
    df = spark \
        .readStream \
        .format("pyq") \
        .option("kafka.bootstrap.servers", servers) \
        .option("subscribe", "topic1") \
        .option("includeHeaders", "true") \
        .load()
    df = df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)", "headers")

    new: list[Row] = []
    got = run_stream(spark, df, "port_headers", lambda: new.extend(
        produce(servers, "topic1", 1, 6, first=2000, headers=True)))
    expected = spark.createDataFrame(
        [Row(key=r.key, value=r.value,
             headers=[Row(key="trace", value=f"t{2000 + i}".encode()), Row(key="empty", value=None)])
         for i, r in enumerate(new)],
        "key string, value string, headers array<struct<key: string, value: binary>>")
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_stream_subscribe_to_multiple_topics(spark, servers):
    # Subscribe to multiple topics
    df = spark \
        .readStream \
        .format("pyq") \
        .option("kafka.bootstrap.servers", servers) \
        .option("subscribe", "topic1,topic2") \
        .load()
    df = df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")

    new: list[Row] = []
    got = run_stream(spark, df, "port_two_topics", lambda: new.extend(
        produce(servers, "topic1", 1, 4, first=3000) + produce(servers, "topic2", 0, 3, first=3000)
        + produce(servers, "other", 0, 2, first=3000)))
    check(spark, got, new[:7])


def test_stream_subscribe_to_a_pattern(spark, servers):
    # Subscribe to a pattern
    df = spark \
        .readStream \
        .format("pyq") \
        .option("kafka.bootstrap.servers", servers) \
        .option("subscribePattern", "topic.*") \
        .load()
    df = df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")

    new: list[Row] = []
    got = run_stream(spark, df, "port_pattern", lambda: new.extend(
        produce(servers, "topic2", 0, 3, first=4000) + produce(servers, "topic1", 0, 2, first=4000)
        + produce(servers, "other", 0, 2, first=4000)))
    check(spark, got, new[:5])


# ---- Creating a Kafka source for batch queries --------------------------------------------------
def test_batch_subscribe_to_one_topic_earliest_to_latest(spark, servers):
    # Subscribe to 1 topic defaults to the earliest and latest offsets
    df = spark \
        .read \
        .format("pyq") \
        .option("kafka.bootstrap.servers", servers) \
        .option("subscribe", "topic1") \
        .load()
    df = df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")

    check(spark, df, log("topic1", 0) + log("topic1", 1))


def test_batch_subscribe_to_multiple_topics_with_explicit_offsets(spark, servers):
    # Subscribe to multiple topics, specifying explicit Kafka offsets
    df = spark \
        .read \
        .format("pyq") \
        .option("kafka.bootstrap.servers", servers) \
        .option("subscribe", "topic1,topic2") \
        .option("startingOffsets", """{"topic1":{"0":23,"1":-2},"topic2":{"0":-2}}""") \
        .option("endingOffsets", """{"topic1":{"0":50,"1":-1},"topic2":{"0":-1}}""") \
        .load()
    df = df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")

    # topic1-0 from offset 23 up to 50; topic1-1 and topic2-0 from the earliest to the latest
    check(spark, df, log("topic1", 0)[23:50] + log("topic1", 1) + log("topic2", 0))


def test_batch_subscribe_to_a_pattern_earliest_to_latest(spark, servers):
    # Subscribe to a pattern, at the earliest and latest offsets
    df = spark \
        .read \
        .format("pyq") \
        .option("kafka.bootstrap.servers", servers) \
        .option("subscribePattern", "topic.*") \
        .option("startingOffsets", "earliest") \
        .option("endingOffsets", "latest") \
        .load()
    df = df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")

    check(spark, df, log("topic1", 0) + log("topic1", 1) + log("topic2", 0))


# ---- Reading with the options of the guide's table: assign and timestamps ---------------------
def test_batch_assign_specific_partitions(spark, servers):
    # Read only the listed TopicPartitions
    df = spark \
        .read \
        .format("pyq") \
        .option("kafka.bootstrap.servers", servers) \
        .option("assign", """{"topic1":[1],"topic2":[0]}""") \
        .load()
    df = df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")

    check(spark, df, log("topic1", 1) + log("topic2", 0))


def test_batch_between_two_timestamps(spark, servers):
    # Records from a point in time up to another one, in every subscribed partition
    df = spark \
        .read \
        .format("pyq") \
        .option("kafka.bootstrap.servers", servers) \
        .option("subscribe", "topic1,topic2") \
        .option("startingTimestamp", str(T0 + 30_000)) \
        .option("endingTimestamp", str(T0 + 35_000)) \
        .load()
    df = df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")

    # record i has timestamp T0 + 1000 i: offsets 30..34 of each partition
    check(spark, df, log("topic1", 0)[30:35] + log("topic1", 1)[30:35] + log("topic2", 0)[30:35])


def test_batch_by_timestamp_per_partition(spark, servers):
    # A starting and an ending timestamp per TopicPartition
    df = spark \
        .read \
        .format("pyq") \
        .option("kafka.bootstrap.servers", servers) \
        .option("subscribe", "topic1") \
        .option("startingOffsetsByTimestamp", f"""{{"topic1":{{"0":{T0 + 90_000},"1":{T0}}}}}""") \
        .option("endingOffsetsByTimestamp", f"""{{"topic1":{{"0":{T0 + 95_000},"1":{T0 + 3_000}}}}}""") \
        .load()
    df = df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")

    check(spark, df, log("topic1", 0)[90:95] + log("topic1", 1)[0:3])


# ---- Writing data to Kafka ------------------------------------------------------------------------
@pytest.fixture
def target(broker_factory) -> str:
    """A broker of its own with empty topic1 and topic2, for the writing examples."""
    broker = broker_factory(overrides={"auto.create.topics.enable": "false"})
    create(broker.bootstrap_servers, "topic1", 2)
    create(broker.bootstrap_servers, "topic2", 1)
    return broker.bootstrap_servers


@pytest.fixture
def checkpoints(spark, tmp_path) -> Iterator[None]:
    """``spark.sql.streaming.checkpointLocation`` for the guide's streaming writes (which
    name none); the session's setting is put back afterwards."""
    key = "spark.sql.streaming.checkpointLocation"
    before = spark.conf.get(key, None)
    spark.conf.set(key, str(tmp_path / "checkpoints"))
    yield
    if before is None:
        spark.conf.unset(key)
    else:
        spark.conf.set(key, before)


def written(spark, servers: str, topic: str) -> DataFrame:
    return spark.read.format("pyq").option("kafka.bootstrap.servers", servers) \
        .option("subscribe", topic).load() \
        .selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)")


def source(spark, servers: str, streaming: bool) -> DataFrame:
    """The ``df`` of the guide's writing examples: topic1 and topic2 of the module's broker,
    whose ``topic`` column says which of the two a row came from (a mirror to another cluster)."""
    reader = spark.readStream if streaming else spark.read
    return reader.format("pyq").option("kafka.bootstrap.servers", servers) \
        .option("subscribe", "topic1,topic2").option("startingOffsets", "earliest").load()


def from_topic(topic: str | None = None) -> list[Row]:
    topics = [topic] if topic else ["topic1", "topic2"]
    return [r for (t, _p), rows in LOG.items() if t in topics for r in rows]


def test_stream_write_to_the_topic_option(spark, servers, target, checkpoints):
    df = source(spark, servers, streaming=True)
    # Write key-value data from a DataFrame to a specific Kafka topic specified in an option
    ds = df \
        .selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)") \
        .writeStream \
        .format("pyq") \
        .option("kafka.bootstrap.servers", target) \
        .option("topic", "topic1") \
        .start()

    try:
        ds.processAllAvailable()
        assert ds.exception() is None
    finally:
        ds.stop()
    check(spark, written(spark, target, "topic1"), from_topic())
    assert written(spark, target, "topic2").count() == 0


def test_stream_write_to_the_topic_column(spark, servers, target, checkpoints):
    df = source(spark, servers, streaming=True)
    # Write key-value data from a DataFrame to Kafka using a topic specified in the data
    ds = df \
        .selectExpr("topic", "CAST(key AS STRING)", "CAST(value AS STRING)") \
        .writeStream \
        .format("pyq") \
        .option("kafka.bootstrap.servers", target) \
        .start()

    try:
        ds.processAllAvailable()
        assert ds.exception() is None
    finally:
        ds.stop()
    for topic in ("topic1", "topic2"):
        check(spark, written(spark, target, topic), from_topic(topic))


def test_batch_write_needs_append_spelled_out(spark, servers, target):
    df = source(spark, servers, streaming=False)
    # the guide's code as it is: PySpark refuses the default save mode for Python data sources
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)") \
            .write \
            .format("pyq") \
            .option("kafka.bootstrap.servers", target) \
            .option("topic", "topic1") \
            .save()
    assert written(spark, target, "topic1").count() == 0


def test_batch_write_to_the_topic_option(spark, servers, target):
    df = source(spark, servers, streaming=False)
    # Write key-value data from a DataFrame to a specific Kafka topic specified in an option
    df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)") \
        .write \
        .mode("append") \
        .format("pyq") \
        .option("kafka.bootstrap.servers", target) \
        .option("topic", "topic1") \
        .save()

    check(spark, written(spark, target, "topic1"), from_topic())
    assert written(spark, target, "topic2").count() == 0


def test_batch_write_to_the_topic_column(spark, servers, target):
    df = source(spark, servers, streaming=False)
    # Write key-value data from a DataFrame to Kafka using a topic specified in the data
    df.selectExpr("topic", "CAST(key AS STRING)", "CAST(value AS STRING)") \
        .write \
        .mode("append") \
        .format("pyq") \
        .option("kafka.bootstrap.servers", target) \
        .save()

    for topic in ("topic1", "topic2"):
        check(spark, written(spark, target, topic), from_topic(topic))


def test_headers_round_trip_through_the_sink(spark, servers, target):
    """The guide's sink takes an optional ``headers`` column (and lists ``includeHeaders``
    among the sink options); a topic's records copied with their headers read back equal."""
    produce(servers, "topic1", 0, 4, first=5000, headers=True)
    original = spark.read.format("pyq").option("kafka.bootstrap.servers", servers) \
        .option("subscribe", "topic1").option("includeHeaders", "true").load() \
        .selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)", "headers")
    assert original.where("size(headers) > 0").count() >= 4
    original.write.mode("append").format("pyq").option("kafka.bootstrap.servers", target) \
        .option("topic", "topic2").option("includeHeaders", "true").save()
    back = spark.read.format("pyq").option("kafka.bootstrap.servers", target) \
        .option("subscribe", "topic2").option("includeHeaders", "true").load() \
        .selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)", "headers")
    assert_df_equality(back, original, ignore_row_order=True, ignore_nullable=True)
