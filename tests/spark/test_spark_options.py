"""Spark's Kafka options whose behaviour jobs rely on, run through ``format("pyq")`` against a
real broker: where a read ends by time, what happens when no record reaches a starting
timestamp, ``assign`` in a stream, the executors' poll timeout, the group options that commit
nothing, and where an out-of-range partition resumes (pyq's ``outOfRangeReset``)."""

from __future__ import annotations

import time

import pytest
from chispa import assert_df_equality
from pyspark.sql import Row

from broker_sim.common import TopicPartition
from connector.client import Admin, Producer
from connector.source.driver import SourceDriver
from connector.source.options import parse_source_options
from connector.source.source_offsets import SourceOffsets

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000


@pytest.fixture(scope="module")
def bootstrap(shared_broker) -> str:
    return shared_broker.bootstrap_servers


def create(bootstrap: str, topic: str, partitions: int) -> None:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topic(topic, partitions, 1)


def produce(bootstrap: str, topic: str, per_partition: int, partitions: int, first: int = 0) -> list[Row]:
    """Record i of each partition: value ``p<partition>-<i>``, timestamp ``T0 + 1000 * i``."""
    rows = []
    with Producer({"bootstrap.servers": bootstrap, "acks": "all"}) as producer:
        for p in range(partitions):
            for i in range(first, first + per_partition):
                producer.send(topic, f"p{p}-{i}".encode(), partition=p, timestamp=T0 + 1000 * i)
                rows.append(Row(partition=p, value=f"p{p}-{i}"))
        producer.flush()
    return rows


def read(spark, bootstrap: str, topic: str, **options: str):
    reader = spark.read.format("pyq").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load().selectExpr("partition", "CAST(value AS STRING) AS value")


def expect(spark, got, rows: list[Row]) -> None:
    assert_df_equality(got, spark.createDataFrame(rows, "partition int, value string"),
                       ignore_row_order=True, ignore_nullable=True)


def test_ending_timestamp_and_ending_offsets_by_timestamp(spark, bootstrap):
    create(bootstrap, "ending-ts", 2)
    rows = produce(bootstrap, "ending-ts", 20, 2)
    # the end is the first offset at or after the timestamp (exclusive): records 0..11
    expect(spark, read(spark, bootstrap, "ending-ts", endingTimestamp=str(T0 + 12_000)),
           [r for r in rows if int(r.value.split("-")[1]) < 12])
    # endingTimestamp wins over endingOffsetsByTimestamp, which wins over endingOffsets
    expect(spark, read(spark, bootstrap, "ending-ts", endingTimestamp=str(T0 + 2_000),
                       endingOffsetsByTimestamp=f'{{"ending-ts": {{"0": {T0 + 5_000}}}}}',
                       endingOffsets='{"ending-ts": {"0": 9, "1": 9}}'),
           [r for r in rows if int(r.value.split("-")[1]) < 2])
    # per partition; a partition not named ends at endingOffsets (here the latest)
    expect(spark, read(spark, bootstrap, "ending-ts",
                       endingOffsetsByTimestamp=f'{{"ending-ts": {{"0": {T0 + 5_000}}}}}'),
           [r for r in rows if r.partition == 1 or int(r.value.split("-")[1]) < 5])
    # no record at or after the timestamp: the latest offset, as in Spark
    expect(spark, read(spark, bootstrap, "ending-ts", endingTimestamp=str(T0 + 10**9)), rows)
    # an end before the start is refused, naming where it came from
    with pytest.raises(Exception, match=r"the end of ending-ts-0 \(3, from endingTimestamp"):
        read(spark, bootstrap, "ending-ts", startingOffsets='{"ending-ts": {"0": 10, "1": 0}}',
             endingTimestamp=str(T0 + 3_000)).collect()


def test_starting_timestamp_with_no_match_fails_by_default_or_starts_at_latest(spark, bootstrap, tmp_path):
    create(bootstrap, "start-ts", 2)
    produce(bootstrap, "start-ts", 10, 1)  # partition 0 only: records up to T0 + 9000
    late = T0 + 5_000
    # Spark's default strategy, error: partition 1 has no record at or after the timestamp
    with pytest.raises(Exception, match=r"No offset matched from request of topic-partition "
                                        rf"start-ts-1 and timestamp {late}.*startingOffsetsByTimestampStrategy"):
        read(spark, bootstrap, "start-ts", startingTimestamp=str(late)).collect()
    # ... also for a stream, which fails when it starts
    stream = (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", "start-ts").option("startingTimestamp", str(late)).load()
              .writeStream.format("memory").queryName("start_ts_error")
              .option("checkpointLocation", str(tmp_path / "ck-error")).start())
    with pytest.raises(Exception, match="No offset matched"):
        stream.awaitTermination(120)
    # latest: partition 1 starts at its end, so a stream reads what arrives there later
    query = (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", "start-ts").option("startingTimestamp", str(late))
             .option("startingOffsetsByTimestampStrategy", "latest").load()
             .selectExpr("partition", "CAST(value AS STRING) AS value")
             .writeStream.format("memory").queryName("start_ts_latest")
             .option("checkpointLocation", str(tmp_path / "ck-latest")).start())
    try:
        query.processAllAvailable()
        with Producer({"bootstrap.servers": bootstrap, "acks": "all"}) as producer:
            producer.send("start-ts", b"p1-new", partition=1, timestamp=T0)  # old timestamp, new offset
            producer.flush()
        query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()
    expect(spark, spark.sql("select * from start_ts_latest"),
           [Row(partition=0, value=f"p0-{i}") for i in range(5, 10)] + [Row(partition=1, value="p1-new")])


def test_assign_in_a_stream_reads_only_the_listed_partitions(spark, bootstrap, tmp_path):
    create(bootstrap, "assigned", 3)
    rows = produce(bootstrap, "assigned", 15, 3)
    query = (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
             .option("assign", '{"assigned": [0, 2]}').option("startingOffsets", "earliest").load()
             .selectExpr("partition", "CAST(value AS STRING) AS value")
             .writeStream.format("memory").queryName("assigned_stream")
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    expect(spark, spark.sql("select * from assigned_stream"), [r for r in rows if r.partition != 1])


def test_poll_timeout_bounds_how_long_an_executor_waits_for_records(spark, bootstrap):
    create(bootstrap, "poll-timeout", 1)
    produce(bootstrap, "poll-timeout", 5, 1)
    # an end beyond the log: the read waits for records that never come, for pollTimeoutMs
    began = time.monotonic()
    with pytest.raises(Exception, match=r"records of poll-timeout-0 from offset 5"):
        read(spark, bootstrap, "poll-timeout", endingOffsets='{"poll-timeout": {"0": 10}}',
             **{"kafkaConsumer.pollTimeoutMs": "1500"}).collect()
    assert time.monotonic() - began < 30  # not the client's default (60 s)


def test_group_id_prefix_and_kafka_group_id_commit_nothing(spark, bootstrap, tmp_path):
    """Spark names its consumers' group with these; those consumers read assigned partitions
    and never commit, and pyq's readers join no group either: nothing appears on the broker."""
    create(bootstrap, "grouped", 2)
    rows = produce(bootstrap, "grouped", 10, 2)
    expect(spark, read(spark, bootstrap, "grouped", groupIdPrefix="etl",
                       **{"kafka.group.id": "authorized-group"}), rows)
    query = (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", "grouped").option("startingOffsets", "earliest")
             .option("kafka.group.id", "authorized-group").option("groupIdPrefix", "etl").load()
             .writeStream.format("memory").queryName("grouped_stream")
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    assert spark.sql("select count(*) from grouped_stream").first()[0] == len(rows)
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        groups = [g.group_id for g in admin.list_groups()]
        committed = admin.fetch_offsets("authorized-group", [("grouped", 0), ("grouped", 1)])
    assert "authorized-group" not in groups and not any(g.startswith("etl") for g in groups)
    assert all(om.offset < 0 for om in committed.values())


@pytest.mark.parametrize(("reset", "resumes_at"), [("earliest", 50), ("latest", 120)])
def test_out_of_range_reset_resumes_where_configured(bootstrap, reset, resumes_at):
    """failOnDataLoss=false: a partition whose next offset was deleted resumes at the log
    start (Spark's behaviour, ``outOfRangeReset=earliest``) or at its end (``latest``)."""
    topic = f"reset-{reset}"
    create(bootstrap, topic, 1)
    produce(bootstrap, topic, 100, 1)
    options = parse_source_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
                                    "startingOffsets": "earliest", "failOnDataLoss": "false",
                                    "outOfRangeReset": reset, "maxRetryBackoffMs": "2000"},
                                   streaming=True)
    driver = SourceDriver(options)
    try:
        assert driver.retry_policy.max_retry_backoff_ms == 2000
        start = SourceOffsets(driver.initial_offsets()).to_json()
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.delete_records({(topic, 0): 50})  # offsets [0, 50) are gone before they are read
        produce(bootstrap, topic, 20, 1, first=100)  # the log now holds [50, 120)
        end = driver.plan(start, None, None)
        ranges = driver.input_ranges(start, end)
        tp = TopicPartition(topic, 0)
        assert SourceOffsets.from_json(end).offsets[tp] == 120
        assert [(r.start, r.end) for r in ranges] == ([(resumes_at, 120)] if resumes_at < 120 else [])
        assert driver.managers[tp].counters.lost == resumes_at
    finally:
        driver.close()
