"""pyq's Spark source and sink against Spark's own Kafka connector, on the same topics of the same brokers.

What is measured, on 127.0.0.1, in one SparkSession (``local[2]``, 2 shuffle partitions, UI
off; ``benchmarks/_spark.py``) that holds both connectors: ``format("pyq")`` and
``format("kafka")``, the Maven artifact ``spark-sql-kafka-0-10_2.13`` with the dependencies
pyspark lacks (kafka-clients, spark-token-provider-kafka, commons-pool2), fetched by
``reference/spark-kafka/pom.xml`` into ``.cache/`` and given to Spark as local files
(``spark.jars``). Every cell runs on both brokers, a pyq broker (or cluster) and an Apache
Kafka KRaft cluster (``reference/``, ``kafka-server-start.sh``'s JVM options), both up side
by side for the whole phase; rounds are interleaved (in each round, on each broker, every
connector one after the other, the order rotated every round) so that whatever the machine
does meanwhile falls on all. Both connectors run with their defaults (no
``maxOffsetsPerTrigger``, no ``minPartitions``, the same options otherwise); a tuned Spark
variant of each cell is a figure, never a ratio.

* **Versions**: Maven Central serves no Spark Kafka connector of the pyspark this project
  pins (4.3); the newest it serves, 4.2.0 (kafka-clients 3.9.2), is used, and this benchmark
  runs under pyspark 4.2.0 in a virtualenv of its own (``.venv-spark-kafka``, made by
  ``make bench-vs``); it refuses any other pyspark. pyq's connector runs on pyspark 4.2
  unchanged.
* **source** (one broker of each; ``--source-rows`` (2,000,000) rows in 8 partitions, RF 1,
  produced once per broker by pyq's producer round robin; values are JSON objects of ~90
  bytes, ``{"user", "kind", "amount", "ts", "note"}``): ``readStream`` from ``earliest``,
  ``Trigger.AvailableNow``, ``from_json(CAST(value AS STRING))`` and
  ``groupBy(kind).count()`` into the ``memory`` sink (complete mode). rows/s = rows / wall
  time from ``start()`` to the end of ``awaitTermination()`` (query start included, a fresh
  checkpoint each run); ``numInputRows`` and the table's counts are checked. Both read one
  Spark task per topic-partition here. Figure: ``spark_wait_10ms``, Spark's connector with
  ``kafka.fetch.max.wait.ms`` 10 (kafka-clients: 500).
* **many small partitions** (the same brokers): a topic of 256 partitions; one query per
  connector and run, ``from_json`` of the values into the ``noop`` sink, under a
  **processing-time trigger** of ``--trigger-interval`` (2 s), started at ``latest``. After
  each micro-batch this process writes 20 new rows to every partition (5,120 rows, flushed)
  early in a trigger interval, so the next trigger finds them all; the figure is the mean
  ``triggerExecution`` (Spark's progress metric: offsets, planning, the job, the commit) of
  ``--triggers`` (3) such micro-batches after one unmeasured one. A micro-batch that found
  only part of a write is left out and counted. Spark's connector runs one task per
  partition (256); pyq's packs ranges under ``minRecordsPerPartition`` (10,000) of partitions
  led by one broker into one task. Every source round runs before the first of these (Spark
  reaps a Python worker idle for a minute, and Spark's connector takes minutes here: pyq's
  next source run paid 3.3 s for new workers in a probe).
* **sink** (a 3-broker pyq cluster and a 3-node Kafka cluster; each run a fresh topic of 8
  partitions, RF 3, ``min.insync.replicas=2``, every replica in sync before the clock starts,
  deleted after the run): ``df.write`` of a cached DataFrame of ``--sink-rows`` (2,000,000)
  rows in 2 Spark partitions, ``key`` (a user id) and ``value`` (JSON as above), acks=all on
  both sides, at least once: Spark's sink (``kafka.acks=all``; kafka-clients' defaults
  otherwise: idempotent, ``batch.size`` 16 KiB, ``linger.ms`` 0) and pyq's (its default).
  rows/s = rows / wall time of ``save()``; the topic's end offsets are checked. Figures:
  ``pyq_exactly_once`` (``exactlyOnce=true``) and ``spark_batch_900kib`` (Spark's producers
  batching as pyq's sink does: ``batch.size`` 900 KiB, ``linger.ms`` 5).
* **warm-up**: one unmeasured source run per connector and broker, a 20,000-row write per sink.
* **CPU**: utime + stime from ``/proc`` of the Spark JVM, of its Python processes (the JVM's
  descendants: pyq's planner and workers) and of the brokers, per run (per micro-batch in
  the 256-partition cell).

Ratios (the JSON's ``ratios``, on the Kafka cluster; each the median over ``--rounds``
rounds of that round's ratio; the same on pyq's brokers in ``figures``):
``source_vs_spark_kafka`` and ``sink_vs_spark_kafka`` (rows/s, pyq / Spark's; higher is
better), ``trigger_256_vs_spark_kafka`` (mean trigger time, pyq / Spark's; lower is better).

Runs of record (``--source-rows 1000000 --sink-rows 1000000 --triggers 2 --rounds 2
--invocations 3``, 2026-11-28, 20-21 min an invocation on 2 cores with other agents' test
suites running, load average 7.5-10.6), on Apache Kafka, per invocation:
``source_vs_spark_kafka`` 1.014, 1.512, 1.556 (median **1.512**; target >= 0.8),
``trigger_256_vs_spark_kafka`` 0.0045, 0.0034, 0.0036 (median **0.0036**; target <= 1),
``sink_vs_spark_kafka`` 3.431, 4.890, 3.437 (median **3.437**; target >= 1). On pyq's
brokers: source 1.49, 1.62, 1.54; trigger 0.0051, 0.0046, 0.0040; sink 5.90, 4.75, 5.98.
Against the tuned Spark variants (figures, on Kafka): source 0.70, 0.98, 0.88 (Spark's
connector with ``fetch.max.wait.ms`` 10 is ahead by up to 30% when the machine is loaded);
trigger 0.095, 0.057, 0.068; sink 1.38, 2.09, 1.14. Spark's default sink (16 KiB batches)
cost pyq's three brokers 9.0-10.3 CPU-s per 1M rows and Kafka's 10.2-16.2.

Where the time goes (2026-11-28, an earlier run of ``--source-rows 1000000 --sink-rows 1000000
--triggers 2 --rounds 2``, 20 min, on 2 cores shared with other sessions; ratios
source 1.53, trigger 0.0034, sink 3.49 on Kafka; 1.72, 0.0037, 5.54 on pyq's broker):

* source, per 1,000,000 rows: pyq 2.99-3.12 s (addBatch 1.90-1.99 s), Spark's connector
  4.70-5.25 s (addBatch 4.38-4.96 s), with ``fetch.max.wait.ms`` 10 2.52-3.20 s. Spark's
  default loses ~2 s a run at the end of its 8 ranges: after every poll its
  ``KafkaDataConsumer.fetch`` calls ``getAvailableOffsetRange`` (``seekToBeginning`` /
  ``seekToEnd`` + ``position``: ListOffsets), and after the poll that returned a range's
  last records the consumer already has its next Fetch in flight, which the broker holds
  ``fetch.max.wait.ms`` (500 ms) for lack of data; a broker answers a connection's requests
  in order, so the ListOffsets waits that long, once per task (``jstack`` during a read of
  256 small partitions: 284 of 287 samples of the task threads in ``KafkaConsumer.position``
  under ``getAvailableOffsetRange``). Tuned so, Spark's connector is ahead on Kafka (pyq / it
  0.84; 1.05 on pyq's broker). CPU per run: pyq JVM 2.9-3.0 s, Python 1.5-1.6 s, broker
  0.07-0.25 s; Spark's JVM 3.5-3.7 s (each record turned into a row in the JVM, where pyq
  hands Arrow batches over), ~0.2 s of Python that Spark spends on any query, broker
  0.77-0.94 s (two ListOffsets per poll, 1 MiB partition fetches). pyq's query pays ~1.1 s
  from ``start()`` to its batch (the Python process that plans it, see
  ``benchmarks/source.py``) against Spark's 0.3 s; inside the batch pyq is the faster
  (addBatch 1.9 s against the tuned 2.2-2.9 s).
* 256 partitions x 20 rows: pyq's trigger 0.21-0.29 s (latestOffset 0.011-0.014 s, addBatch
  0.11-0.18 s: one task reads all 256 ranges with one Fetch per round trip; JVM 0.18-0.60
  and Python 0.21-0.35 CPU-s per batch). Spark's 66.4-67.3 s: 256 tasks on 2 slots, each
  waiting the 500 ms above (64 s); with ``fetch.max.wait.ms`` 10 3.2-3.9 s (~25 ms a task;
  JVM 2.7-3.6 CPU-s per batch), still 15x pyq's.
* sink, per 1,000,000 rows at RF 3: on Kafka pyq 2.07-2.46 s, Spark's 6.54-8.95 s, whose
  16 KiB batches cost Kafka's brokers 10.6-14.3 CPU-s against 2.8-3.2 for pyq's 900 KiB
  ones; with 900 KiB batches Spark's takes 2.89-2.94 s (brokers 3.4-3.8 CPU-s; pyq / it
  1.30), its JVM 1.7-1.8 CPU-s against pyq's JVM 0.46-0.63 plus Python 0.69-0.89.
  ``exactlyOnce`` costs little at this size (1.86-2.33 s). On pyq's cluster Spark's
  producers with 900 KiB batches took 6.1-7.1 s and pyq's brokers 8.2-10.4 CPU-s in that
  run (0.7-1.4 for pyq's sink; 1.5-8.7 in the runs of record). Investigated the same day
  (scratch probes: Spark's sink, and a Java program sending the same keyed rows from 2
  threads through kafka-clients 3.9.2; requests counted by the brokers' metrics, batches in
  the logs): pyq does not pay more per request, it gets more of them. At equal batching
  (kafka-clients' 16 KiB default: ~6,030 batches in ~2,300 Produce requests on both) pyq's
  brokers spend 7.7-10.3 CPU-s (1.3-1.7 ms a batch; ~4 follower Fetches per Produce) and
  Kafka's 10.2-16.2; ``kafka-producer-perf-test`` at its defaults 7.4 against 17.5. The Java
  producer sends a batch when its ``linger.ms`` (5 ms) ends unless all 5 requests it may
  have in flight to that broker are unanswered, so the sooner a broker acknowledges, the
  smaller the batches: its ``request-latency-avg`` was 115-500 ms on Kafka (Kafka's request
  log: Produce 61 ms at the median, 20 ms of it appending) against 45-100 ms on pyq, and the
  same 1M rows reached Kafka as 138-200 batches (0.5-0.7 MB) and pyq as 520-2,400 (40-190
  KB). On 2 cores shared with Spark's JVM this feeds itself: small batches cost broker CPU,
  Spark slows, and each 5 ms then holds fewer rows (the 8.7 CPU-s run wrote 157,000 rows/s,
  ~10 KB a partition per 5 ms: kafka-clients' default batching again). Interleaved on a
  quieter machine (load 1-3), Spark's 900 KiB sink cost pyq's brokers 1.1-2.7 CPU-s and
  Kafka's 2.6-3.6 (Kafka also burns 0.17 CPU-s a second idle, pyq 0.04). librdkafka shows
  the mechanism on pyq alone (900 KiB, linger 5 ms, keyed): idempotent (5 requests in
  flight) 120-346 batches and 0.56-1.1 CPU-s; not idempotent (a batch sent as its linger
  ends) ~2,000 batches of 53 KB and 3.0-3.2 CPU-s. pyq's answers hold nothing that changes
  the producer's batching (no throttle, retries or errors, 1-3 Metadata requests a run); what
  is left to win is pyq's cost per batch at acks=all (``perf``: 62% interpreter, 31% kernel,
  19% of all samples thread switches and wake-ups; ``py-spy --gil``: the leader's Fetch
  handling 31%, Produce 18%, follower fetchers 17%, network processors 16%), and Kafka's
  followers need ~3 Fetches per Produce where pyq's need 4.

An earlier run (same sizes, while another session's test suite ran) gave source ratios of
0.67 and 0.91 on Kafka: the source rounds then ran between the 256-partition ones, and
pyq's source runs after Spark's minutes-long triggers paid for new Python workers (hence
the order above).

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "vs_spark_kafka", "ratios": {...}, "figures": {...}}
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks import _invocations
from benchmarks._cluster import wait_in_sync
from benchmarks._proc import proc_cpu_seconds, tree_cpu_delta, tree_cpu_snapshot
from benchmarks._sides import Side, start_kafka, start_pyq
from benchmarks._spark import bench_session, finished_progress
from connector.client import Admin, NewTopic, Producer
from reference.jars import spark_kafka_jars, spark_kafka_version

BROKERS = ("pyq", "kafka")
#: The source's readers: name -> (format, options beyond the common ones). ``spark_wait_10ms``
#: is a figure only (see "where the time goes"): Spark's connector with the consumers'
#: ``fetch.max.wait.ms`` at 10 ms instead of kafka-clients' 500.
READERS = {"pyq": ("pyq", {}), "spark": ("kafka", {}),
           "spark_wait_10ms": ("kafka", {"kafka.fetch.max.wait.ms": "10"})}
#: The sinks: name -> (format, options). pyq's sink is acks=all always (at least once
#: unless ``exactlyOnce``). Figures only: ``pyq_exactly_once``, and ``spark_batch_900kib``,
#: Spark's producers batching as pyq's sink does (``batch.size`` 900 KiB, ``linger.ms`` 5,
#: where kafka-clients has 16 KiB and 0).
WRITERS = {"pyq": ("pyq", {}), "spark": ("kafka", {"kafka.acks": "all"}),
           "pyq_exactly_once": ("pyq", {"exactlyOnce": "true"}),
           "spark_batch_900kib": ("kafka", {"kafka.acks": "all", "kafka.batch.size": "921600",
                                            "kafka.linger.ms": "5"})}
SOURCE_PARTITIONS = 8
SINK_PARTITIONS = 8
SMALL_PARTITIONS = 256
ROWS_PER_PARTITION = 20
KINDS = (b"view", b"click", b"cart", b"buy", b"refund", b"search", b"share", b"rate")
JSON_SCHEMA = "user string, kind string, amount double, ts long"
SINK_WARMUP_ROWS = 20_000


def json_value(i: int) -> bytes:
    """The i-th record's value: ~90 bytes of JSON, ``kind`` cycling through KINDS."""
    return (b'{"user": "u%05d", "kind": "%s", "amount": %d.%02d, "ts": %d, "note": "pyq-vs"}'
            % (i % 10007, KINDS[i % len(KINDS)], i % 1000, i % 100, 1_700_000_000_000 + i))


def create_topic(side: Side, topic: str, partitions: int, rf: int) -> None:
    with Admin({"bootstrap.servers": side.bootstrap}) as admin:
        config = {"min.insync.replicas": "2"} if rf > 1 else {}
        admin.create_topics([NewTopic(topic, partitions, rf, config)])
    wait_in_sync(side.ports, topic, partitions, replicas=rf)


def delete_topic(side: Side, topic: str) -> None:
    with Admin({"bootstrap.servers": side.bootstrap}) as admin:
        admin.delete_topics([topic])


def stored_records(side: Side, topic: str, partitions: int) -> int:
    with Admin({"bootstrap.servers": side.bootstrap}) as admin:
        ends = admin.list_offsets({(topic, p): "latest" for p in range(partitions)})
    return sum(o.offset for o in ends.values())


def produce(side: Side, topic: str, first: int, n: int, partitions: int) -> float:
    """Records ``first .. first+n-1`` round robin over the partitions; the wall seconds."""
    producer = Producer({"bootstrap.servers": side.bootstrap, "acks": 1, "batch.size": 1 << 20,
                         "linger.ms": 20, "compression.type": "none"})
    try:
        producer.partitions_for(topic)
        send = producer.send
        t0 = time.perf_counter()
        for i in range(first, first + n):
            send(topic, json_value(i), partition=i % partitions)
        producer.flush()
        return time.perf_counter() - t0
    finally:
        producer.close()


# ---- CPU of the processes a run involves -----------------------------------------------
class Cpu:
    """CPU seconds of Spark's JVM (its own threads), of its Python processes (the JVM's
    descendants: pyq's planner and workers), of this driver process and of the brokers."""

    def __init__(self, jvm_pid: int, broker_pids: list[int]) -> None:
        self.jvm_pid, self.broker_pids = jvm_pid, broker_pids
        self.jvm = self.python = self.driver = self.brokers = 0.0

    @contextmanager
    def measure(self) -> Iterator[Cpu]:
        tree0, jvm0 = tree_cpu_snapshot(self.jvm_pid), proc_cpu_seconds(self.jvm_pid)
        brokers0, driver0 = self._brokers(), time.process_time()
        yield self
        self.driver = time.process_time() - driver0
        self.brokers = self._brokers() - brokers0
        self.jvm = proc_cpu_seconds(self.jvm_pid) - jvm0
        self.python = max(0.0, tree_cpu_delta(tree0, tree_cpu_snapshot(self.jvm_pid)) - self.jvm)

    def _brokers(self) -> float:
        return sum(proc_cpu_seconds(pid) for pid in self.broker_pids)

    def line(self) -> str:
        return (f"CPU: JVM {self.jvm:5.2f} s, Python {self.python:5.2f} s, brokers "
                f"{self.brokers:5.2f} s, driver {self.driver:4.2f} s")

    def figures(self) -> dict[str, float]:
        return {"jvm_cpu_s": round(self.jvm, 3), "python_cpu_s": round(self.python, 3),
                "broker_cpu_s": round(self.brokers, 3), "driver_cpu_s": round(self.driver, 3)}


def durations(progress: list[dict[str, Any]]) -> dict[str, float]:
    """Spark's durationMs of the micro-batches, summed per phase, in seconds."""
    out: dict[str, float] = {}
    for p in progress:
        for k, v in p.get("durationMs", {}).items():
            out[k] = out.get(k, 0.0) + v / 1000
    return {k: round(v, 3) for k, v in sorted(out.items())}


class Bench:
    """The SparkSession and what every cell needs to run on a broker side."""

    def __init__(self, spark: Any, jvm_pid: int, tmp: Path) -> None:
        self.spark, self.jvm_pid, self.tmp = spark, jvm_pid, tmp
        self.runs = 0

    def checkpoint(self, name: str) -> str:
        self.runs += 1
        return str(self.tmp / f"ck-{self.runs}-{name}")

    def reader(self, name: str, side: Side, topic: str, starting: str) -> Any:
        fmt, extra = READERS[name]
        return (self.spark.readStream.format(fmt).options(**extra)
                .option("kafka.bootstrap.servers", side.bootstrap).option("subscribe", topic)
                .option("startingOffsets", starting).load())

    # -- source: AvailableNow, from_json, count by kind ------------------------------------
    def source(self, connector: str, side: Side, topic: str, rows: int, label: str) -> dict[str, Any]:
        from pyspark.sql import functions as F

        name = f"vs_{connector}_{side.name}_{self.runs}"
        counts = (self.reader(connector, side, topic, "earliest")
                  .select(F.from_json(F.col("value").cast("string"), JSON_SCHEMA).alias("e"))
                  .groupBy("e.kind").count())
        writer = (counts.writeStream.format("memory").queryName(name).outputMode("complete")
                  .trigger(availableNow=True).option("checkpointLocation", self.checkpoint(name)))
        cpu = Cpu(self.jvm_pid, side.pids)
        with cpu.measure():
            t0 = time.perf_counter()
            query = writer.start()
            query.awaitTermination(1800)
            wall = time.perf_counter() - t0
        progress = finished_progress(query, label)
        seen = sum(p.get("numInputRows", 0) for p in progress)
        counted = self.spark.sql(f"SELECT sum(count) AS n, count(*) AS k FROM {name}").first()
        self.spark.catalog.dropTempView(name)
        if seen != rows or counted.n != rows or counted.k != len(KINDS):
            raise RuntimeError(f"{label}: read {seen} rows, counted {counted.n} in {counted.k} "
                               f"kinds; expected {rows} in {len(KINDS)}")
        spent = durations(progress)
        out = {"rows_per_s": round(rows / wall, 1), "wall_s": round(wall, 3),
               "micro_batches": len(progress), "add_batch_s": spent.get("addBatch", 0.0),
               "duration_s": spent, **cpu.figures()}
        print(f"  {label:34s} {rows:>10,} rows in {wall:6.2f} s = {rows / wall:>10,.0f} rows/s "
              f"(addBatch {out['add_batch_s']:5.2f} s; {cpu.line()})")
        return out

    # -- many small partitions: processing-time trigger, 20 new rows per partition ----------
    def triggers(self, connector: str, side: Side, topic: str, produced: list[int], triggers: int,
                 interval: float, label: str) -> dict[str, Any]:
        from pyspark.sql import functions as F

        per_trigger = SMALL_PARTITIONS * ROWS_PER_PARTITION
        parsed = (self.reader(connector, side, topic, "latest")
                  .select(F.from_json(F.col("value").cast("string"), JSON_SCHEMA).alias("e"))
                  .select("e.*"))
        query = (parsed.writeStream.format("noop").trigger(processingTime=f"{interval} seconds")
                 .option("checkpointLocation", self.checkpoint(f"{connector}-{side.name}-256"))
                 .start())
        producer = Producer({"bootstrap.servers": side.bootstrap, "acks": 1, "linger.ms": 5})
        clean: list[dict[str, Any]] = []
        split = 0
        cpu = Cpu(self.jvm_pid, side.pids)
        try:
            producer.partitions_for(topic)
            last = wait_progress(query, -1, interval * 10 + 120)  # batch 0: offsets at latest
            with cpu.measure():
                while len(clean) < triggers + 1:
                    # write early in an interval: triggers fall on multiples of it (and at
                    # once after a batch that overran one, which has just been seen to end)
                    time.sleep(0.2)
                    phase = time.time() % interval
                    if phase > interval / 2:
                        time.sleep(interval - phase + 0.05)
                    first = produced[0]
                    for i in range(first, first + per_trigger):
                        producer.send(topic, json_value(i), partition=i % SMALL_PARTITIONS)
                    producer.flush()
                    produced[0] += per_trigger
                    seen = 0
                    while seen < per_trigger:
                        last = wait_progress(query, last["batchId"], interval * 10 + 120)
                        rows = last.get("numInputRows", 0)
                        if rows == per_trigger:
                            clean.append(last)
                        elif rows:
                            split += 1
                        seen += rows
                        if split > 3 * triggers + 5:
                            raise RuntimeError(f"{label}: {split} micro-batches found part of "
                                               "a write; raise --trigger-interval")
        finally:
            producer.close()
            query.stop()
        if query.exception() is not None:
            raise RuntimeError(f"{label} failed: {query.exception()}")
        times = [p["durationMs"]["triggerExecution"] / 1000 for p in clean]
        mean = statistics.fmean(times[1:])
        spent = durations(clean[1:])
        mean_durations = {k: round(v / triggers, 4) for k, v in spent.items()}
        out: dict[str, Any] = {
               "mean_trigger_s": round(mean, 4), "trigger_s": [round(t, 3) for t in times],
               "split_batches_left_out": split, "mean_duration_s": mean_durations,
               **{k: round(v / (len(clean) + split), 3) for k, v in cpu.figures().items()
                  if k != "driver_cpu_s"}}  # this process wrote the rows meanwhile
        print(f"  {label:34s} mean trigger {mean:6.3f} s over {triggers} (first, unmeasured: "
              f"{times[0]:.3f} s; latestOffset {mean_durations.get('latestOffset', 0):.3f}"
              f", addBatch {mean_durations.get('addBatch', 0):.3f} s; {split} split "
              f"left out; per batch: JVM {out['jvm_cpu_s']:.3f}, Python {out['python_cpu_s']:.3f}, "
              f"brokers {out['broker_cpu_s']:.3f} CPU-s)")
        return out

    # -- sink: df.write, acks=all, RF 3 -----------------------------------------------------
    def sink(self, name: str, side: Side, df: Any, rows: int, label: str) -> dict[str, Any]:
        fmt, extra = WRITERS[name]
        exactly_once = extra.get("exactlyOnce") == "true"
        topic = f"vs-sink-{name.replace('_', '-')}-{self.runs}"
        self.runs += 1
        create_topic(side, topic, SINK_PARTITIONS, 3)
        writer = (df.write.format(fmt).mode("append").options(**extra)
                  .option("kafka.bootstrap.servers", side.bootstrap).option("topic", topic))
        if exactly_once:
            writer = writer.option("queryName", f"vs-{topic}")
        cpu = Cpu(self.jvm_pid, side.pids)
        with cpu.measure():
            t0 = time.perf_counter()
            writer.save()
            wall = time.perf_counter() - t0
        stored = stored_records(side, topic, SINK_PARTITIONS)
        delete_topic(side, topic)
        markers = 2 * SINK_PARTITIONS if exactly_once else 0  # a commit marker per task and partition
        if stored < rows or (exactly_once and stored > rows + markers):
            raise RuntimeError(f"{label}: {topic} holds {stored} records, expected {rows}")
        out = {"rows_per_s": round(rows / wall, 1), "wall_s": round(wall, 3),
               "stored": stored, **cpu.figures()}
        print(f"  {label:34s} {rows:>10,} rows in {wall:6.2f} s = {rows / wall:>10,.0f} rows/s "
              f"({cpu.line()})")
        return out


def wait_progress(query: Any, after: int, timeout: float) -> dict[str, Any]:
    """The progress of the first micro-batch after batch ``after`` once it has ended. Idle
    progress events (a trigger that found no new data reports one every 10 s, under the id
    of the batch still to come) have no ``addBatch`` and are passed over."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in query.recentProgress:
            if p.batchId > after and "addBatch" in p.durationMs:
                return dict(json.loads(p.json))
        if query.exception() is not None:
            raise RuntimeError(f"query failed: {query.exception()}")
        time.sleep(0.02)
    raise TimeoutError(f"no micro-batch after {after} within {timeout:.0f} s")


def order(names: tuple[str, ...], round_: int) -> tuple[str, ...]:
    """``names`` rotated by the round: each runs first in turn."""
    k = round_ % len(names)
    return names[k:] + names[:k]


def median(values: list[float]) -> float:
    return round(statistics.median(values), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source-rows", type=int, default=2_000_000)
    parser.add_argument("--sink-rows", type=int, default=2_000_000)
    parser.add_argument("--triggers", type=int, default=3,
                        help="measured micro-batches of the 256-partition query per run")
    parser.add_argument("--trigger-interval", type=float, default=2.0, help="seconds")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parts", default="source,triggers,sink")
    parser.add_argument("--invocations", type=int, default=3,
                        help="whole invocations, each its own process; the JSON holds their medians")
    args = parser.parse_args()
    if _invocations.run("vs_spark_kafka", args.invocations):
        return
    parts = set(args.parts.split(","))
    logging.basicConfig(level=logging.WARNING)
    import pyspark

    connector_version = spark_kafka_version()
    if pyspark.__version__ != connector_version:
        sys.exit(f"Spark's Kafka connector here is {connector_version} "
                 f"(reference/spark-kafka/pom.xml) and this pyspark {pyspark.__version__}: run "
                 "under the pyspark of the connector's version (make bench-vs makes "
                 ".venv-spark-kafka)")
    jars = spark_kafka_jars()
    clients = next((m.group(1) for f in jars.files
                    if (m := re.fullmatch(r"kafka-clients-(.+)\.jar", f.name))), "?")
    from reference.jars import pinned_version

    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.split("\n")[0]
    versions = {"pyspark": pyspark.__version__, "spark_sql_kafka": connector_version,
                "kafka_clients": clients, "kafka_broker": pinned_version(), "java": java,
                "jars": [f.name for f in jars.files]}
    print(f"pyspark {pyspark.__version__}, Spark's Kafka connector spark-sql-kafka-0-10_2.13 "
          f"{connector_version} (kafka-clients {clients}), Apache Kafka {pinned_version()}, "
          f"{java}; {os.cpu_count()} CPUs; {args.rounds} round(s)")
    load_start = round(os.getloadavg()[0], 2)

    # results[cell][broker][connector] = [run, ...]
    results: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {}

    def record(cell: str, broker: str, connector: str, run: dict[str, Any]) -> None:
        results.setdefault(cell, {}).setdefault(broker, {}).setdefault(connector, []).append(run)

    tmp = Path(tempfile.mkdtemp(prefix="pyq-vs-spark-kafka-"))
    spark = None
    t_start = time.monotonic()
    try:
        spark, jvm_pid = bench_session("pyq-vs-spark-kafka",
                                       {"spark.jars": ",".join(str(f) for f in jars.files)})
        bench = Bench(spark, jvm_pid, tmp)
        if parts & {"source", "triggers"}:
            sides: list[Side] = []
            try:
                sides.append(start_pyq(tmp / "pyq-1", 1))
                sides.append(start_kafka(tmp / "kafka-1", 1))
                produced = {s.name: [0] for s in sides}
                for side in sides:
                    print(f"{side.name}: 1 node at {side.bootstrap}")
                    if "source" in parts:
                        create_topic(side, "vs-source", SOURCE_PARTITIONS, 1)
                        took = produce(side, "vs-source", 0, args.source_rows, SOURCE_PARTITIONS)
                        print(f"  produced {args.source_rows:,} JSON records into "
                              f"{SOURCE_PARTITIONS} partitions in {took:.2f} s (pyq's producer, "
                              "acks=1; not measured)")
                    if "triggers" in parts:
                        create_topic(side, "vs-256", SMALL_PARTITIONS, 1)
                readers = tuple(READERS)
                if "source" in parts:
                    print("warm-up (unmeasured):")
                    for side in sides:
                        for c in readers:
                            bench.source(c, side, "vs-source", args.source_rows,
                                         f"{c} on {side.name}")
                # Every source round before the first trigger run: Spark reaps a Python worker
                # idle for a minute, and a run of Spark's connector over 256 partitions takes
                # minutes, so pyq's next source run paid for new workers (3.3 s more in one run).
                for r in range(args.rounds if "source" in parts else 0):
                    print(f"source round {r + 1}:")
                    for side in sides:
                        for c in order(readers, r):
                            record("source", side.name, c, bench.source(
                                c, side, "vs-source", args.source_rows, f"source {c} on {side.name}"))
                for r in range(args.rounds if "triggers" in parts else 0):
                    print(f"256 partitions round {r + 1}:")
                    for side in sides:
                        for c in order(readers, r):
                            record("trigger_256", side.name, c, bench.triggers(
                                c, side, "vs-256", produced[side.name], args.triggers,
                                args.trigger_interval, f"256 partitions {c} on {side.name}"))
            finally:
                for side in sides:
                    side.stop()
        if "sink" in parts:
            from pyspark.sql import functions as F

            kinds = F.array(*[F.lit(k.decode()) for k in KINDS])
            df = (spark.range(args.sink_rows, numPartitions=2)
                  .select(F.format_string("u%05d", F.col("id") % 10007).alias("key"),
                          F.to_json(F.struct(
                              F.format_string("u%05d", F.col("id") % 10007).alias("user"),
                              F.element_at(kinds, (F.col("id") % len(KINDS) + 1).cast("int")).alias("kind"),
                              ((F.col("id") % 100000) / 100).alias("amount"),
                              (F.col("id") + 1_700_000_000_000).alias("ts"),
                              F.lit("pyq-vs").alias("note"))).alias("value"))
                  .cache())
            if df.count() != args.sink_rows:
                raise RuntimeError("the cached DataFrame lost rows")
            sides = []
            try:
                sides.append(start_pyq(tmp / "pyq-3", 3))
                sides.append(start_kafka(tmp / "kafka-3", 3))
                print("sink: " + "; ".join(f"{s.name}: 3 nodes at {s.bootstrap}" for s in sides))
                print("warm-up (unmeasured):")
                warm = df.limit(SINK_WARMUP_ROWS)
                for side in sides:
                    for c in WRITERS:
                        bench.sink(c, side, warm, SINK_WARMUP_ROWS, f"{c} on {side.name}")
                for r in range(args.rounds):
                    print(f"sink round {r + 1}:")
                    for side in sides:
                        for c in order(tuple(WRITERS), r):
                            record("sink", side.name, c, bench.sink(
                                c, side, df, args.sink_rows, f"sink {c} on {side.name}"))
            finally:
                for side in sides:
                    side.stop()
    finally:
        if spark is not None:
            spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    elapsed = time.monotonic() - t_start

    def per_round(cell: str, broker: str, key: str, a: str = "pyq", b: str = "spark") -> list[float]:
        runs = results[cell][broker]
        return [round(x[key] / y[key], 4) for x, y in zip(runs[a], runs[b], strict=True)]

    figures: dict[str, Any] = {}
    ratios: dict[str, float] = {}
    headline = {"source": ("rows_per_s", "source_vs_spark_kafka"),
                "trigger_256": ("mean_trigger_s", "trigger_256_vs_spark_kafka"),
                "sink": ("rows_per_s", "sink_vs_spark_kafka")}
    # figures beside the headline pair: (name, numerator, denominator)
    others = {"source": [("vs_spark_wait_10ms", "pyq", "spark_wait_10ms")],
              "trigger_256": [("vs_spark_wait_10ms", "pyq", "spark_wait_10ms")],
              "sink": [("exactly_once_vs_spark_kafka", "pyq_exactly_once", "spark"),
                       ("vs_spark_batch_900kib", "pyq", "spark_batch_900kib")]}
    print("medians over the rounds:")
    for cell, per_broker in results.items():
        key, ratio_name = headline[cell]
        for broker, per in per_broker.items():
            fig: dict[str, Any] = {c: {key: median([r[key] for r in runs]), "runs": runs}
                                   for c, runs in per.items()}
            fig["ratio_per_round"] = per_round(cell, broker, key)
            fig["ratio"] = median(fig["ratio_per_round"])
            for other, num, den in others[cell]:
                fig[f"{other}_per_round"] = per_round(cell, broker, key, num, den)
                fig[other] = median(fig[f"{other}_per_round"])
            figures[f"{cell}_on_{broker}"] = fig
            print(f"  {cell} on {broker}: {key} "
                  + ", ".join(f"{c} {fig[c][key]:,.3f}" for c in per)
                  + f"; pyq / spark per round {fig['ratio_per_round']}, median {fig['ratio']}; "
                  + "; ".join(f"{num} / {den} median {fig[other]}" for other, num, den in others[cell]))
            if broker == "kafka" or "kafka" not in per_broker:
                ratios[ratio_name] = fig["ratio"]
        if "pyq" in per_broker:
            figures[f"{ratio_name}_on_pyq_broker"] = figures[f"{cell}_on_pyq"]["ratio"]
    print("ratios (pyq / Spark's Kafka connector, on Apache Kafka, median of per-round ratios): "
          + ", ".join(f"{k} {v:.3f}" for k, v in ratios.items()))
    print(f"run took {elapsed:.0f} s")
    figures.update({
        "versions": versions, "source_rows": args.source_rows, "sink_rows": args.sink_rows,
        "source_partitions": SOURCE_PARTITIONS, "sink_partitions": SINK_PARTITIONS,
        "small_partitions": SMALL_PARTITIONS, "rows_per_partition_per_trigger": ROWS_PER_PARTITION,
        "triggers": args.triggers, "trigger": f"processingTime {args.trigger_interval} s",
        "rounds": args.rounds, "spark_master": "local[2]", "shuffle_partitions": 2,
        "cpus": os.cpu_count(), "elapsed_s": round(elapsed, 1),
        "loadavg_1min": {"start": load_start, "end": round(os.getloadavg()[0], 2)}})
    print(json.dumps({"benchmark": "vs_spark_kafka", "ratios": ratios, "figures": figures}))


if __name__ == "__main__":
    main()
