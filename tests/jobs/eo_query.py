"""A broker -> transform -> broker streaming query with the exactly-once sink, for spark-submit.

Used by ``test_exactly_once_kill.py``: ``spark-submit tests/jobs/eo_query.py BOOTSTRAP
INPUT OUTPUT CHECKPOINT``, BOOTSTRAP being pyq's broker or Apache Kafka. Reads INPUT in micro-batches of at most 100 records, turns each
value ``v`` into ``v!`` (keys kept), writes OUTPUT with ``exactlyOnce`` and runs until
everything available at the start is written (``availableNow``).
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession


def main(bootstrap: str, source: str, sink: str, checkpoint: str) -> None:
    spark = SparkSession.builder.appName("eo-query").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    query = (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", source).option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", "100").load()
             .selectExpr("key", "concat(cast(value as string), '!') as value")
             .writeStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
             .option("topic", sink).option("exactlyOnce", "true").option("queryName", "eo-kill")
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()
    if query.exception() is not None:
        raise SystemExit(f"query failed: {query.exception()}")
    print("DONE")


if __name__ == "__main__":
    main(*sys.argv[1:5])
