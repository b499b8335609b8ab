"""spark.read / readStream .format("pyq") against a real broker and a real SparkSession."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from chispa import assert_df_equality
from pyspark.sql import Row
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from connector.client import Admin, Producer
from tests.wire import wait_for

pytestmark = pytest.mark.integration

SCHEMA = StructType([StructField("key", BinaryType()), StructField("value", BinaryType()),
                     StructField("topic", StringType()), StructField("partition", IntegerType()),
                     StructField("offset", LongType()), StructField("timestamp", TimestampType())])


def produce(bootstrap: str, topic: str, n: int, partitions: int = 4, start: int = 0) -> list[tuple]:
    """Records with explicit partitions and timestamps; returns what the broker acknowledged."""
    out = []
    with Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5}) as producer:
        futures = [(i, producer.send(topic, b"value-%d" % i, key=b"key-%d" % (i % 17),
                                     partition=i % partitions, timestamp=1_700_000_000_000 + i))
                   for i in range(start, start + n)]
        producer.flush()
        for i, f in futures:
            md = f.result(30)
            out.append((b"key-%d" % (i % 17), b"value-%d" % i, topic, md.partition, md.offset,
                        1_700_000_000_000 + i))
    return out


@pytest.fixture(scope="module")
def bootstrap(broker_under_test):
    """pyq's broker, then Apache Kafka: every test here holds on both."""
    return broker_under_test.bootstrap_servers


def create(bootstrap: str, topic: str, partitions: int = 4, configs=None) -> None:
    """A topic kept forever: the records ``produce`` writes carry timestamps from 2023, and
    both brokers delete by record timestamp (``retention.ms``, 7 days) at their next
    retention check (every 5 minutes): on Kafka a check that fell inside a test emptied its
    topics (an AvailableNow query that read nothing, a restart that found its offsets gone)."""
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topic(topic, partitions, 1, {"retention.ms": "-1", **(configs or {})})


def test_batch_read_equals_what_was_produced(spark, bootstrap):
    create(bootstrap, "batch-src")
    records = produce(bootstrap, "batch-src", 2000)
    df = (spark.read.format("pyq").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", "batch-src").option("startingOffsets", "earliest")
          .option("endingOffsets", '{"batch-src": {"0": 400, "1": -1, "2": -1, "3": -1}}').load())
    got = df.select("key", "value", "topic", "partition", "offset", "timestamp")
    wanted = [r for r in records if not (r[3] == 0 and r[4] >= 400)]
    expected = spark.createDataFrame(
        [Row(key=k, value=v, topic=t, partition=p, offset=o,
             timestamp=dt.datetime.fromtimestamp(ts / 1000)) for k, v, t, p, o, ts in wanted], SCHEMA)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
    assert df.where("timestampType != 0").count() == 0


def run_available_now(spark, bootstrap, topic, checkpoint, table, path=None, **options):
    """Run to completion into the memory sink ``table`` (or into Parquet at ``path``, which,
    unlike the memory sink, can resume from its checkpoint)."""
    reader = (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    for k, v in options.items():
        reader = reader.option(k, v)
    writer = reader.load().writeStream.option("checkpointLocation", str(checkpoint))
    if path is None:
        writer = writer.format("memory").queryName(table)
    else:
        writer = writer.format("parquet").option("path", str(path))
    query = writer.trigger(availableNow=True).start()
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    return query


def test_available_now_reads_every_record_exactly_once(spark, bootstrap, tmp_path):
    create(bootstrap, "stream-src")
    records = produce(bootstrap, "stream-src", 5000)
    query = run_available_now(spark, bootstrap, "stream-src", tmp_path / "ck", "stream_all")
    assert not query.isActive
    got = spark.sql("select topic, partition, offset, value from stream_all")
    expected = spark.createDataFrame([Row(topic=t, partition=p, offset=o, value=v)
                                      for _k, v, t, p, o, _ts in records], got.schema)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_restart_from_checkpoint_neither_loses_nor_duplicates(spark, bootstrap, tmp_path):
    create(bootstrap, "restart-src")
    first = produce(bootstrap, "restart-src", 3000)
    out = tmp_path / "out"
    run_available_now(spark, bootstrap, "restart-src", tmp_path / "ck", None, path=out,
                      maxOffsetsPerTrigger="700")
    second = produce(bootstrap, "restart-src", 2000, start=3000)  # arrives while the query is down
    run_available_now(spark, bootstrap, "restart-src", tmp_path / "ck", None, path=out,
                      maxOffsetsPerTrigger="700")
    union = spark.read.parquet(str(out)).select("partition", "offset", "value")
    expected = spark.createDataFrame([Row(partition=p, offset=o, value=v)
                                      for _k, v, _t, p, o, _ts in first + second], union.schema)
    assert_df_equality(union, expected, ignore_row_order=True, ignore_nullable=True)


def test_max_offsets_per_trigger_bounds_batches_in_proportion_to_lag(spark, bootstrap, tmp_path):
    create(bootstrap, "limited-src")
    with Producer({"bootstrap.servers": bootstrap, "acks": "all"}) as producer:
        for i in range(10_000):  # lag 4:3:2:1 across the partitions
            producer.send("limited-src", b"x", partition=[0, 0, 0, 0, 1, 1, 1, 2, 2, 3][i % 10])
        producer.flush()
    query = run_available_now(spark, bootstrap, "limited-src", tmp_path / "ck", "limited",
                              maxOffsetsPerTrigger="1000")
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 10_000
    assert max(sizes) <= 1000
    assert len(sizes) == 10
    assert spark.sql("select count(distinct partition, offset) from limited").first()[0] == 10_000
    # the first batch split its 1,000 records 4:3:2:1, like the partitions' lag
    end = json.loads(query.recentProgress[0]["sources"][0]["endOffset"])["offsets"]["limited-src"]
    for partition, share in {"0": 400, "1": 300, "2": 200, "3": 100}.items():
        assert abs(end[partition] - share) <= 2, end
    # reportLatestOffset: the progress shows how far the log goes next to how far it read
    latest = json.loads(query.recentProgress[0]["sources"][0]["latestOffset"])["offsets"]["limited-src"]
    assert latest == {"0": 4000, "1": 3000, "2": 2000, "3": 1000}


def test_partitions_added_mid_query_are_read_from_their_start(spark, bootstrap, tmp_path):
    create(bootstrap, "growing-src", 2)
    before = produce(bootstrap, "growing-src", 400, partitions=2)
    query = (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", "growing-src").option("startingOffsets", "earliest").load()
             .writeStream.format("memory").queryName("growing")
             .option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        rows = lambda: spark.sql("select count(*) from growing").first()[0]  # noqa: E731
        wait_for(lambda: rows() == 400, timeout=120, what="the first 400 records")
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.create_partitions({"growing-src": 4})
        after = produce(bootstrap, "growing-src", 400, partitions=4, start=400)
        wait_for(lambda: rows() >= 800, timeout=120, what="the records of the new partitions")
        assert query.exception() is None
    finally:
        query.stop()
    got = spark.sql("select partition, offset, value from growing")
    expected = spark.createDataFrame([Row(partition=p, offset=o, value=v) for _k, v, _t, p, o, _ts
                                      in before + after], got.schema)
    assert {p for _k, _v, _t, p, _o, _ts in after} == {0, 1, 2, 3}
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_max_offset_behind_skips_ahead_counts_and_commits(spark, bootstrap, tmp_path):
    create(bootstrap, "behind-src", 2)
    records = produce(bootstrap, "behind-src", 2000, partitions=2)
    run_available_now(spark, bootstrap, "behind-src", tmp_path / "ck", "behind",
                      maxOffsetBehind="300", groupId="behind-job")
    got = spark.sql("select partition, offset, value from behind")
    expected = spark.createDataFrame([Row(partition=p, offset=o, value=v) for _k, v, _t, p, o, _ts
                                      in records if o >= 700], got.schema)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        committed = admin.fetch_offsets("behind-job", [("behind-src", 0), ("behind-src", 1)])
    assert [om.offset for om in committed.values()] == [1000, 1000]
    assert [json.loads(om.metadata)["skipped"] for om in committed.values()] == [700, 700]


def test_kafka_client_options_reach_the_driver_and_every_executor_read(spark, bootstrap):
    from connector.source.driver import SourceDriver
    from connector.source.options import parse_source_options

    create(bootstrap, "client-opts-src", 2)
    records = produce(bootstrap, "client-opts-src", 300, partitions=2)
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": "client-opts-src",
               "kafka.client.id": "nightly-report", "kafka.max.partition.fetch.bytes": "2048"}
    driver = SourceDriver(parse_source_options(options, streaming=True))
    try:
        assert driver.admin.config.client_id == "nightly-report"
        ranges = driver.input_ranges({"offsets": {"client-opts-src": {"0": 0, "1": 0}}},
                                     {"offsets": {"client-opts-src": {"0": 150, "1": 150}}})
    finally:
        driver.close()
    assert {r.client_options["kafka.client.id"] for r in ranges} == {"nightly-report"}
    # with 2 KiB fetches every record still arrives, once
    df = spark.read.format("pyq").options(**options).load()
    assert sorted(r.offset for r in df.collect()) == sorted(o for *_x, o, _ts in records)


def test_reads_a_topic_written_by_kafka_python(spark, bootstrap):
    from kafka import KafkaProducer

    create(bootstrap, "kp-src", 2)
    producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False, compression_type="gzip")
    for i in range(500):
        producer.send("kp-src", value=b"kp-%d" % i, key=b"k", partition=i % 2,
                      headers=[("h", b"%d" % i)])
    producer.flush()
    producer.close()
    df = (spark.read.format("pyq").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", "kp-src").option("includeHeaders", "true").load())
    rows = df.collect()
    assert sorted(r.value for r in rows) == sorted(b"kp-%d" % i for i in range(500))
    assert all(r.headers[0].key == "h" and r.headers[0].value == r.value[3:] for r in rows)


@pytest.mark.parametrize("option,value,message", [
    ("maxOffsetsPerTrigger", "-5", "maxOffsetsPerTrigger='-5' is not allowed"),
    ("failOnDataLoss", "maybe", "failOnDataLoss='maybe' is not allowed: true or false"),
    ("startingOffsets", "{nope", "startingOffsets='{nope' is not allowed"),
    ("kafka.security.protocol", "SASL_SSL",
     "kafka.security.protocol='SASL_SSL' is not allowed: .*needs one of PLAIN"),
    ("kafka.sasl.kerberos.service.name", "kafka",
     "kafka.sasl.kerberos.service.name='kafka' is not allowed"),
    ("kafka.fetch.max.wait.ms", "soon", "kafka.fetch.max.wait.ms='soon' is not allowed"),
])
def test_invalid_option_fails_at_start_naming_it(spark, bootstrap, option, value, message):
    reader = (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", "stream-src").option(option, value))
    with pytest.raises(Exception, match=message.replace("{", r"\{")):
        reader.load().writeStream.format("memory").queryName("never").start().awaitTermination(30)
