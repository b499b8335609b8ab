"""Sessionize a clickstream: pyq topic -> Parquet + per-user event-time window counts -> pyq.

Run with spark-submit (``--help`` lists every option)::

    spark-submit jobs/sessionize.py --bootstrap-server 127.0.0.1:9092 --input-topic clicks \\
        --output-topic user-counts --parquet-dir /tmp/events --checkpoint-dir /tmp/ck

On a secured cluster add ``--command-config client.properties`` and/or ``-X NAME=VALUE``
(:mod:`connection_options`): every client of the job (the source, the sink, failure
reports, the output topic's creation) connects with them.

Two streaming queries over the same input topic, each with its own checkpoint
(``<checkpoint-dir>/ingest`` and ``<checkpoint-dir>/windows``):

1. **ingest** owns the consumer group: ``readStream.format("pyq")`` with ``groupId``,
   ``maxRetries`` and ``deadLetterTopic``, into ``foreachBatch``. Each micro-batch

   a. parses ``value`` with ``from_json``; a row whose parse fails (not JSON, or no
      ``user_id``/``event_time``) is reported with
      :func:`connector.source.failures.report_failed`. The source redelivers it (column
      ``attempt`` > 0) up to ``maxRetries`` times and then copies it to the dead-letter
      topic with a ``pyq.reason`` header; every redelivery is reported again, so a
      malformed record always ends up there.
      With ``--value-format avro --schema-registry URL`` (what ``generate_events.py
      --value-format avro`` writes) the source decodes ``value`` itself
      (``valueFormat=avro``, the reader schema the latest of ``<input-topic>-value``) and
      a record that does not decode (no magic byte, unknown schema id, undecodable) takes
      the same way without reaching the batch: the source's task reports it with its
      reason. Such records are counted from the query's failures topic
      (:func:`connector.source.failures.failures_topic`): ``malformed`` is the records
      first reported during this run, ``malformed_reported`` the reports of this run (a
      run killed after reporting leaves its records counted by no run);
   b. writes the parsed events (first deliveries only) to ``<parquet-dir>/batch_id=N``
      with mode overwrite, so a replayed batch replaces its own files.

2. **windows** is Spark's stateful event-time aggregation: the same parse (malformed rows
   are left to the ingest query; with Avro the source reads with ``mode=PERMISSIVE``, so a
   bad record is a null ``value`` here), ``withWatermark("event_time", --watermark)``, then per
   user and ``--window`` tumbling window: events, distinct sessions
   (``approx_count_distinct``: a streaming aggregation has no exact distinct count; at a
   few sessions per user and window its error is negligible) and purchases, in output mode
   **update**. Spark keeps each window's running totals in its state store, drops events
   that arrive after the watermark has passed their window (counted as ``late_dropped``,
   from the query's progress) and forgets windows the watermark has closed. Each
   micro-batch's updated rows go to the output topic from ``foreachBatch`` with
   ``df.write.format("pyq")`` (acks=all, ``exactlyOnce`` with ``queryName``: each batch is
   written in Kafka transactions committed together by the driver; a replayed batch
   recomputes the same rows from the same state version and is either resolved — its
   transactions were already decided — or written again after the crashed run's open
   transactions are aborted; read the topic read_committed). The output topic is a
   changelog keyed by ``user|window start`` and compacted (``cleanup.policy=compact``):
   the record with the highest ``batch_id`` for a (user, window) holds that window's
   count, and the log cleaner keeps only that one.

A record is redelivered with the same ``attempt`` when a batch is replayed after a crash.
Reporting it again would count one failure twice, so each (topic, partition, offset,
attempt) is reported once per run and the repeats are counted in ``repeats_skipped``.

With ``--trigger available-now`` the ingest query runs to its end, then the windows query;
with ``--trigger processing-time`` both run side by side for ``--run-seconds``. At the end
the job prints the counts and a machine-readable ``SUMMARY {json}`` line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable
from typing import Any

from connection_options import (  # jobs/ is on sys.path
    add_connection_options,
    client_options,
    spark_options,
)

EVENT_SCHEMA = ("user_id STRING, session_hint STRING, page STRING, event_type STRING, "
                "event_time STRING")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sessionize",
                                description="Stream clicks from pyq, dead-letter malformed "
                                            "records, write events to Parquet and per-user "
                                            "event-time window counts (watermarked) to pyq.")
    add_connection_options(p)
    p.add_argument("--input-topic", default="clicks")
    p.add_argument("--output-topic", default="user-window-counts",
                   help="created if missing (same partition count as the input)")
    p.add_argument("--dead-letter-topic", default="clicks-dlq")
    p.add_argument("--value-format", choices=["json", "avro"], default="json",
                   help="json (default): parse the value as JSON; avro: the source decodes "
                        "Confluent-framed Avro through --schema-registry (the reader schema: "
                        "the latest of <input-topic>-value)")
    p.add_argument("--schema-registry", metavar="URL", default=None,
                   help="the schema registry's URL(s), comma-separated (with --value-format avro)")
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
                   help="the queries' checkpoints go in its subdirectories ingest/ and "
                        "windows/ (default: <parquet-dir>_checkpoint)")
    p.add_argument("--trigger", choices=["available-now", "processing-time"],
                   default="available-now")
    p.add_argument("--interval", default="5 seconds", help="processing-time trigger interval")
    p.add_argument("--run-seconds", type=float, default=60.0,
                   help="with processing-time: stop after this long")
    p.add_argument("--window", default="10 minutes", help="tumbling event-time window")
    p.add_argument("--watermark", default="30 minutes",
                   help="how late an event may arrive: Spark's withWatermark delay (a later "
                        "event is dropped and counted as late_dropped)")
    p.add_argument("--master", default=None, help="Spark master when not set by spark-submit")
    return p


def parse(frame: Any, value_format: str = "json") -> Any:
    """Columns ``ev`` (the event: parsed JSON, or the source's decoded Avro struct),
    ``event_time`` (timestamp) and ``ok`` (it parsed)."""
    from pyspark.sql import functions as F

    if value_format == "avro":
        ev = frame.withColumn("ev", F.col("value")).withColumn("event_time", F.col("ev.event_time"))
    else:
        ev = (frame.withColumn("ev", F.from_json(F.col("value").cast("string"), EVENT_SCHEMA))
              .withColumn("event_time", F.to_timestamp("ev.event_time")))
    return ev.withColumn("ok", F.col("ev.user_id").isNotNull() & F.col("event_time").isNotNull())


class Ingest:
    """The ingest query's foreachBatch function and its counters (they live on the driver)."""

    def __init__(self, args: argparse.Namespace, spark: Any) -> None:
        self.args, self.spark = args, spark
        self.counts = {"batches": 0, "events_in": 0, "redeliveries": 0, "parsed": 0,
                       "malformed": 0, "malformed_reported": 0, "repeats_skipped": 0}
        self.reported: set[tuple[str, int, int, int]] = set()

    def __call__(self, batch: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        from connector.source.failures import report_failed

        a = self.args
        parsed = parse(batch, a.value_format).persist()
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
                        bootstrap_servers=a.client["bootstrap.servers"], group_id=a.group_id,
                        client_options=a.client)
                    self.reported.update((r["topic"], r["partition"], r["offset"], r["attempt"])
                                         for r in fresh)
            if first_ok:
                (parsed.where(F.col("ok") & (F.col("attempt") == 0))
                 .select("ev.user_id", "ev.session_hint", "ev.page", "ev.event_type",
                         "event_time", "topic", "partition", "offset")
                 .write.mode("overwrite").parquet(f"{a.parquet_dir}/batch_id={batch_id}"))
        finally:
            parsed.unpersist()


def window_counts(stream: Any, window: str, watermark: str, value_format: str = "json") -> Any:
    """Per (user, event-time window) running totals of a stream of raw click records."""
    from pyspark.sql import functions as F

    return (parse(stream, value_format).where("ok")
            .select("ev.user_id", "ev.session_hint", "ev.event_type", "event_time")
            .withWatermark("event_time", watermark)
            .groupBy("user_id", F.window("event_time", window).alias("w"))
            .agg(F.count("*").alias("events"),
                 F.approx_count_distinct("session_hint").alias("sessions"),
                 F.sum((F.col("event_type") == "purchase").cast("int")).alias("purchases")))


class WindowWriter:
    """The windows query's foreachBatch function: a batch's updated windows -> output topic."""

    def __init__(self, args: argparse.Namespace, spark: Any) -> None:
        self.args, self.spark = args, spark
        self.query_name = args.query_name or args.group_id
        self.counts = {"window_batches": 0, "results_written": 0}

    def __call__(self, updated: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        a = self.args
        # exactlyOnce: the sink's decision for a replayed batch is looked up by batch id
        self.spark.sparkContext.setLocalProperty("streaming.sql.batchId", str(batch_id))
        fmt = "yyyy-MM-dd'T'HH:mm:ssXXX"
        records = (updated.select(
            # one key per (user, window): the compacted changelog keeps each one's latest total
            F.concat_ws("|", "user_id", F.date_format("w.start", fmt)).alias("key"),
            F.to_json(F.struct("user_id", F.date_format("w.start", fmt).alias("window_start"),
                               F.date_format("w.end", fmt).alias("window_end"),
                               "events", "sessions", "purchases",
                               F.lit(batch_id).alias("batch_id"))).alias("value"))
                   # one deterministic partitioning, so a replayed batch hands every Spark
                   # partition the same rows (what exactlyOnce relies on)
                   .repartition(2, "key").sortWithinPartitions("key", "value")
                   .persist())
        try:
            written = records.count()
            if written:
                (records.write.format("pyq").mode("append")
                 .options(**spark_options(a.client))
                 .option("topic", a.output_topic)
                 .option("exactlyOnce", a.exactly_once).option("queryName", self.query_name)
                 .save())
            self.counts["window_batches"] += 1
            self.counts["results_written"] += written
        finally:
            records.unpersist()


def latest_totals(updates: Iterable[dict]) -> dict[tuple[str, str], int]:
    """Read the output changelog: the event count of the latest update (highest
    ``batch_id``) per (user, window start)."""
    return {(u["user_id"], u["window_start"]): u["events"]
            for u in sorted(updates, key=lambda u: u["batch_id"])}


def ensure_output_topic(client: dict[str, Any], output: str, like: str) -> None:
    from broker_sim.protocol.errors import TopicAlreadyExists
    from connector.client import Admin, NewTopic

    with Admin(client) as admin:
        topics = admin.list_topics()
        if output in topics:
            return
        parts = len(admin.describe_topics([like])[like].partitions) if like in topics else 1
        try:
            admin.create_topics([NewTopic(output, parts, -1, {"cleanup.policy": "compact"})])
        except TopicAlreadyExists:
            pass


def _reader(spark: Any, args: argparse.Namespace, permissive: bool = False) -> Any:
    """The input stream; with Avro decoded by the source (``permissive``: a record that
    does not decode is a null value, for the query that leaves bad records to the other)."""
    reader = (spark.readStream.format("pyq")
              .options(**spark_options(args.client))
              .option("subscribe", args.input_topic)
              .option("startingOffsets", "earliest"))
    if args.value_format == "avro":
        reader = (reader.option("valueFormat", "avro")
                  .option("schemaRegistry.url", args.schema_registry))
        if permissive:
            reader = reader.option("mode", "PERMISSIVE")
    if args.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
    return reader


def run(args: argparse.Namespace, spark: Any) -> dict[str, int]:
    """Run both queries to their end; returns the counters."""
    ensure_output_topic(args.client, args.output_topic, args.input_topic)
    checkpoint = (args.checkpoint_dir or f"{args.parquet_dir.rstrip('/')}_checkpoint").rstrip("/")
    # every progress report of a run is kept (late_dropped is summed from them)
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    ingest, windows = Ingest(args, spark), WindowWriter(args, spark)
    ingest_writer = (_reader(spark, args)
                     .option("groupId", args.group_id)
                     .option("maxRetries", str(args.max_retries))
                     .option("retryBackoffMs", str(args.retry_backoff_ms))
                     .option("deadLetterTopic", args.dead_letter_topic)
                     .load().writeStream.foreachBatch(ingest)
                     .option("checkpointLocation", f"{checkpoint}/ingest")
                     .queryName(f"sessionize-ingest-{args.group_id}"))
    windows_writer = (window_counts(_reader(spark, args, permissive=True).load(), args.window,
                                    args.watermark, args.value_format)
                      .writeStream.outputMode("update").foreachBatch(windows)
                      .option("checkpointLocation", f"{checkpoint}/windows")
                      .queryName(f"sessionize-windows-{args.group_id}"))
    # with Avro the source's tasks report the records that do not decode: counted from there
    before = _reported(args) if args.value_format == "avro" else None
    queries = []
    try:
        if args.trigger == "available-now":  # one after the other, each to its end
            for writer in (ingest_writer, windows_writer):
                queries.append(writer.trigger(availableNow=True).start())
                queries[-1].awaitTermination()
        else:
            queries = [w.trigger(processingTime=args.interval).start()
                       for w in (ingest_writer, windows_writer)]
            deadline = time.monotonic() + args.run_seconds
            while time.monotonic() < deadline and all(q.isActive for q in queries):
                time.sleep(0.5)
    finally:
        for query in queries:
            query.stop()
    for query in queries:
        if query.exception() is not None:
            raise RuntimeError(f"sessionize query {query.name} failed: {query.exception()}")
    late = sum(op.numRowsDroppedByWatermark for p in queries[1].recentProgress
               for op in p.stateOperators)
    if before is not None:
        after = _reported(args)
        new = len(after[1] - before[1])
        c = ingest.counts
        c["malformed"] += new
        c["events_in"] += new
        c["malformed_reported"] += after[0] - before[0]
    return {**ingest.counts, **windows.counts, "late_dropped": late}


def _reported(args: argparse.Namespace) -> tuple[int, set[tuple[int, int]]]:
    """The failures topic's end offset and the input records it has reports on so far
    (partition, offset): what the source's tasks reported as not decoding."""
    from connector.client import Admin
    from connector.source.failures import failures_topic, read_reports

    name = failures_topic(args.group_id)
    with Admin(args.client) as admin:
        if name not in admin.list_topics():
            return 0, set()
        end = next(iter(admin.list_offsets({(name, 0): "latest"}).values())).offset
    return end, {(r["partition"], r["offset"]) for r in read_reports(args.client, args.group_id, 0, end)
                 if r["topic"] == args.input_topic}


def main(argv: list[str] | None = None, spark: Any = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.client = client_options(parser, args)
    if args.value_format == "avro" and not args.schema_registry:
        parser.error("--value-format avro needs --schema-registry URL")
    if args.value_format != "avro" and args.schema_registry is not None:
        parser.error(f"--schema-registry {args.schema_registry}: only with --value-format avro "
                     f"(not {args.value_format})")
    own = spark is None
    if own:
        from connector.spark_session import build_session

        spark = build_session("pyq-sessionize", args.master, shuffle_partitions=2)
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
    print(f"window updates:     {counts['results_written']} in {counts['window_batches']} "
          f"batch(es) (late events dropped: {counts['late_dropped']})")
    print("SUMMARY " + json.dumps(counts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
