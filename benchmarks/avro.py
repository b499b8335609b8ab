"""Avro benchmark: the source's ``valueFormat=avro`` against reading the same topic as binary,
and against the usual workaround (binary, then a pandas UDF decoding with fastavro).

What is measured (one run, everything on this machine):

* **cluster**: one :class:`connector.cluster.EmbeddedCluster` (a controller and
  ``--brokers`` (1) broker processes) with its schema registry on
  (``schema_registry=True``); one broker because the source reads each partition from its
  leader only, so followers would add CPU load but no read path.
* **data**: one topic with ``--partitions`` (4) partitions and ``--records`` (1,000,000)
  click events in Confluent's wire format (magic byte 0, the schema id, Avro binary; ~60
  bytes each), all written with the subject's one version (:data:`CLICK`: a long, three
  strings, an enum, a ``timestamp-millis``, a double and an optional string — the shape of
  a typical event). The schema is registered through the registry's REST API, the values
  are encoded with fastavro and produced with pyq's ``Producer`` (acks=1, batch 1 MiB,
  linger 50 ms); producing is timed and printed, not part of any ratio.
* **Spark**: ``local[2]``, UI off, 2 shuffle partitions. Three streaming queries read every
  row with ``Trigger.AvailableNow`` into the ``noop`` sink, in 4 input partitions:

  1. **binary**: ``format("pyq")``, the value as bytes (what the two others start from);
  2. **avro**: ``format("pyq")`` with ``valueFormat=avro`` and ``schemaRegistry.url``: the
     value column is the decoded struct, decoded on the executors per fetched Arrow batch;
  3. **pandas UDF**: the binary query's value column passed through a ``pandas_udf``
     returning the same struct: per value it strips Confluent's 5-byte header, gets the
     writer schema by id from the registry (confluent-kafka's ``SchemaRegistryClient``,
     parsed once per id and cached, as users write it), decodes with fastavro's
     ``schemaless_reader`` and returns a ``pandas.DataFrame`` — the workaround people write
     with Spark's own Kafka source, whose ``from_avro`` cannot read the 5-byte prefix.

  One untimed warm-up round runs the three queries first, then ``--rounds`` (3) rounds run
  them in turn (interleaved, so other load on the shared machine hits them alike). Each
  ratio is the median over the rounds of that round's ratio. Time = wall clock from
  ``start()`` to the end of ``awaitTermination()`` (query start included, ~1-2 s for
  all); ``numInputRows`` is checked to equal the records.

Ratios: ``avro_source_vs_binary`` = rows/s of the avro query / rows/s of the binary query
(target >= 0.5); ``avro_source_vs_udf`` = rows/s of the avro query / rows/s of the pandas
UDF query (target >= 2).

Where the time goes (``--profile``: outside Spark, one thread, the code the executors run:
:func:`connector.source.read.read_ranges` over 250,000 rows of partition 0 with and without
the ``Formats`` of ``valueFormat=avro``, and the UDF's body plus the pandas -> Arrow
conversion Spark makes of its result; thread CPU, best of 3), 2026-11-28, with the fast
path (``connector/registry/avro_runs.py``: the values of the reader's own schema read by
polars as one in-memory Avro container, cast to the column's Arrow types): binary 0.023 s
(the reading thread's share: the C record scan; the bytes come from the broker's
``sendfile``), avro 0.246-0.247 s (1,012,000-1,014,000 rows/s), the UDF's body 1.35-1.46 s
(171,000-185,000 rows/s): the source decodes ~6x faster than the UDF a core. cProfile of the
avro read (0.46 s under the profiler): polars' ``read_avro`` 0.073 s (~0.3 us a record),
the check that every value of the batch has the same 5-byte header 0.12 s (a generator over
the values: the largest Python share left), the per-row encoded-length check
(``_varint_len`` and friends, numpy) ~0.04 s, joining the payloads 0.024 s,
``Formats.apply``'s ``to_pylist`` of the column and its reasons 0.04 s. Before the fast
path (fastavro, a Python dict per record): avro 1.70-1.73 s (145,000-147,000 rows/s), of
which fastavro's ``schemaless_reader`` ~6.5 us a record, ``pyarrow.array`` of the dicts
~1.7 us and the writer-schema lookup under a lock ~0.9 us (now once per batch). A first
cut that gave polars one container block per value read only 64,000 rows/s (polars' cost
is per block): one block per run, checked by the encoded lengths, is what makes it fast.

Runs on 2026-11-28 with the fast path (the machine shared with other engineers' test runs:
load average 7.6 -> 10.6 over the first run, 9.8 -> 11.1 over the second; what a busy
2-core machine gives, not a quiet one): 1,000,000 records of 61 bytes, 4 partitions, 1
broker. First run, rounds: binary 153,300 / 107,700 / 288,900 rows/s, avro 126,300 /
99,500 / 218,200, pandas UDF 37,100 / 59,200 / 71,200; ``avro_source_vs_binary`` 0.824 /
0.924 / 0.755 (median **0.824**, target 0.5), ``avro_source_vs_udf`` 3.405 / 1.679 / 3.062
(median **3.062**, target 2); from ``addBatch`` time only 0.465 and 4.264. Second run:
binary 283,200 / 347,600 / 192,700, avro 164,500 / 223,800 / 127,400, UDF 75,100 / 74,900 /
75,800; ``avro_source_vs_binary`` 0.581 / 0.644 / 0.662 (median **0.644**),
``avro_source_vs_udf`` 2.190 / 2.988 / 1.681 (median **2.190**); from ``addBatch`` time
only 0.484 and 3.218. Both medians meet the targets in both runs; single rounds still
swing with the load (one UDF round at 1.68), and the ``addBatch``-only ratio against binary
sits just under 0.5 (binary's ``addBatch`` is ~1.3-2.5 s, so the fixed per-batch costs
weigh). Before the fast path (same machine, load 12-25): ``avro_source_vs_binary`` 0.316
and 0.422, ``avro_source_vs_udf`` 1.274 and 1.551 (medians of two runs).

The fast path covers records written with the reader's own schema whose types polars reads
exactly (see ``connector/registry/avro_runs.py``: no maps, no unions of several types, no
``time-*``, no ``bytes`` decimals, enums only as fields of the top record); other schemas,
and records of other writer schemas (evolution), still decode at the fastavro rate above.

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "avro", "ratios": {"avro_source_vs_binary": ..., "avro_source_vs_udf": ...},
     "figures": {...}}
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import logging
import os
import pstats
import random
import shutil
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks._spark import bench_session, finished_progress
from connector.client import Admin, Producer, TopicPartition
from connector.cluster import EmbeddedCluster

TOPIC = "avro-bench"
SUBJECT = f"{TOPIC}-value"
BATCH_BYTES = 1 << 20
LINGER_MS = 50
KINDS = ["VIEW", "CLICK", "CART", "BUY"]
CLICK: dict[str, Any] = {"type": "record", "name": "Click", "namespace": "pyq.bench", "fields": [
    {"name": "id", "type": "long"},
    {"name": "user_id", "type": "string"},
    {"name": "session", "type": "string"},
    {"name": "page", "type": "string"},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": KINDS}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "amount", "type": "double"},
    {"name": "referrer", "type": ["null", "string"], "default": None}]}
#: The struct a user declares for the UDF (the avro query's column has the same type).
UDF_DDL = ("id bigint, user_id string, session string, page string, kind string, "
           "at timestamp, amount double, referrer string")
FIELDS = [f["name"] for f in CLICK["fields"]]


# ---- data --------------------------------------------------------------------------------
def click(rng: random.Random, i: int) -> dict[str, Any]:
    user = f"u{rng.randrange(5000):05d}"
    return {"id": i, "user_id": user, "session": f"{user}-s{rng.randrange(40)}",
            "page": f"/product/{rng.randrange(500)}", "kind": rng.choice(KINDS),
            "at": 1_764_000_000_000 + i * 7, "amount": round(rng.random() * 100, 2),
            "referrer": None if rng.random() < 0.7 else f"https://ref{rng.randrange(50)}.example/"}


def framed_values(schema_id: int, n: int, seed: int = 7) -> list[bytes]:
    """``n`` Confluent-framed click values (a few thousand distinct ones, repeated: encoding
    a million records would take longer than reading them)."""
    from fastavro import parse_schema, schemaless_writer

    parsed = parse_schema(CLICK)
    rng = random.Random(seed)
    header = struct.pack(">bI", 0, schema_id)
    distinct = []
    for i in range(min(n, 20_000)):
        out = io.BytesIO()
        out.write(header)
        schemaless_writer(out, parsed, click(rng, i))
        distinct.append(out.getvalue())
    return [distinct[i % len(distinct)] for i in range(n)]


def produce(bootstrap: str, topic: str, values: list[bytes], partitions: int) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "batch.size": BATCH_BYTES,
                         "linger.ms": LINGER_MS, "compression.type": "none"})
    try:
        producer.partitions_for(topic)
        send = producer.send
        t0 = time.perf_counter()
        for i, v in enumerate(values):
            send(topic, v, partition=i % partitions)
        producer.flush()
        return time.perf_counter() - t0
    finally:
        producer.close()


# ---- the workaround: binary + pandas UDF with fastavro -------------------------------------
def udf_body(registry_url: str) -> Any:
    """The pandas UDF's function (a plain function of a ``pandas.Series``), as a user writes
    it: self-contained, so cloudpickle ships it to the workers by value."""

    def decode(values: pd.Series) -> pd.DataFrame:
        import io
        import struct

        from confluent_kafka.schema_registry import SchemaRegistryClient
        from fastavro import parse_schema, schemaless_reader

        cache = decode.__dict__.setdefault("cache", {})  # per Python worker
        if "client" not in cache:
            cache["client"] = SchemaRegistryClient({"url": registry_url})
        rows = []
        for v in values:
            (schema_id,) = struct.unpack(">I", v[1:5])
            schema = cache.get(schema_id)
            if schema is None:
                text = cache["client"].get_schema(schema_id).schema_str
                schema = cache[schema_id] = parse_schema(json.loads(text))
            rows.append(schemaless_reader(io.BytesIO(v[5:]), schema, None))
        return pd.DataFrame(rows, columns=FIELDS)

    return decode


# ---- streaming queries ----------------------------------------------------------------
class Run:
    def __init__(self, name: str, rows: int, wall: float, progress: list[dict]) -> None:
        self.name, self.rows, self.wall = name, rows, wall
        self.add_batch_ms = sum(p.get("durationMs", {}).get("addBatch", 0) for p in progress)

    @property
    def rate(self) -> float:
        return self.rows / self.wall

    def line(self) -> str:
        return (f"{self.name:22s} {self.rows:>9,} rows in {self.wall:6.2f} s = {self.rate:>9,.0f}"
                f" rows/s  (addBatch {self.add_batch_ms / 1000:5.2f} s)")

    def figures(self) -> dict[str, Any]:
        return {"rows_per_s": round(self.rate, 1), "wall_s": round(self.wall, 3),
                "add_batch_s": round(self.add_batch_ms / 1000, 3)}


def run_query(spark: Any, which: str, bootstrap: str, registry_url: str, rows: int,
              checkpoint: Path) -> Run:
    reader = (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", TOPIC).option("startingOffsets", "earliest"))
    if which == "avro":
        reader = reader.option("valueFormat", "avro").option("schemaRegistry.url", registry_url)
    df = reader.load()
    if which == "udf":
        from pyspark.sql.functions import pandas_udf

        decode = pandas_udf(udf_body(registry_url), UDF_DDL)  # type: ignore[call-overload]
        df = df.withColumn("value", decode("value"))
    writer = (df.writeStream.format("noop").trigger(availableNow=True)
              .option("checkpointLocation", str(checkpoint)))
    t0 = time.perf_counter()
    query = writer.start()
    query.awaitTermination(1800)
    wall = time.perf_counter() - t0
    return Run(NAMES[which], rows, wall, finished_progress(query, which, rows))


NAMES = {"binary": "binary", "avro": "valueFormat=avro", "udf": "binary + pandas UDF"}


# ---- where the time goes, outside Spark ---------------------------------------------------
def profile(bootstrap: str, registry_url: str, end: int, top: int) -> dict[str, Any]:
    """Thread CPU of the executor's code on partition 0 (``end`` rows): binary, avro, and
    the UDF's body plus the pandas -> Arrow conversion Spark does after it; the cProfile of
    the avro read. Printed; figures returned."""
    import pyarrow as pa

    from connector.source.formats import parse_formats
    from connector.source.read import InputRange, read_ranges

    formats = parse_formats({"valueFormat": "avro", "schemaRegistry.url": registry_url},
                            (TOPIC,), None, None, {"bootstrap.servers": bootstrap})
    binary = InputRange(bootstrap, TOPIC, 0, 0, end)
    avro = InputRange(bootstrap, TOPIC, 0, 0, end, formats=formats)
    udf = udf_body(registry_url)
    udf_schema = pa.schema(list(zip(FIELDS, [
        pa.int64(), pa.string(), pa.string(), pa.string(), pa.string(),
        pa.timestamp("us", tz="UTC"), pa.float64(), pa.string()], strict=True)))

    def cpu(fn: Any) -> tuple[float, Any]:
        t0 = time.thread_time()
        out = fn()
        return time.thread_time() - t0, out

    def read_udf() -> int:
        n = 0
        for batch in read_ranges((binary,)):
            frame = udf(batch.column("value").to_pandas())
            n += pa.Table.from_pandas(frame, schema=udf_schema, preserve_index=False).num_rows
        return n

    sum(b.num_rows for b in read_ranges((avro,)))  # warm: writer schema, imports
    read_udf()
    figures: dict[str, Any] = {"rows": end}
    for name, fn in (("binary", lambda: sum(b.num_rows for b in read_ranges((binary,)))),
                     ("avro", lambda: sum(b.num_rows for b in read_ranges((avro,)))),
                     ("udf", read_udf)):
        best = min(cpu(fn)[0] for _ in range(3))
        figures[f"{name}_cpu_s"] = round(best, 3)
        print(f"profile: {name:6s} {end:,} rows in {best:.3f} thread CPU-s "
              f"= {end / best:,.0f} rows/s (best of 3, one thread)")
    prof = cProfile.Profile()
    prof.enable()
    rows = sum(b.num_rows for b in read_ranges((avro,)))
    prof.disable()
    assert rows == end
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    print("profile: cProfile of the avro read, by own time:")
    print("\n".join(line for line in out.getvalue().splitlines()
                    if line.strip() and not line.startswith(("   Ordered", "Ordered"))))
    return figures


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--brokers", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", type=int, default=250_000, metavar="ROWS",
                        help="rows of partition 0 profiled outside Spark (0: no profile)")
    parser.add_argument("--top", type=int, default=12, help="cProfile lines shown")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    parts = args.partitions
    n = args.records - args.records % parts
    load_start = round(os.getloadavg()[0], 2)
    tmp = Path(tempfile.mkdtemp(prefix="pyq-avro-bench-"))
    runs: dict[str, list[Run]] = {"binary": [], "avro": [], "udf": []}
    spark = None
    try:
        with EmbeddedCluster(brokers=args.brokers, schema_registry=True) as cluster:
            bootstrap, registry_url = cluster.bootstrap_servers, cluster.schema_registry_url
            print(f"cluster: {args.brokers} broker(s) at {bootstrap}, schema registry "
                  f"{registry_url}; {os.cpu_count()} CPUs shared with Spark")
            from connector.registry.client import RegistryClient

            schema_id = RegistryClient(registry_url).register(
                SUBJECT, {"schema": json.dumps(CLICK)})
            with Admin({"bootstrap.servers": bootstrap}) as admin:
                admin.create_topic(TOPIC, parts, args.brokers, {})
            t0 = time.perf_counter()
            values = framed_values(schema_id, n)
            encode_s = time.perf_counter() - t0
            produce_s = produce(bootstrap, TOPIC, values, parts)
            size = sum(len(v) for v in values)
            del values
            with Admin({"bootstrap.servers": bootstrap}) as admin:
                tps = [TopicPartition(TOPIC, p) for p in range(parts)]
                ends = admin.list_offsets({tp: "latest" for tp in tps})
            if sum(o.offset for o in ends.values()) != n:
                raise RuntimeError(f"{TOPIC} holds {ends}, expected {n} records")
            print(f"produce: {n:,} Avro records ({size / n:.0f} B each, schema id {schema_id}) "
                  f"into {parts} partitions in {produce_s:.2f} s (encoding {encode_s:.2f} s)")

            figures: dict[str, Any] = {}
            if args.profile:
                figures["profile"] = profile(bootstrap, registry_url,
                                             min(args.profile, ends[tps[0]].offset), args.top)

            spark, _ = bench_session("pyq-avro-bench")
            for which in runs:  # warm-up: an untimed round
                print("warm-up " + run_query(spark, which, bootstrap, registry_url, n,
                                             tmp / f"ck-warm-{which}").line())
            for i in range(args.rounds):
                for which in runs:
                    run = run_query(spark, which, bootstrap, registry_url, n,
                                    tmp / f"ck-{which}-{i}")
                    runs[which].append(run)
                    print(run.line())
            spark.stop()
            spark = None
    finally:
        if spark is not None:
            spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    per_round = {
        "avro_source_vs_binary": [a.rate / b.rate for a, b in
                                  zip(runs["avro"], runs["binary"], strict=True)],
        "avro_source_vs_udf": [a.rate / u.rate for a, u in
                               zip(runs["avro"], runs["udf"], strict=True)]}
    ratios = {k: round(median(v), 3) for k, v in per_round.items()}
    for k, v in per_round.items():
        print(f"{k}: per round " + ", ".join(f"{r:.3f}" for r in v) + f"; median {ratios[k]:.3f}")
    print("targets: avro_source_vs_binary >= 0.5, avro_source_vs_udf >= 2")
    add_batch = {  # the same from addBatch (the batch's tasks) only: no query start-up
        k: round(median([b.add_batch_ms / a.add_batch_ms for a, b in
                         zip(runs["avro"], runs[base], strict=True)]), 3)
        for k, base in (("avro_source_vs_binary", "binary"), ("avro_source_vs_udf", "udf"))}
    print("from addBatch time only: " + ", ".join(f"{k} {v:.3f}" for k, v in add_batch.items()))
    best = {k: max(v, key=lambda r: r.rate) for k, v in runs.items()}
    figures.update({
        "records": n, "partitions": parts, "brokers": args.brokers, "spark_master": "local[2]",
        "cpus": os.cpu_count(), "rounds": args.rounds, "bytes_per_record": round(size / n, 1),
        "produce_s": round(produce_s, 3),
        **{k: best[k].figures() for k in runs},  # each query's best round
        "runs_rows_per_s": {k: [round(r.rate, 1) for r in v] for k, v in runs.items()},
        "ratios_per_round": {k: [round(r, 3) for r in v] for k, v in per_round.items()},
        "add_batch_ratios": add_batch,
        "loadavg_1min": {"start": load_start, "end": round(os.getloadavg()[0], 2)},
    })
    print(json.dumps({"benchmark": "avro", "ratios": ratios, "figures": figures}))


if __name__ == "__main__":
    main()
