"""The source over a compacted topic: the gaps the cleaner leaves are read across, in batch
and streaming reads, and count as neither rows nor data loss."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from tests.integration.test_compaction import COMPACTED, _compacted, _produce, _read_pyq, _seal
from tests.spark.test_source import run_available_now
from tests.wire import wait_for

pytestmark = pytest.mark.integration


def test_a_compacted_topic_reads_as_its_latest_value_per_key(spark, broker_factory, tmp_path):
    from connector.client import Admin, NewTopic

    broker = broker_factory(overrides={"log.cleaner.backoff.ms": "100"})
    bootstrap = broker.bootstrap_servers
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic("compacted", 1, 1, COMPACTED)])
    latest = _produce(bootstrap, "compacted", 20_000, seed=5)
    sentinel = _seal(bootstrap, "compacted")
    expected = _compacted(latest, sentinel)
    wait_for(lambda: _read_pyq(bootstrap, "compacted") == expected, timeout=60, interval=0.5,
             what="the cleaner")
    want = spark.createDataFrame([(o, k, v) for o, k, v in expected],
                                 "offset long, key binary, value binary")
    batch = (spark.read.format("pyq").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", "compacted").option("failOnDataLoss", "true").load()
             .select("offset", "key", "value"))
    assert_df_equality(batch, want, ignore_row_order=True, ignore_nullable=True)
    run_available_now(spark, bootstrap, "compacted", tmp_path / "ck", "compacted_stream",
                      maxOffsetsPerTrigger="5000", failOnDataLoss="true")
    streamed = spark.table("compacted_stream").select("offset", "key", "value")
    assert_df_equality(streamed, want, ignore_row_order=True, ignore_nullable=True)
