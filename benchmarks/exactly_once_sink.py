"""The exactly-once sink vs the at-least-once sink: the same DataFrame, the same cluster.

What is measured (one run, one machine, Spark ``local[2]``):

* **cluster**: a local 3-broker cluster of separate processes (``LocalCluster``); each
  write goes to a fresh topic of ``--partitions`` (4) partitions, replication factor 3,
  ``min.insync.replicas=2``, all replicas in sync before the clock starts.
* **data**: one cached DataFrame of ``--rows`` (1,000,000) rows in 2 Spark partitions
  (``key`` string, ``value`` 100 bytes), materialized before any clock starts.
* **the two writes**, each ``df.write.format("pyq").mode("append")`` as ``foreachBatch``
  code would write a micro-batch (the ``streaming.sql.batchId`` local property set, so the
  exactly-once write runs the full protocol of a streaming one):
  *at least once* — the default sink (idempotent producer per task, acks=all);
  *exactly once* — ``exactlyOnce=true``: per task InitProducerId with a transactional id,
  AddPartitionsToTxn as partitions get their first batch, the rows with acks=all and the
  transactional bit; then on the driver the decision (an OffsetCommit) and EndTxn per task.
  The clock stops when ``save()`` returns; each output topic must hold exactly ``--rows``
  records (read_committed for the exactly-once one, after its markers).
* **rounds**: ``--rounds`` (3) rounds alternate the two; each side's median rows/s counts.
  ``exactly_once_sink_vs_at_least_once`` = exactly-once ÷ at-least-once (target ≥ 0.8).

Where the time goes: both sides encode and send the same record bytes, acks=all, and
that dominates (about a second for a million rows here). Exactly once adds, per task,
one InitProducerId that the coordinator makes durable (a write to ``__transaction_state``
with acks=all) instead of an in-memory one, one or more AddPartitionsToTxn (each a
durable write; the sender adds every partition that has a batch ready in one call), and,
after the tasks, the driver's decision commit and one EndTxn per task (durable
PrepareCommit; the markers are written after EndTxn returns). These are a few dozen
milliseconds in all, whatever the number of rows, so the ratio approaches 1 as
micro-batches grow; a Python worker started for the driver's commit (Spark starts one
for every data source commit, in both modes) is the same on both sides.

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "exactly_once_sink", "ratios": {"exactly_once_sink_vs_at_least_once": ...},
     "figures": {...}}
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._cluster import wait_in_sync
from benchmarks._spark import bench_session
from broker_sim.cluster import LocalCluster
from connector.client import Admin, NewTopic

MODES = ("at least once", "exactly once")


def measure(spark: Any, cluster: LocalCluster, rows: int, partitions: int, rounds: int,
            value_bytes: int = 100) -> dict[str, Any]:
    """Alternate the two writes ``rounds`` times; rows/s per mode and the ratio."""
    bootstrap = cluster.bootstrap_servers
    filler = "x" * max(0, value_bytes - 8)
    df = (spark.range(rows, numPartitions=2)
          .selectExpr("cast(id % 10007 as string) as key",
                      f"cast(concat(lpad(cast(id as string), 8, '0'), '{filler}') as binary) as value")
          .cache())
    assert df.count() == rows
    sc = spark.sparkContext

    def write(mode: str, topic: str, frame: Any, expected: int, batch_id: int) -> float:
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.create_topics([NewTopic(topic, partitions, 3, {"min.insync.replicas": "2"})])
        wait_in_sync(cluster.ports, topic, partitions)
        writer = (frame.write.format("pyq").mode("append")
                  .option("kafka.bootstrap.servers", bootstrap).option("topic", topic))
        if mode == "exactly once":
            writer = writer.option("exactlyOnce", "true").option("queryName", "bench-eo")
        sc.setLocalProperty("streaming.sql.batchId", str(batch_id))
        try:
            t0 = time.perf_counter()
            writer.save()
            wall = time.perf_counter() - t0
        finally:
            sc.setLocalProperty("streaming.sql.batchId", None)
        _check(bootstrap, topic, partitions, expected, committed=mode == "exactly once")
        return wall

    for mode in MODES:
        print(f"warm-up, {mode}: {write(mode, f'eo-warm-{mode[0]}', df.limit(20_000), 20_000, 0):.2f} s")
    rates: dict[str, list[float]] = {m: [] for m in MODES}
    for i in range(rounds):
        for mode in MODES:
            wall = write(mode, f"eo-bench-{mode[0]}-{i}", df, rows, i + 1)
            rates[mode].append(rows / wall)
            print(f"round {i}, {mode:<13}: {rows:,} rows in {wall:5.2f} s = {rows / wall:>11,.0f} rows/s")
    df.unpersist()
    median = {m: statistics.median(r) for m, r in rates.items()}
    return {"ratio": median["exactly once"] / median["at least once"],
            "figures": {"at_least_once_rows_per_s": round(median["at least once"]),
                        "exactly_once_rows_per_s": round(median["exactly once"]),
                        "rows": rows, "partitions": partitions, "rounds": rounds,
                        "exactly_once_runs": [round(r) for r in rates["exactly once"]],
                        "at_least_once_runs": [round(r) for r in rates["at least once"]]}}


def _check(bootstrap: str, topic: str, partitions: int, expected: int, committed: bool) -> None:
    """The topic holds every row once (read_committed: once the commit markers are in)."""
    deadline = time.monotonic() + 30
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        while True:
            tps = {(topic, p): "latest" for p in range(partitions)}
            ends = admin.list_offsets(tps)
            stable = admin.list_offsets(tps, read_committed=True) if committed else ends
            # a commit marker per (task, partition) it wrote: 2 tasks at most
            markers = sum(o.offset for o in ends.values()) - expected
            if stable == ends and 0 <= markers <= (2 * partitions if committed else 0):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{topic}: end offsets {ends}, stable {stable}; expected "
                                   f"{expected} records")
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    tmp = Path(tempfile.mkdtemp(prefix="pyq-eo-bench-"))
    cluster = spark = None
    try:
        cluster = LocalCluster(tmp / "cluster", 3).start()
        print(f"cluster: controller + 3 broker processes; {os.cpu_count()} CPUs shared with Spark")
        spark, _ = bench_session("pyq-eo-sink-bench")
        result = measure(spark, cluster, args.rows, args.partitions, args.rounds)
    finally:
        if spark is not None:
            spark.stop()
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"exactly once / at least once: {result['ratio']:.3f}")
    print(json.dumps({"benchmark": "exactly_once_sink",
                      "ratios": {"exactly_once_sink_vs_at_least_once": round(result["ratio"], 3)},
                      "figures": result["figures"]}))


if __name__ == "__main__":
    main()
