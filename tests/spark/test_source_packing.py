"""Small offset ranges of many partitions are packed into few Spark tasks
(``minRecordsPerPartition``), and every packing reads exactly the same rows."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from tests.spark.test_source import create, produce, run_available_now

pytestmark = pytest.mark.integration

PARTITIONS, ROWS = 32, 320


@pytest.fixture(scope="module")
def topic(shared_broker):
    create(shared_broker.bootstrap_servers, "packed", PARTITIONS)
    produce(shared_broker.bootstrap_servers, "packed", ROWS, partitions=PARTITIONS)
    return "packed"


def _read(spark, bootstrap, **options):
    reader = (spark.read.format("pyq").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", "packed"))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load().select("partition", "offset", "key", "value")


@pytest.mark.parametrize("options,tasks", [
    ({}, 1),  # the default packs every small range of the one broker into one task
    ({"minRecordsPerPartition": "100"}, 4),  # 10 ranges of 10 records per task (and 2 left)
    ({"minRecordsPerPartition": "0"}, PARTITIONS),  # one task per topic-partition
    ({"minPartitions": "40"}, 64),  # Spark's minPartitions: each range split in 2, never packed
], ids=["default", "100-per-task", "off", "minPartitions"])
def test_packing_changes_the_tasks_not_the_rows(spark, shared_broker, topic, options, tasks):
    bootstrap = shared_broker.bootstrap_servers
    df = _read(spark, bootstrap, **options)
    assert df.rdd.getNumPartitions() == tasks
    unpacked = _read(spark, bootstrap, minRecordsPerPartition="0")
    assert df.count() == ROWS
    assert_df_equality(df, unpacked, ignore_row_order=True)


def test_a_stream_over_many_small_partitions_reads_each_record_once(spark, shared_broker, topic,
                                                                     tmp_path):
    run_available_now(spark, shared_broker.bootstrap_servers, topic, tmp_path / "ck", "packed_stream",
                      maxOffsetsPerTrigger="100")
    streamed = spark.table("packed_stream").select("partition", "offset", "key", "value")
    assert_df_equality(streamed, _read(spark, shared_broker.bootstrap_servers),
                       ignore_row_order=True)
