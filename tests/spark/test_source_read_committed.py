"""The source with ``kafka.isolation.level=read_committed`` over a topic written by
transactions: exactly the committed rows (and plain ones), in batch and streaming reads;
an open transaction holds planning back at the last stable offset. The transactions are
real ones (pyq's transactional producer, through the transaction coordinator), so the same
test runs on pyq's broker and on Apache Kafka."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.sql import Row

from connector.client import Admin, Producer
from tests.spark.test_source import run_available_now

pytestmark = pytest.mark.integration

TOPIC = "rc-txn"


@pytest.fixture(scope="module")
def bootstrap(broker_under_test):
    """pyq's broker, then Apache Kafka: every test here holds on both."""
    return broker_under_test.bootstrap_servers


def rows(spark, values: list[str]):
    return spark.createDataFrame([Row(value=v) for v in values], "value string")


def transactional(bootstrap: str, name: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"rc-{name}",
                         "transaction.timeout.ms": 300_000})
    producer.init_transactions(60)
    return producer


def send(producer: Producer, *values: str) -> None:
    """Write ``values`` to partition 0 and wait until the broker has them."""
    futures = [producer.send(TOPIC, v.encode(), partition=0) for v in values]
    producer.flush(60)
    for f in futures:
        f.result(0)


def test_read_committed_returns_exactly_the_committed_rows(spark, bootstrap, tmp_path):
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topic(TOPIC, 1, 1)
    plain = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    aborted, committed_, open_ = (transactional(bootstrap, n) for n in ("aborted", "committed", "open"))
    try:
        send(plain, "plain-0")
        aborted.begin_transaction()
        send(aborted, "aborted-0", "aborted-1")
        committed_.begin_transaction()  # open beside the first: their records interleave
        send(committed_, "committed-0", "committed-1")
        aborted.abort_transaction(60)
        committed_.commit_transaction(60)
        send(plain, "plain-1")
        open_.begin_transaction()
        send(open_, "open-0")
        send(plain, "plain-2")  # behind the open transaction

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

        open_.commit_transaction(60)
    finally:
        for producer in (plain, aborted, committed_, open_):
            producer.close(30)
    run_available_now(spark, bootstrap, TOPIC, tmp_path / "ck", "rc_stream",
                      **{"kafka.isolation.level": "read_committed"})
    streamed = spark.sql("select cast(value as string) as value from rc_stream")
    assert_df_equality(streamed,
                       rows(spark, [*committed, "open-0", "plain-2"]),
                       ignore_row_order=True, ignore_nullable=True)


def test_an_unknown_isolation_level_is_refused_at_load(spark, bootstrap):
    with pytest.raises(Exception, match="isolation.level.*read_committed"):
        (spark.read.format("pyq").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", TOPIC).option("kafka.isolation.level", "serializable").load()
         .collect())
