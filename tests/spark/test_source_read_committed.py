"""The source with ``kafka.isolation.level=read_committed`` over a topic written by
transactions: exactly the committed rows (and plain ones), in batch and streaming reads;
an open transaction holds planning back at the last stable offset."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.sql import Row

from tests.spark.test_source import run_available_now
from tests.transactions.test_log_side import TOPIC, batch, end, produce, producer_id
from tests.wire import WireClient, create_topic

pytestmark = pytest.mark.integration


@pytest.fixture
def broker(broker_factory):
    b = broker_factory()
    create_topic(b.port, TOPIC, partitions=1)
    return b


def rows(spark, values: list[str]):  # type: ignore[no-untyped-def]
    return spark.createDataFrame([Row(value=v) for v in values], "value string")


def test_read_committed_returns_exactly_the_committed_rows(spark, broker, tmp_path):
    bootstrap = broker.bootstrap_servers
    with WireClient(broker.port) as c:
        (a, ea), (b, eb), (o, eo) = producer_id(c), producer_id(c), producer_id(c)
        assert produce(c, batch(["plain-0"])) == 0
        assert produce(c, batch(["aborted-0", "aborted-1"], a, ea, 0, transactional=True)) == 0
        assert produce(c, batch(["committed-0", "committed-1"], b, eb, 0, transactional=True)) == 0
        assert end(c, a, ea, commit=False) == 0
        assert end(c, b, eb, commit=True) == 0
        assert produce(c, batch(["plain-1"])) == 0
        assert produce(c, batch(["open-0"], o, eo, 0, transactional=True)) == 0
        assert produce(c, batch(["plain-2"])) == 0  # behind the open transaction

        committed = ["plain-0", "committed-0", "committed-1", "plain-1"]
        df = (spark.read.format("pyq").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", TOPIC).option("kafka.isolation.level", "read_committed")
              .load().selectExpr("cast(value as string) as value"))
        assert_df_equality(df, rows(spark, committed), ignore_row_order=True, ignore_nullable=True)

        uncommitted = (spark.read.format("pyq").option("kafka.bootstrap.servers", bootstrap)
                       .option("subscribe", TOPIC).load()
                       .selectExpr("cast(value as string) as value"))
        assert sorted(r.value for r in uncommitted.collect()) == sorted(
            [*committed, "aborted-0", "aborted-1", "open-0", "plain-2"])

        assert end(c, o, eo, commit=True) == 0
    run_available_now(spark, bootstrap, TOPIC, tmp_path / "ck", "rc_stream",
                      **{"kafka.isolation.level": "read_committed"})
    streamed = spark.sql("select cast(value as string) as value from rc_stream")
    assert_df_equality(streamed,
                       rows(spark, [*committed, "open-0", "plain-2"]),
                       ignore_row_order=True, ignore_nullable=True)


def test_an_unknown_isolation_level_is_refused_at_load(spark, broker):
    with pytest.raises(Exception, match="isolation.level.*read_committed"):
        (spark.read.format("pyq").option("kafka.bootstrap.servers", broker.bootstrap_servers)
         .option("subscribe", TOPIC).option("kafka.isolation.level", "serializable").load()
         .collect())
