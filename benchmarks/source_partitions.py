"""Micro-batch cost against partition count: the same rows over 4 and over 256 partitions.

What is measured (one run, one machine, Spark ``local[2]``):

* **data**: one broker process (``BrokerProcess``); two topics, 4 and 256 partitions, each
  holding ``--batches`` x 5,120 records of 100 bytes spread evenly over its partitions
  (so a 5,120-record micro-batch is 1,280 records per partition on one, 20 on the other).
* **query**: ``readStream.format("pyq")`` from the earliest offsets with
  ``maxOffsetsPerTrigger`` 5,120 and ``Trigger.AvailableNow`` into Spark's ``noop`` sink,
  so ``--batches`` (10) micro-batches of 5,120 rows each. A trigger's time is the
  ``triggerExecution`` duration of Spark's query progress (planning, the tasks, the
  commit); the first micro-batch is left out (it pays for Python workers starting).
* ``trigger_256_vs_4_partitions`` = mean trigger time over 256 partitions ÷ over 4
  (target ≤ 2), per round; ``--rounds`` (3) rounds read both topics again from the start
  with fresh checkpoints, and the JSON ratio is the median of the rounds' ratios. ``--min-records-per-partition 0`` measures the unpacked source (one Spark
  task per topic-partition) for comparison.

Where the time goes: a micro-batch costs Spark a fixed amount per task (scheduling, a
Python worker round trip, the task's Arrow stream: tens of milliseconds each on this
machine) and the source a fetch per topic-partition. Unpacked, 256 partitions are 256
tasks per micro-batch, and the fixed cost dominates; packed (``minRecordsPerPartition``,
default 10,000), the 256 small ranges of one broker become one task. That task used to
fetch its ranges one after another, a round trip and a decoding pass each: outside Spark,
reading 256 ranges of 20 records took 0.54-0.72 s (0.33-0.40 CPU-s: 0.26 s in 256 calls
of the columnar decoder, whose vectorised steps cost ~1 ms per call however few records,
and 0.27 s waiting for 256 answers), and the ratio was 2.01, 3.46, 3.01 over three rounds
(2026-11-26). Now one Fetch names every range and each response is decoded in one pass
into one Arrow batch: the same read takes 0.05-0.07 s, and what differs between the two
topics is the driver's planning over 256 partitions (offsets and plans per partition).
Measured 2026-11-26 after that change, three runs of three rounds: 4 partitions
0.28-0.42 s per trigger, 256 partitions 0.29-0.44 s; ratios 0.99/1.22/1.14, 1.07/1.14/1.23,
1.08/1.28/1.05 (medians 1.14, 1.14, 1.08).

Three runs on 2026-11-27: 0.913/1.137/1.165, 0.932/1.186/1.174, 0.973/1.036/1.186 (medians
1.137, 1.174, 1.036).

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "source_partitions", "ratios": {"trigger_256_vs_4_partitions": ...}, "figures": {...}}
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._spark import bench_session
from broker_sim.process import BrokerProcess
from connector.client import Admin, Producer

ROWS_PER_BATCH = 5_120


def fill(bootstrap: str, topic: str, partitions: int, rows: int) -> None:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topic(topic, partitions, 1)
    value = b"v" * 100
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as producer:
        for i in range(rows):
            producer.send(topic, value, partition=i % partitions)
        producer.flush()


def trigger_times(spark: Any, bootstrap: str, topic: str, checkpoint: Path,
                  min_records: int | None) -> list[float]:
    reader = (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", str(ROWS_PER_BATCH)))
    if min_records is not None:
        reader = reader.option("minRecordsPerPartition", str(min_records))
    query = (reader.load().writeStream.format("noop").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination(900)
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
    if any(p["numInputRows"] != ROWS_PER_BATCH for p in progress):
        raise RuntimeError(f"{topic}: batches of {[p['numInputRows'] for p in progress]} rows")
    return [p["durationMs"]["triggerExecution"] / 1000 for p in progress]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-records-per-partition", type=int, default=None,
                        help="the source option (default: the source's default)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pyq-source-partitions-"))
    broker = BrokerProcess(tmp / "broker")
    broker.start()
    spark = None
    per_round: list[float] = []
    figures: dict[str, Any] = {"batches": args.batches, "rows_per_batch": ROWS_PER_BATCH,
                               "rounds": args.rounds,
                               "min_records_per_partition": args.min_records_per_partition}
    try:
        bootstrap = broker.bootstrap_servers
        spark, _ = bench_session("pyq-source-partitions-bench")
        for partitions in (4, 256):
            fill(bootstrap, f"parts-{partitions}", partitions, args.batches * ROWS_PER_BATCH)
        for i in range(args.rounds):  # each round reads both topics again from the start
            means: dict[int, float] = {}
            for partitions in (4, 256):
                times = trigger_times(spark, bootstrap, f"parts-{partitions}",
                                      tmp / f"ck-{partitions}-{i}", args.min_records_per_partition)
                steady = times[1:] or times
                means[partitions] = statistics.mean(steady)
                figures.setdefault(f"trigger_s_{partitions}_partitions", []).append(
                    [round(t, 3) for t in times])
                figures.setdefault(f"mean_trigger_s_{partitions}_partitions", []).append(
                    round(means[partitions], 3))
                print(f"round {i + 1}: {partitions:>3} partitions: mean trigger "
                      f"{means[partitions]:.3f} s over {len(steady)} micro-batches of "
                      f"{ROWS_PER_BATCH} rows (all: {', '.join(f'{t:.2f}' for t in times)})",
                      flush=True)
            per_round.append(means[256] / means[4])
    finally:
        if spark is not None:
            spark.stop()
        broker.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    ratio = statistics.median(per_round)
    figures["ratios_per_round"] = [round(r, 3) for r in per_round]
    print(f"256 / 4 partitions per round: {', '.join(f'{r:.2f}' for r in per_round)}; "
          f"median {ratio:.2f} (target <= 2)")
    print(json.dumps({"benchmark": "source_partitions",
                      "ratios": {"trigger_256_vs_4_partitions": round(ratio, 3)},
                      "figures": figures}))


if __name__ == "__main__":
    main()
