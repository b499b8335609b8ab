"""DeleteRecords (``pyq topics truncate``) past what a streaming query has read: with
``failOnDataLoss=false`` the query goes on from the new log start and counts the skipped
range as lost; with ``failOnDataLoss=true`` it stops, naming the partition and the range."""

from __future__ import annotations

import json

import pytest
from chispa import assert_df_equality

from connector.client import Admin, Producer

pytestmark = pytest.mark.integration


def produce(bootstrap: str, topic: str, start: int, end: int) -> None:
    with Producer({"bootstrap.servers": bootstrap, "acks": "all"}) as producer:
        for i in range(start, end):
            producer.send(topic, b"record-%03d" % i, partition=0)
        producer.flush()


@pytest.fixture(scope="module")
def bootstrap(broker_under_test):
    """pyq's broker, then Apache Kafka: every test here holds on both."""
    return broker_under_test.bootstrap_servers


def run(spark, bootstrap: str, topic: str, tmp_path, fail_on_data_loss: str):
    """One availableNow run into Parquet (which resumes from its checkpoint)."""
    query = (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", "60").option("groupId", f"g-{topic}")
             .option("failOnDataLoss", fail_on_data_loss).load()
             .select("offset", "value")
             .writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination(300)
    except Exception:  # the query failed: query.exception() says why
        pass
    return query


@pytest.mark.parametrize("fail_on_data_loss", ["false", "true"])
def test_truncation_past_the_query(spark, bootstrap, tmp_path, fail_on_data_loss):
    topic = f"truncated-under-query-{fail_on_data_loss}"
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topic(topic, 1, 1)
    produce(bootstrap, topic, 0, 100)
    first = run(spark, bootstrap, topic, tmp_path, fail_on_data_loss)
    assert first.exception() is None, first.exception()  # read [0, 100)

    produce(bootstrap, topic, 100, 300)
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        assert list(admin.delete_records({(topic, 0): 250}).values()) == [250]

    second = run(spark, bootstrap, topic, tmp_path, fail_on_data_loss)
    if fail_on_data_loss == "true":
        error = second.exception()
        assert error is not None
        assert (f"Data loss on {topic}-0: offsets [100, 250) are no longer available: the log "
                "now holds [250, 300) (deleted (retention, DeleteRecords) before they were "
                "read)") in str(error)
        return
    assert second.exception() is None, second.exception()
    got = spark.read.parquet(str(tmp_path / "out"))
    want = spark.createDataFrame(
        [(i, b"record-%03d" % i) for i in [*range(100), *range(250, 300)]],
        "offset long, value binary")
    assert_df_equality(got, want, ignore_row_order=True, ignore_nullable=True)
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        committed = list(admin.fetch_offsets(f"g-{topic}").values())[0]
    assert committed.offset == 300
    assert json.loads(committed.metadata)["lost"] == 150  # [100, 250)
