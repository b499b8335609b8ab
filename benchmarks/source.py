"""Source benchmark: ``spark.readStream.format("pyq")`` against two in-memory Python sources.

What is measured (one run, everything on this machine):

* **broker**: one ``python -m broker_sim`` process (:class:`broker_sim.process.BrokerProcess`,
  fresh data directory; a single broker, not a 3-broker cluster: the source reads each
  partition from its leader only, so followers would add CPU load but no read path).
* **data**: one topic with ``--partitions`` (4) partitions and ``--records`` (8,000,000)
  records, no key, a ``--value-bytes`` (100) byte value, spread evenly (record ``i`` to
  partition ``i % 4``). They are produced with pyq's own ``connector.client.Producer``
  (acks=1, batch.size 1 MiB, linger 50 ms, no compression: the values are random bytes).
  Producing is timed and printed, and is not part of any ratio. Before producing, a
  100,000-record sample estimates the time: if ``--records`` would take longer than
  ``--max-produce-s`` (180 s), fewer records are used (rounded to a multiple of the
  partition count) and N is printed.
* **Spark**: ``local[2]``, UI off, 2 shuffle partitions, the workers on this interpreter.
  Three streaming queries read the same number of rows with the same schema (Spark's Kafka
  source schema: ``key binary, value binary, topic string, partition int, offset long,
  timestamp timestamp, timestampType int``) in 4 input partitions, with
  ``Trigger.AvailableNow`` into the ``noop`` sink:

  1. **pyq**: ``format("pyq")``, ``startingOffsets=earliest`` (no ``maxOffsetsPerTrigger``:
     all available data in one micro-batch, one input partition per topic-partition);
  2. **Arrow ceiling**: a Python data source whose ``read()`` yields ``pyarrow.RecordBatch``es
     of ``--arrow-batch-rows`` (32,768) rows built in memory from numpy (buffers reused
     where the content repeats: the fastest a Python data source can hand rows to Spark;
     the batch size is close to the ~35,000 rows pyq yields per 4 MiB fetch);
  3. **tuples**: the same rows yielded as Python tuples (``bytes``, ``str``, ``int``,
     timezone-aware ``datetime``), converted to Arrow by PySpark. (PySpark turns every
     timestamp into a ``datetime.timezone.utc`` one, and pyarrow converts those slowly:
     on this machine that conversion is most of the tuple source's time.)

  Before timing, one untimed round runs the three queries on the same data (warm-up:
  the JVM's JIT, the Python workers' start and their memory). Until 2026-11-26 the
  warm-up read 500,000 rows per source, too few: the JVM then spent 1-3 CPU-s more in
  the first timed round than in later ones for the same rows, and pyq, first in every
  round, paid it (its first round's ratio was the lowest in 7 of the last 9 runs). Then
  ``--rounds`` (3) rounds run the three queries in turn
  (alternating, so other load on the shared machine hits them alike); every round is
  printed, and each ratio is the median over the rounds of that round's ratio (pyq and
  the baseline that ran right after it, so a burst of other load hits both). Time = wall clock from ``start()`` to the end of ``awaitTermination()``:
  it includes the query's start (a Python process that plans the stream) and the
  micro-batch's fixed overhead, a few seconds for all three alike. The row count of
  every query is checked (``numInputRows``); ``addBatch`` (the time Spark spent running
  the batch's tasks) is printed too, with rates from it.

rows/s = rows / wall seconds. Ratios are pyq / baseline (targets: >= 0.8 of the Arrow
ceiling, >= 2 of the tuple source). CPU seconds are printed for information: the Spark
JVM with all its Python processes (approximate, from ``/proc``), and for pyq the broker,
which competes with Spark for the 2 cores.

Where the time goes: on 2 cores shared by the JVM, two Python workers and the broker,
the query is CPU-bound, so the ratio follows the ceiling's CPU over pyq's (plus the fixed
~1 s of query start both pay). Per 8,000,000 rows, measured per process from ``/proc``
(2026-11-25): the JVM spends the same on both sources once its JIT is warm (2.2-2.6 CPU-s;
3.9-4.2 in pyq's first round, which is why the first round's ratio is the lowest), the
planning Python process ~1 s each (2.1-2.4 s on 2026-11-27, below), the broker 0.36-0.46 s (``sendfile``; 0.44-0.68 s in
the runs of 2026-11-26), and the Python workers 2.0-2.2 s for pyq against 0.33-0.40 s for
the ceiling when the per-record decoding was numpy. Since the per-record pass is C
(``connector.client.columnar.RecordScan``, 2026-11-26), a pyq task of 2,000,000 rows
spends 0.23-0.34 s of thread CPU reading and decoding inside Spark (``thread_time``
around ``read()``; 0.39-0.45 s with numpy) and 0.06-0.11 s handing the batches to the
JVM, as the ceiling's worker does. Outside Spark the same read takes 0.28-0.36 CPU-s
(0.44-0.50 with numpy in the same runs); its cProfile: ``recv_into`` 0.053 s (the
kernel's copy into each response's buffer), the C scan of the records 0.038 s, the
``memcpy`` of the values into Arrow's buffer 0.025 s, CRC-32C 0.015 s (read where the
batches lie: the CRC library used to need a copy of each), Python around them (the
fetcher, framing, numpy offsets and Arrow assembly, per response) ~0.1 s. What stands
between this and 0.8: pyq's side still burns ~1-1.5 CPU-s more than the ceiling's per
8,000,000 rows on a machine where both are CPU-bound: the workers' ~1 s above the
ceiling's (receiving 840 MB from a socket is a third of it) and the broker's 0.5 s, which
an in-memory source does not have. Giving the Spark workers the broker's malloc
thresholds (``MALLOC_MMAP_THRESHOLD_``/``MALLOC_TRIM_THRESHOLD_``, one run) made both
sources faster and the ratio no different (0.71).
Fetch sizes: 1 MiB, 2 MiB and 4 MiB responses cost the same inside Spark (measured again
with in-place receiving), 16 MiB ones more, so reads stay at 4 MiB
(``connector.source.read.READ_FETCH_BYTES``: one Arrow batch of ~35,000 rows per response,
like the ceiling's 32,768). One fetch is in flight while the previous response is decoded.
A micro-batch's ``latestOffset`` + ``partitions`` + ``commit`` take ~2.5 ms on 4
partitions (4 round trips: two Metadata, two ListOffsets), and triggerExecution minus
addBatch is ~0.1 s. Query start is not negligible: with 40,000 rows (5 rounds, 2026-11-26)
pyq's queries took 2.33-3.12 s and the ceiling's 1.91-2.48. Both wait ~1.5-1.9 s for Spark
to start the query and the Python process that plans it; pyq's process then spent
0.35-0.42 s importing the planning modules (0.17-0.38 s of it in the ``crc32c`` package's
``__init__``, whose ``importlib.metadata`` version lookup walks the Spark jars and zips on
that process's ``sys.path``, ~0.1 s in client modules planning never uses) and 0.11 s in
``prepareForTriggerAvailableNow`` (its ListOffsets waited ``retry.backoff.ms`` for a second
Metadata refresh). Since then the imports take 0.17-0.21 s under Spark's ``sys.path``
(``api`` and ``config`` of the codec and client are most of it) and
``prepareForTriggerAvailableNow`` 3-8 ms.
Runs on 2026-11-26, after the read path moved to one Fetch for all of a task's ranges (a
task here holds one range, read as before): ``vs_arrow_ceiling`` 0.661/0.724/0.742,
0.680/0.686/0.618, 0.712/0.734/0.733 (medians 0.724, 0.680, 0.733); ``vs_tuple_source``
medians 2.605, 2.366, 2.624.

Runs on 2026-11-26 with the C record scan: 0.683/0.819/0.875, 0.662/0.809/0.854,
0.746/0.743/0.584 (medians 0.819, 0.809, 0.743; the first before CRC-32C stopped
copying), then 0.623/0.814/0.706, 0.684/0.735/0.636, 0.696/0.747/0.764 (medians 0.706,
0.684, 0.747); ``vs_tuple_source`` medians 3.16, 2.86, 2.37, 2.97, 2.36, 2.74. The
ceiling's own time moved 3.2-5.5 s between rounds in these runs.

Later on 2026-11-26, with the lighter query start (a slower day: the ceiling took 4.8-6.0
s): 0.715/0.769/0.956, 0.730/0.883/0.902, 0.576/0.822/0.759 (medians 0.769, 0.883, 0.759;
the first round lowest in all three), then with the untimed full warm-up round:
0.887/0.741/0.773, 0.735/0.834/0.913, 0.787/0.752/0.882 (medians 0.773, 0.834, 0.787);
``vs_tuple_source`` medians 2.72, 2.68, 2.73, then 3.05, 2.92, 2.88. With every source
warm, pyq's side still spent 0.35-2.3 Spark CPU-s more than the ceiling's per 8,000,000
rows (the workers' reading), plus the broker's 0.6-0.8 s.

On 2026-11-27: 0.623/0.848/0.743, 0.853/0.836/0.898, 0.726/0.742/0.770 (medians 0.743,
0.853, 0.742); ``vs_tuple_source`` medians 2.56, 3.00, 2.90. A fourth run took each query's
CPU per process (``/proc``, warm rounds, per 8,000,000 rows; ratios 0.736/0.887/0.795): the JVM 4.7-5.8 s for pyq
and 4.6-5.7 s for the ceiling, the same within a round; the process that plans the query
(reaped by the JVM when the query ends) 2.2-2.4 s and 2.1-2.2 s, nearly all of it Spark's
own start-up; the Python workers 1.8-2.1 s for pyq against 0.6-0.7 s for the ceiling; and
pyq's broker 0.6-0.75 s. So pyq's side needs ~2 CPU-s more than an in-memory source, ~1 s
of wall time on 2 cores: the workers' ~1.2-1.4 s above the ceiling's (outside Spark
``read_ranges`` of 2,000,000 rows takes 0.25-0.30 thread CPU-s: ``recv_into`` 0.08, the C
scan 0.046, the values' gather 0.033, CRC-32C 0.018, the Python around them ~0.08) and the
broker's (one ``sendfile`` per 4 MiB response, ~20 system calls per fetch; two thirds of
its CPU is the kernel's TCP and loopback work). Rounds: pyq 6.0-6.9 s, the ceiling
4.8-5.6 s.

Three more runs later on 2026-11-27 (nothing on the read path changed): 0.727/0.708/0.803,
0.844/0.837/0.704, 0.803/0.863/0.773 (medians 0.727, 0.837, 0.803); ``vs_tuple_source``
3.13, 2.97, 2.66.

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "source", "ratios": {"vs_arrow_ceiling": ..., "vs_tuple_source": ...},
     "figures": {...}}
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from benchmarks._proc import proc_cpu_seconds, tree_cpu_delta, tree_cpu_snapshot
from benchmarks._spark import bench_session, finished_progress
from broker_sim.process import BrokerProcess
from connector.client import Admin, Producer, TopicPartition

TOPIC = "source-bench"
SCHEMA_DDL = ("key binary, value binary, topic string, partition int, offset long, "
              "timestamp timestamp, timestampType int")
BATCH_BYTES = 1 << 20
LINGER_MS = 50
SAMPLE_RECORDS = 100_000
BASE_TS_MS = 1_700_000_000_000


# ---- the two baselines: in-memory streaming sources with the same rows ------------------
class GenPartition(InputPartition):
    def __init__(self, partition: int, count: int) -> None:
        self.partition = partition
        self.count = count


class _GenStreamReader(DataSourceStreamReader):
    """All rows in one micro-batch (like pyq under AvailableNow), 4 input partitions."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.records = int(options["records"])
        self.partitions_count = int(options["partitions"])
        self.value_bytes = int(options["valueBytes"])
        self.batch_rows = int(options.get("batchRows", "32768"))
        self.topic = options.get("topic", TOPIC)

    def initialOffset(self) -> dict:
        return {"offset": 0}

    def latestOffset(self, start: dict, limit: Any) -> dict:
        return {"offset": self.records}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        if start["offset"] >= end["offset"]:
            return []
        n, parts = end["offset"] - start["offset"], self.partitions_count
        return [GenPartition(p, n // parts + (1 if p < n % parts else 0)) for p in range(parts)]

    def commit(self, end: dict) -> None:
        pass

    def value(self) -> bytes:
        return bytes(range(256))[: self.value_bytes].ljust(self.value_bytes, b"v")


class ArrowGenReader(_GenStreamReader):
    def read(self, partition: InputPartition) -> Iterator[Any]:
        import numpy as np
        import pyarrow as pa

        assert isinstance(partition, GenPartition)
        ts_type = pa.timestamp("us", tz="UTC")
        schema = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
                            ("partition", pa.int32()), ("offset", pa.int64()),
                            ("timestamp", ts_type), ("timestampType", pa.int32())])
        rows, value, topic = self.batch_rows, self.value(), self.topic.encode()

        def binary(item: bytes, n: int, type_: pa.DataType) -> pa.Array:
            offsets = np.arange(n + 1, dtype=np.int32) * len(item)
            return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(offsets),
                                                    pa.py_buffer(item * n)])

        def full(type_: pa.DataType, dtype: Any, fill: int, n: int) -> pa.Array:
            return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(np.full(n, fill, dtype))])

        fixed = {}  # reused for every batch of the same size: content that repeats
        done = 0
        while done < partition.count:
            n = min(rows, partition.count - done)
            if n not in fixed:
                fixed[n] = (pa.nulls(n, pa.binary()), binary(value, n, pa.binary()),
                            binary(topic, n, pa.string()), full(pa.int32(), np.int32, partition.partition, n),
                            full(pa.int32(), np.int32, 0, n))
            keys, values, topics, parts, types = fixed[n]
            offsets = np.arange(done, done + n, dtype=np.int64)
            timestamps = (offsets // 1000 + BASE_TS_MS) * 1000
            yield pa.RecordBatch.from_arrays(
                [keys, values, topics, parts,
                 pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(offsets)]),
                 pa.Array.from_buffers(ts_type, n, [None, pa.py_buffer(timestamps)]), types],
                schema=schema)
            done += n


class TupleGenReader(_GenStreamReader):
    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, GenPartition)
        value, topic, p = self.value(), self.topic, partition.partition
        base = dt.datetime.fromtimestamp(BASE_TS_MS / 1000, dt.timezone.utc)
        step = dt.timedelta(milliseconds=1)
        ts = base
        for offset in range(partition.count):
            if offset % 1000 == 0:  # the same timestamp per 1000 rows, as in the Arrow source
                ts = base + step * (offset // 1000)
            yield (None, value, topic, p, offset, ts, 0)


class ArrowGenSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bench_arrow_gen"

    def schema(self) -> str:
        return SCHEMA_DDL

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return ArrowGenReader(self.options)


class TupleGenSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bench_tuple_gen"

    def schema(self) -> str:
        return SCHEMA_DDL

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return TupleGenReader(self.options)


# ---- producing ----------------------------------------------------------------------------
def produce(bootstrap: str, topic: str, n: int, partitions: int, value: bytes) -> float:
    """Produce ``n`` records round-robin over the partitions; returns the wall seconds."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "batch.size": BATCH_BYTES,
                         "linger.ms": LINGER_MS, "compression.type": "none"})
    try:
        producer.partitions_for(topic)
        send = producer.send
        t0 = time.perf_counter()
        for i in range(n):
            send(topic, value, partition=i % partitions)
        producer.flush()
        return time.perf_counter() - t0
    finally:
        producer.close()


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        found = admin.list_offsets({tp: "latest"for tp in tps})
        return {tp.partition: found[tp].offset for tp in tps}


# ---- streaming queries ----------------------------------------------------------------
class Run:
    def __init__(self, name: str, rows: int, wall: float, progress: list[dict], spark_cpu: float,
                 broker_cpu: float | None = None) -> None:
        self.name, self.rows, self.wall = name, rows, wall
        self.spark_cpu, self.broker_cpu = spark_cpu, broker_cpu
        self.batches = len(progress)
        self.add_batch_ms = sum(p.get("durationMs", {}).get("addBatch", 0) for p in progress)
        self.trigger_ms = sum(p.get("durationMs", {}).get("triggerExecution", 0) for p in progress)

    @property
    def rate(self) -> float:
        return self.rows / self.wall

    @property
    def add_batch_rate(self) -> float:
        return self.rows / max(self.add_batch_ms / 1000, 1e-9)

    def line(self) -> str:
        extra = f", broker {self.broker_cpu:5.2f} s" if self.broker_cpu is not None else ""
        return (f"{self.name:24s} {self.rows:>10,} rows in {self.wall:6.2f} s = {self.rate:>11,.0f}"
                f" rows/s  ({self.batches} micro-batch(es), addBatch {self.add_batch_ms / 1000:5.2f} s;"
                f" CPU: Spark {self.spark_cpu:5.2f} s{extra})")

    def figures(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rows_per_s": round(self.rate, 1), "wall_s": round(self.wall, 3),
                               "add_batch_rows_per_s": round(self.add_batch_rate, 1),
                               "micro_batches": self.batches,
                               "add_batch_s": round(self.add_batch_ms / 1000, 3),
                               "trigger_execution_s": round(self.trigger_ms / 1000, 3),
                               "spark_cpu_s": round(self.spark_cpu, 3)}
        if self.broker_cpu is not None:
            out["broker_cpu_s"] = round(self.broker_cpu, 3)
        return out


def run_query(spark: Any, name: str, fmt: str, options: dict[str, str], rows: int,
              checkpoint: Path, jvm_pid: int, broker_pid: int | None = None) -> Run:
    reader = spark.readStream.format(fmt)
    for k, v in options.items():
        reader = reader.option(k, v)
    writer = (reader.load().writeStream.format("noop").trigger(availableNow=True)
              .option("checkpointLocation", str(checkpoint)))
    cpu0 = proc_cpu_seconds(broker_pid) if broker_pid else 0.0
    spark_cpu0 = tree_cpu_snapshot(jvm_pid)
    t0 = time.perf_counter()
    query = writer.start()
    query.awaitTermination(1800)
    wall = time.perf_counter() - t0
    spark_cpu = tree_cpu_delta(spark_cpu0, tree_cpu_snapshot(jvm_pid))
    cpu = proc_cpu_seconds(broker_pid) - cpu0 if broker_pid else None
    return Run(name, rows, wall, finished_progress(query, name, rows), spark_cpu, cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=8_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--arrow-batch-rows", type=int, default=32768,
                        help="rows per Arrow batch of the in-memory Arrow source")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-produce-s", type=float, default=180.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    parts = args.partitions
    value = os.urandom(args.value_bytes)
    load_start = round(os.getloadavg()[0], 2)

    tmp = Path(tempfile.mkdtemp(prefix="pyq-source-bench-"))
    broker: BrokerProcess | None = None
    spark = None
    runs: dict[str, list[Run]] = {"pyq": [], "arrow": [], "tuples": []}
    try:
        broker = BrokerProcess(tmp / "broker", port=0).start()
        bootstrap = broker.bootstrap_servers
        print(f"broker: 1 broker process at {bootstrap} (pid {broker.pid}); "
              f"{os.cpu_count()} CPUs shared by the broker and Spark")
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            for topic in ("sample", TOPIC):
                admin.create_topic(topic, parts, 1, {})

        # -- produce (timed separately, not part of any ratio)
        sample_s = produce(bootstrap, "sample", SAMPLE_RECORDS, parts, value)
        n = args.records - args.records % parts
        projected = n * sample_s / SAMPLE_RECORDS
        print(f"produce sample: {SAMPLE_RECORDS:,} records in {sample_s:.2f} s = "
              f"{SAMPLE_RECORDS / sample_s:,.0f} records/s; {n:,} would take ~{projected:.0f} s")
        if projected > args.max_produce_s:
            n = int(args.max_produce_s / sample_s * SAMPLE_RECORDS)
            n -= n % parts
            print(f"more than {args.max_produce_s:.0f} s: using N = {n:,} records")
        produce_s = produce(bootstrap, TOPIC, n, parts, value)
        stored = end_offsets(bootstrap, TOPIC, parts)
        if sum(stored.values()) != n:
            raise RuntimeError(f"{TOPIC} holds {stored}, expected {n} records in all")
        print(f"produce: N = {n:,} records x {args.value_bytes} B into {parts} partitions in "
              f"{produce_s:.2f} s = {n / produce_s:,.0f} records/s (pyq Producer, acks=1, batch "
              f"{BATCH_BYTES >> 20} MiB, linger {LINGER_MS} ms, no compression)")

        # -- Spark
        spark, jvm_pid = bench_session("pyq-source-bench")
        spark.dataSource.register(ArrowGenSource)
        spark.dataSource.register(TupleGenSource)

        def options(which: str, topic: str, rows: int) -> tuple[str, dict[str, str]]:
            if which == "pyq":
                return "pyq", {"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
                               "startingOffsets": "earliest"}
            gen = {"records": str(rows), "partitions": str(parts),
                   "valueBytes": str(args.value_bytes), "topic": topic,
                   "batchRows": str(args.arrow_batch_rows)}
            return ("bench_arrow_gen" if which == "arrow" else "bench_tuple_gen"), gen

        names = {"pyq": "pyq (broker -> Arrow)", "arrow": "in-memory Arrow batches",
                 "tuples": "in-memory tuples"}
        for which in runs:  # warm-up: an untimed round
            fmt, opts = options(which, TOPIC, n)
            warm = run_query(spark, f"warm-up {which}", fmt, opts, n, tmp / f"ck-warmup-{which}",
                             jvm_pid)
            print(warm.line())
        for i in range(args.rounds):
            for which in runs:
                fmt, opts = options(which, TOPIC, n)
                run = run_query(spark, names[which], fmt, opts, n, tmp / f"ck-{which}-{i}",
                                jvm_pid, broker.pid if which == "pyq" else None)
                runs[which].append(run)
                print(run.line())
    finally:
        if spark is not None:
            spark.stop()
        if broker is not None:
            broker.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    def median(values: list[float]) -> float:
        ordered = sorted(values)
        mid = len(ordered) // 2
        return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2

    per_round = {base: [p.rate / b.rate for p, b in zip(runs["pyq"], runs[base], strict=True)]
                 for base in ("arrow", "tuples")}
    best = {k: max(v, key=lambda r: r.rate) for k, v in runs.items()}
    ratios = {"vs_arrow_ceiling": round(median(per_round["arrow"]), 3),
              "vs_tuple_source": round(median(per_round["tuples"]), 3)}
    print("per round, pyq / Arrow ceiling: " + ", ".join(f"{r:.3f}" for r in per_round["arrow"])
          + "; pyq / tuple source: " + ", ".join(f"{r:.3f}" for r in per_round["tuples"]))
    print(f"best of {args.rounds}: pyq {best['pyq'].rate:,.0f}, Arrow ceiling "
          f"{best['arrow'].rate:,.0f}, tuples {best['tuples'].rate:,.0f} rows/s "
          f"(best / best: {best['pyq'].rate / best['arrow'].rate:.3f}x the ceiling)")
    print(f"median of the rounds: pyq / Arrow ceiling = {ratios['vs_arrow_ceiling']:.2f}x "
          f"(target >= 0.8); pyq / tuple source = {ratios['vs_tuple_source']:.2f}x (target >= 2)")
    add_batch_ratios = {
        "vs_arrow_ceiling": round(median([p.add_batch_rate / b.add_batch_rate for p, b in
                                          zip(runs["pyq"], runs["arrow"], strict=True)]), 3),
        "vs_tuple_source": round(median([p.add_batch_rate / b.add_batch_rate for p, b in
                                         zip(runs["pyq"], runs["tuples"], strict=True)]), 3)}
    print(f"the same from addBatch time only (no query start-up): "
          f"{add_batch_ratios['vs_arrow_ceiling']:.2f}x and {add_batch_ratios['vs_tuple_source']:.2f}x")
    figures: dict[str, Any] = {
        "records": n, "value_bytes": args.value_bytes, "partitions": parts, "brokers": 1,
        "spark_master": "local[2]", "cpus": os.cpu_count(), "rounds": args.rounds,
        "arrow_batch_rows": args.arrow_batch_rows,
        "produce": {"wall_s": round(produce_s, 3), "records_per_s": round(n / produce_s, 1),
                    "acks": 1, "batch_size": BATCH_BYTES, "linger_ms": LINGER_MS,
                    "compression": "none"},
        "pyq": best["pyq"].figures(), "arrow_ceiling": best["arrow"].figures(),
        "tuple_source": best["tuples"].figures(),  # each source's best round
        "runs_rows_per_s": {k: [round(r.rate, 1) for r in v] for k, v in runs.items()},
        "ratios_per_round": {k: [round(r, 3) for r in v] for k, v in per_round.items()},
        "best_vs_best_arrow_ceiling": round(best["pyq"].rate / best["arrow"].rate, 3),
        "add_batch_ratios": add_batch_ratios,
        "loadavg_1min": {"start": load_start, "end": round(os.getloadavg()[0], 2)},
    }
    print(json.dumps({"benchmark": "source", "ratios": ratios, "figures": figures}))


if __name__ == "__main__":
    main()
