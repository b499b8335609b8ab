"""Sessionize a clickstream: pyq topic -> (per-user window counts -> pyq topic) + Parquet.

Run with spark-submit (``--help`` lists every option)::

    spark-submit jobs/sessionize.py --bootstrap-servers 127.0.0.1:9092 --input-topic clicks \\
        --output-topic user-counts --parquet-dir /tmp/events --checkpoint-dir /tmp/ck

Design: **one** streaming query, ``readStream.format("pyq")`` with ``groupId``,
``maxRetries`` and ``deadLetterTopic``, into ``foreachBatch``. For each micro-batch (a
static DataFrame) the function

a. parses ``value`` with ``from_json``; a row whose parse fails (not JSON, or no
   ``user_id``/``event_time``) is reported with
   :func:`connector.source.failures.report_failed`. The source redelivers it (column
   ``attempt`` > 0) up to ``maxRetries`` times and then copies it to the dead-letter topic
   with a ``pyq.reason`` header; every redelivery is reported again, so a malformed record
   always ends up there;
b. writes the parsed events (first deliveries only) to ``<parquet-dir>/batch_id=N`` with
   mode overwrite, so a replayed batch replaces its own files instead of duplicating them;
c. computes per-user counts in 10-minute tumbling event-time windows (events, distinct
   sessions, purchases) and writes them to the output topic with
   ``df.write.format("pyq")`` (acks=all, ``exactlyOnce=true``, ``queryName``: a replayed
   batch produces the same records with the same producer identity and epoch = batch id,
   and the broker drops them as duplicates).

Why one query rather than two: both halves need the same parse, and only one query can own
the consumer group whose failed records are retried. The price: inside ``foreachBatch``
the data is static, so Spark's stateful ``withWatermark`` + ``window`` (which emits a window
once the watermark passes it) does not apply. The counts are therefore *per micro-batch*
partial aggregates — one record per (user, window, batch), ``batch_id`` in the value —
which a consumer sums per (user, window). Events older than the watermark
(max event time seen by this run minus ``--watermark``) are still counted and written (so
the totals reconcile) but flagged in the ``late`` counter.

Repeated deliveries: a batch replayed after a crash hands its rows again with the same
``attempt``. Reporting those again would count one failure twice, so each (topic,
partition, offset, attempt) is reported once per run and the repeats are counted in
``repeats_skipped``.

At the end (``--trigger available-now``, or after ``--run-seconds`` with
``--trigger processing-time``) it prints the counts, and a machine-readable
``SUMMARY {json}`` line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

EVENT_SCHEMA = ("user_id STRING, session_hint STRING, page STRING, event_type STRING, "
                "event_time STRING")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sessionize",
                                description="Stream clicks from pyq, dead-letter malformed "
                                            "records, write per-user window counts to pyq and "
                                            "events to Parquet.")
    p.add_argument("--bootstrap-servers", default="127.0.0.1:9092")
    p.add_argument("--input-topic", default="clicks")
    p.add_argument("--output-topic", default="user-window-counts",
                   help="created if missing (same partition count as the input)")
    p.add_argument("--dead-letter-topic", default="clicks-dlq")
    p.add_argument("--group-id", default="sessionize")
    p.add_argument("--query-name", default=None, help="sink identity (default: the group id)")
    p.add_argument("--exactly-once", choices=["true", "false"], default="true",
                   help="write the counts with the sink's exactlyOnce (a batch replayed after a "
                        "crash writes nothing twice); false: at least once")
    p.add_argument("--max-retries", type=int, default=2)
    p.add_argument("--retry-backoff-ms", type=int, default=0)
    p.add_argument("--max-offsets-per-trigger", type=int, default=None)
    p.add_argument("--parquet-dir", required=True,
                   help="where parsed events go (one subdirectory per micro-batch)")
    p.add_argument("--checkpoint-dir", default=None,
                   help="the query's checkpoint (default: <parquet-dir>_checkpoint)")
    p.add_argument("--trigger", choices=["available-now", "processing-time"],
                   default="available-now")
    p.add_argument("--interval", default="5 seconds", help="processing-time trigger interval")
    p.add_argument("--run-seconds", type=float, default=60.0,
                   help="with processing-time: stop after this long")
    p.add_argument("--window", default="10 minutes", help="tumbling event-time window")
    p.add_argument("--watermark", default="30 minutes", help="lateness threshold (flagged)")
    p.add_argument("--master", default=None, help="Spark master when not set by spark-submit")
    return p


def _seconds(text: str) -> float:
    n, _, unit = text.strip().partition(" ")
    factor = {"": 1, "second": 1, "seconds": 1, "minute": 60, "minutes": 60, "hour": 3600,
              "hours": 3600}[unit.strip()]
    return float(n) * factor


class Pipeline:
    """The foreachBatch function and its counters (they live on the driver)."""

    def __init__(self, args: argparse.Namespace, spark: Any) -> None:
        self.args, self.spark = args, spark
        self.query_name = args.query_name or args.group_id
        self.counts = {"batches": 0, "events_in": 0, "redeliveries": 0, "parsed": 0,
                       "malformed": 0, "malformed_reported": 0, "results_written": 0, "late": 0,
                       "repeats_skipped": 0}
        self.reported: set[tuple[str, int, int, int]] = set()
        self.max_event_time: float | None = None

    def __call__(self, batch: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        from connector.source.failures import report_failed

        a = self.args
        self.spark.sparkContext.setLocalProperty("streaming.sql.batchId", str(batch_id))
        parsed = (batch.withColumn("ev", F.from_json(F.col("value").cast("string"), EVENT_SCHEMA))
                  .withColumn("event_time", F.to_timestamp("ev.event_time"))
                  .withColumn("ok", F.col("ev.user_id").isNotNull()
                              & F.col("event_time").isNotNull())
                  .persist())
        try:
            stats = {(r.first, r.ok): r["count"] for r in
                     parsed.groupBy((F.col("attempt") == 0).alias("first"), "ok").count().collect()}
            first_ok, first_bad = stats.get((True, True), 0), stats.get((True, False), 0)
            c = self.counts
            c["batches"] += 1
            c["events_in"] += first_ok + first_bad
            c["redeliveries"] += sum(v for (first, _), v in stats.items() if not first)
            c["parsed"] += first_ok
            c["malformed"] += first_bad
            if sum(v for (_, ok), v in stats.items() if not ok):
                bad = [r.asDict() for r in parsed.where(~F.col("ok"))
                       .select("topic", "partition", "offset", "attempt").collect()]
                # Report each (record, attempt) once: a delivery seen again with the same
                # attempt number is a repeat, not a new failure (see the module doc).
                fresh = [r for r in bad if (r["topic"], r["partition"], r["offset"],
                                            r["attempt"]) not in self.reported]
                c["repeats_skipped"] += len(bad) - len(fresh)
                if fresh:
                    c["malformed_reported"] += report_failed(
                        fresh, "malformed event: not JSON or no user_id/event_time",
                        bootstrap_servers=a.bootstrap_servers, group_id=a.group_id)
                    self.reported.update((r["topic"], r["partition"], r["offset"], r["attempt"])
                                         for r in fresh)
            good = (parsed.where(F.col("ok") & (F.col("attempt") == 0))
                    .select("ev.user_id", "ev.session_hint", "ev.page", "ev.event_type",
                            "event_time", "topic", "partition", "offset"))
            if not first_ok:
                return
            good.write.mode("overwrite").parquet(f"{a.parquet_dir}/batch_id={batch_id}")
            lo_hi = good.agg(F.min("event_time").cast("double").alias("lo"),
                             F.max("event_time").cast("double").alias("hi")).first()
            if self.max_event_time is not None:
                cutoff = self.max_event_time - _seconds(a.watermark)
                if lo_hi.lo < cutoff:
                    c["late"] += good.where(F.col("event_time").cast("double") < cutoff).count()
            self.max_event_time = max(self.max_event_time or lo_hi.hi, lo_hi.hi)
            counts = (good.groupBy("user_id", F.window("event_time", a.window).alias("w"))
                      .agg(F.count("*").alias("events"),
                           F.countDistinct("session_hint").alias("sessions"),
                           F.sum((F.col("event_type") == "purchase").cast("int")).alias("purchases"))
                      .select(F.col("user_id").alias("key"),
                              F.to_json(F.struct(
                                  "user_id",
                                  F.date_format("w.start", "yyyy-MM-dd'T'HH:mm:ssXXX").alias("window_start"),
                                  F.date_format("w.end", "yyyy-MM-dd'T'HH:mm:ssXXX").alias("window_end"),
                                  "events", "sessions", "purchases",
                                  F.lit(batch_id).alias("batch_id"))).alias("value"))
                      .repartition(2, "key").sortWithinPartitions("key", "value")
                      .persist())
            written = counts.count()
            (counts.write.format("pyq").mode("append")
             .option("kafka.bootstrap.servers", a.bootstrap_servers)
             .option("topic", a.output_topic)
             .option("exactlyOnce", a.exactly_once).option("queryName", self.query_name)
             .save())
            counts.unpersist()
            c["results_written"] += written
        finally:
            parsed.unpersist()


def ensure_output_topic(bootstrap: str, output: str, like: str) -> None:
    from broker_sim.protocol.errors import TopicAlreadyExists
    from connector.client import Admin

    with Admin({"bootstrap.servers": bootstrap}) as admin:
        topics = admin.list_topics()
        if output in topics:
            return
        parts = len(admin.describe_topics([like])[like].partitions) if like in topics else 1
        try:
            admin.create_topic(output, parts, -1)
        except TopicAlreadyExists:
            pass


def run(args: argparse.Namespace, spark: Any) -> dict[str, int]:
    """Run the query to its end; returns the counters."""
    ensure_output_topic(args.bootstrap_servers, args.output_topic, args.input_topic)
    checkpoint = args.checkpoint_dir or f"{args.parquet_dir.rstrip('/')}_checkpoint"
    pipeline = Pipeline(args, spark)
    reader = (spark.readStream.format("pyq")
              .option("kafka.bootstrap.servers", args.bootstrap_servers)
              .option("subscribe", args.input_topic)
              .option("startingOffsets", "earliest")
              .option("groupId", args.group_id)
              .option("maxRetries", str(args.max_retries))
              .option("retryBackoffMs", str(args.retry_backoff_ms))
              .option("deadLetterTopic", args.dead_letter_topic))
    if args.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
    writer = (reader.load().writeStream.foreachBatch(pipeline)
              .option("checkpointLocation", checkpoint).queryName(f"sessionize-{args.group_id}"))
    if args.trigger == "available-now":
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination()
    else:
        query = writer.trigger(processingTime=args.interval).start()
        deadline = time.monotonic() + args.run_seconds
        while time.monotonic() < deadline and query.isActive:
            time.sleep(0.5)
        query.stop()
    if query.exception() is not None:
        raise RuntimeError(f"sessionize query failed: {query.exception()}")
    return dict(pipeline.counts)


def main(argv: list[str] | None = None, spark: Any = None) -> int:
    args = build_parser().parse_args(argv)
    own = spark is None
    if own:
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.appName("pyq-sessionize")
        if args.master:
            builder = builder.master(args.master)
        spark = (builder.config("spark.sql.shuffle.partitions", "2")
                 .config("spark.ui.enabled", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
    try:
        counts = run(args, spark)
    finally:
        if own:
            spark.stop()
    print(f"events in:          {counts['events_in']}")
    print(f"parsed:             {counts['parsed']}")
    print(f"malformed:          {counts['malformed']} (reported {counts['malformed_reported']} "
          f"time(s); {counts['redeliveries']} redeliveries, {counts['repeats_skipped']} of them "
          "repeats not reported again)")
    print(f"results written:    {counts['results_written']} (late events: {counts['late']})")
    print("SUMMARY " + json.dumps(counts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
