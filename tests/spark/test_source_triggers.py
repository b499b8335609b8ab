"""minOffsetsPerTrigger and maxTriggerDelay in a running query: a trigger waits for enough
new records, unless the last batch is older than the delay."""

from __future__ import annotations

import pytest

from tests.spark.test_source import create, produce
from tests.wire import wait_for

pytestmark = pytest.mark.integration


def _start(spark, bootstrap, topic, table, checkpoint, delay):
    return (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest")
            .option("minOffsetsPerTrigger", "500").option("maxTriggerDelay", delay).load()
            .writeStream.format("memory").queryName(table)
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="100 milliseconds").start())


def _batches(query) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


@pytest.fixture(scope="module")
def bootstrap(broker_under_test):
    """pyq's broker, then Apache Kafka: every test here holds on both."""
    return broker_under_test.bootstrap_servers


@pytest.fixture(autouse=True)
def progress_of_empty_triggers(spark):
    """Spark reports a trigger that ran no batch only every 10 s by default: every 100 ms here."""
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "100ms")
    yield
    spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")


def test_a_trigger_waits_for_min_offsets(spark, bootstrap, tmp_path):
    create(bootstrap, "min-src", 2)
    produce(bootstrap, "min-src", 100, partitions=2)
    query = _start(spark, bootstrap, "min-src", "min_rows", tmp_path / "ck", "1h")
    try:
        # triggers keep firing, but 100 < 500 new records: no batch reads anything
        wait_for(lambda: len(query.recentProgress) >= 10, timeout=120, what="10 triggers")
        assert _batches(query) == []
        produce(bootstrap, "min-src", 450, partitions=2, start=100)
        wait_for(lambda: _batches(query), timeout=120, what="a batch")
        # a trigger may land while the 450 are still arriving, but never before 500 are there
        # (what arrives after that waits for the next 500, or the hour)
        assert 500 <= _batches(query)[0] <= 550 and len(_batches(query)) == 1
    finally:
        query.stop()


def test_max_trigger_delay_runs_a_smaller_batch_once_it_passed(spark, bootstrap, tmp_path):
    create(bootstrap, "delay-src", 2)
    produce(bootstrap, "delay-src", 100, partitions=2)
    query = _start(spark, bootstrap, "delay-src", "delay_rows", tmp_path / "ck", "2s")
    try:
        wait_for(lambda: _batches(query), timeout=120, what="a batch after the delay")
        assert _batches(query) == [100]
        produce(bootstrap, "delay-src", 100, partitions=2, start=100)  # fewer than 500 again
        wait_for(lambda: sum(_batches(query)) == 200, timeout=120, what="the next small batch")
        assert all(rows < 500 for rows in _batches(query))
    finally:
        query.stop()
