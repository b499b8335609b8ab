"""LagListener over a running query: offsets behind latest per partition while a
maxOffsetsPerTrigger query catches up, in the listener and on its Prometheus endpoint."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from chispa import assert_df_equality
from pyspark.sql import Row

from broker_sim.common import TopicPartition
from connector.progress import LagListener
from tests.metrics import scrape, value
from tests.spark.test_source import create, produce
from tests.wire import wait_for

pytestmark = pytest.mark.integration

TOPIC, QUERY = "lag-src", "lagging"


@pytest.fixture
def listener(spark) -> Iterator[LagListener]:
    lag = LagListener(port=0)
    spark.streams.addListener(lag)
    yield lag
    spark.streams.removeListener(lag)
    lag.stop()


def _start(spark, bootstrap, tmp_path, trigger):
    return (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", TOPIC).option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "100").load()
            .select("partition", "offset", "value")
            .writeStream.format("parquet").queryName(QUERY)
            .option("path", str(tmp_path / "out")).option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(processingTime=trigger).start())


def _behind(port: int, partition: int) -> float:
    return value(scrape(port), "pyq_source_offsets_behind_latest", query=QUERY, topic=TOPIC,
                 partition=str(partition))


def test_lag_shows_then_drops_to_zero_as_the_query_catches_up(spark, shared_broker, listener,
                                                             tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="connector.progress")
    bootstrap = shared_broker.bootstrap_servers
    create(bootstrap, TOPIC, 2)
    records = produce(bootstrap, TOPIC, 400, partitions=2)
    tp0, tp1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)

    # one batch of 100 (50 a partition), then an hour's wait: the lag holds still
    query = _start(spark, bootstrap, tmp_path, "1 hour")
    try:
        first = wait_for(lambda: listener.report(QUERY), timeout=120, what="a first report")
        assert first.behind == {tp0: 150, tp1: 150}
        assert (first.avg, first.max, first.min) == (150, 150, 150)
        assert (f"query {QUERY} batch 0: offsets behind latest avg 150.0, max 150, min 150 "
                "over 2 partitions") in caplog.messages
        samples = scrape(listener.port)
        assert value(samples, "pyq_source_offsets_behind_latest", query=QUERY, topic=TOPIC,
                     partition="0") == 150
        for stat in ("avg", "max", "min"):
            assert value(samples, f"pyq_source_offsets_behind_latest_{stat}", query=QUERY) == 150
    finally:
        query.stop()
    # a stopped query's series leave the endpoint
    wait_for(lambda: ("pyq_source_offsets_behind_latest_max", (("query", QUERY),))
             not in scrape(listener.port) or None, what="the stopped query's series gone")

    # resumed with a fast trigger: 100 a batch until nothing is behind
    query = _start(spark, bootstrap, tmp_path, "100 milliseconds")
    try:
        wait_for(lambda: (r := listener.report(QUERY)) and r.max == 0 and r.batch_id >= 3 or None,
                 timeout=180, what="the query caught up")
        assert _behind(listener.port, 0) == 0 and _behind(listener.port, 1) == 0
        maxima = [r.max for r in listener.history(QUERY)]
        assert maxima[0] == 150 and maxima[-1] == 0
        assert maxima == sorted(maxima, reverse=True), maxima  # never further behind
        assert 100 in maxima and 50 in maxima  # each batch took 50 a partition
    finally:
        query.stop()
    got = spark.read.parquet(str(tmp_path / "out"))
    expected = spark.createDataFrame([Row(partition=p, offset=o, value=v)
                                      for _k, v, _t, p, o, _ts in records], got.schema)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_an_invalid_port_is_refused_naming_it():
    for port in (-1, 70000, "9108", True):
        with pytest.raises(ValueError, match=r"LagListener port=.* is not allowed: None .* 0\.\.65535"):
            LagListener(port=port)
