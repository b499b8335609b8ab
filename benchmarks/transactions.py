"""Transactional vs idempotent producing with pyq's producer, on a 3-broker cluster.

What is measured (one run, everything on 127.0.0.1):

* **cluster**: :class:`broker_sim.cluster.LocalCluster`, a controller and 3 brokers, each its
  own process, fresh data directories.
* **topics**: a fresh topic per phase, ``--partitions`` (4) partitions, replication factor 3,
  ``min.insync.replicas=2``; timing starts once every broker reports every partition with
  its 3 replicas in sync (``_cluster.wait_in_sync``).
* **load** (the same in both modes): pyq's ``Producer`` (acks=all, idempotent, ``linger.ms``
  5, ``batch.size`` 64 KiB) sends ``--records`` (200,000) records of 100 random bytes to
  partition ``i % partitions``; the clock runs from the first ``send()`` to the return of the
  last ``flush()`` (idempotent) or ``commit_transaction()`` (transactional).
* **transactional**: the same producer with a ``transactional.id``: ``init_transactions``
  before the clock starts, then one transaction per ``--per-transaction`` (10,000) records:
  ``begin_transaction``, the sends, ``commit_transaction``. Afterwards a read_committed read
  of the whole topic (pyq's ``Fetcher``) must return every record: the run fails otherwise.
* **rounds**: the modes are interleaved ``--rounds`` times (3); each mode's throughput is
  the median over its rounds. ``txn_produce_vs_idempotent`` = median transactional ÷ median
  idempotent records/s (target ≥ 0.8).

Where the time goes (profiled on a 2-core machine: 3 broker processes and the client share
it). Both modes pay the same for the records themselves (the accumulator, produce requests,
replication to the in-sync replicas for acks=all): about 40 ms per 10,000 records, bound by
the brokers. A transaction adds a chain of waits between the end of one transaction and the
first produce request of the next, during which none of the next transaction's records can
be written (a partition's records may follow only its marker):

1. ``commit_transaction``: the flush (whatever is still queued is sent and acknowledged:
   the pipeline drains), then EndTxn — the coordinator writes PrepareCommit to
   ``__transaction_state`` with acks=all (its fsync overlapping the replication) and
   answers: ~4 ms after the flush;
2. the markers: every leader of the transaction's partitions writes one with acks=all,
   all leaders in parallel, over one long-lived connection per broker (one WriteTxnMarkers
   per broker and round): ~4-8 ms;
3. CompleteCommit is written (acks=all): ~2-3 ms;
4. the next transaction's AddPartitionsToTxn — sent by the producer's sender thread once
   the first record is queued — waits at the coordinator until 3 is done (no
   CONCURRENT_TRANSACTIONS retry loop), is written (Ongoing, acks=all) and answered; the
   sender reads the answer and drains in the same loop, after a GIL hand-off (the
   application thread is busy in ``send()``; up to 5 ms).

Commit's return to the next transaction's AddPartitionsToTxn answered: ~19-28 ms (it was
~26 ms with a 10 ms CONCURRENT_TRANSACTIONS retry loop, markers sent to one leader after the
other on a new connection each, and the AddPartitionsToTxn sent from a thread of its own).
``send()`` keeps accumulating meanwhile, and what has not gone out when the application
commits is what the flush waits for — the largest single cost per transaction. On this
machine the figures swing with whatever else runs (other processes take CPU from the
brokers' round trips): in interleaved runs the ratio was 0.39-0.54 before those changes and
0.43-0.59 since, a few hundredths better in every pair. Left on the table: writing
CompleteCommit and the waiting Ongoing as one batch (one acks=all write less per
transaction), and the per-hop latency of Python processes sharing two cores.

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "transactions", "ratios": {"txn_produce_vs_idempotent": ...}, "figures": {...}}

The second ratio, ``exactly_once_sink_vs_at_least_once``, comes from
:mod:`benchmarks.exactly_once_sink` run on the same cluster after the producer rounds (its
docstring says what it measures and where the time goes); ``--no-sink`` skips it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._cluster import wait_in_sync
from benchmarks._proc import Timed
from broker_sim.cluster import LocalCluster
from connector.client import Admin, Fetcher, Producer

PRODUCER: dict[str, Any] = {"acks": "all", "linger.ms": 5, "batch.size": 64 * 1024, "enable.idempotence": True}


def make_topic(cluster: LocalCluster, name: str, partitions: int) -> None:
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topic(name, partitions, 3, {"min.insync.replicas": "2"})
    wait_in_sync(cluster.ports, name, partitions)


def idempotent(cluster: LocalCluster, topic: str, values: list[bytes], partitions: int,
               pids: list[int]) -> Timed:
    with Producer(bootstrap_servers=cluster.bootstrap_servers, **PRODUCER) as producer:
        producer.partitions_for(topic)
        with Timed(pids) as t:
            for i, v in enumerate(values):
                producer.send(topic, v, partition=i % partitions)
            producer.flush()
    return t


def transactional(cluster: LocalCluster, topic: str, values: list[bytes], partitions: int,
                  per_txn: int, pids: list[int], round_no: int) -> Timed:
    with Producer(bootstrap_servers=cluster.bootstrap_servers,
                  transactional_id=f"bench-{round_no}", **PRODUCER) as producer:
        producer.partitions_for(topic)
        producer.init_transactions()
        with Timed(pids) as t:
            for start in range(0, len(values), per_txn):
                producer.begin_transaction()
                for i in range(start, min(start + per_txn, len(values))):
                    producer.send(topic, values[i], partition=i % partitions)
                producer.commit_transaction()
    return t


def committed_rows(cluster: LocalCluster, topic: str, partitions: int, expected: int) -> int:
    """What a read_committed reader finds, once the last transaction's markers are written
    (commit_transaction returns when the decision is, the markers follow)."""
    deadline = time.monotonic() + 30
    while True:
        rows = 0
        with Fetcher(bootstrap_servers=cluster.bootstrap_servers,
                     isolation_level="read_committed") as f:
            for p in range(partitions):
                start, end = f.offset_bounds(topic, p)
                rows += f.read_arrow(topic, p, start, end).num_rows
        if rows == expected or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--per-transaction", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sink-rows", type=int, default=1_000_000)
    parser.add_argument("--no-sink", action="store_true", help="skip the sink comparison")
    args = parser.parse_args()
    ratios: dict[str, float] = {}
    values = [os.urandom(100) for _ in range(args.records)]
    figures: dict[str, object] = {"records": args.records,
                                  "records_per_transaction": args.per_transaction}
    rates: dict[str, list[float]] = {"idempotent": [], "transactional": []}
    with tempfile.TemporaryDirectory() as tmp:
        cluster = LocalCluster(Path(tmp), 3)
        cluster.start()
        try:
            pids = [b.pid for b in cluster.brokers if b.pid is not None]
            for r in range(args.rounds):
                for mode in ("idempotent", "transactional"):
                    topic = f"{mode}-{r}"
                    make_topic(cluster, topic, args.partitions)
                    if mode == "idempotent":
                        t = idempotent(cluster, topic, values, args.partitions, pids)
                    else:
                        t = transactional(cluster, topic, values, args.partitions,
                                          args.per_transaction, pids, r)
                        rows = committed_rows(cluster, topic, args.partitions, args.records)
                        if rows != args.records:
                            raise SystemExit(f"read_committed found {rows} of {args.records} "
                                             f"records in {topic}")
                    rate = args.records / t.wall
                    rates[mode].append(rate)
                    figures[f"{mode}_{r}_records_per_s"] = round(rate)
                    figures[f"{mode}_{r}_broker_cpu_share"] = round(t.server_cpu / t.wall, 3)
                    figures[f"{mode}_{r}_client_cpu_share"] = round(t.client_cpu / t.wall, 3)
                    print(f"round {r} {mode:13s}: {rate:9.0f} records/s, brokers "
                          f"{t.server_cpu / t.wall:.2f} cores, client "
                          f"{t.client_cpu / t.wall:.2f} cores", flush=True)
            if not args.no_sink:
                from benchmarks._spark import bench_session
                from benchmarks.exactly_once_sink import measure

                spark, _ = bench_session("pyq-transactions-bench")
                try:
                    sink = measure(spark, cluster, args.sink_rows, args.partitions, args.rounds)
                finally:
                    spark.stop()
                ratios["exactly_once_sink_vs_at_least_once"] = round(sink["ratio"], 3)
                figures.update({f"sink_{k}": v for k, v in sink["figures"].items()})
                print(f"exactly-once sink / at-least-once sink: {sink['ratio']:.3f} (target >= 0.8)")
        finally:
            cluster.stop()
    idem, txn = statistics.median(rates["idempotent"]), statistics.median(rates["transactional"])
    figures["idempotent_records_per_s"] = round(idem)
    figures["transactional_records_per_s"] = round(txn)
    ratio = txn / idem
    print(f"transactional / idempotent: {ratio:.3f} (target >= 0.8)")
    print(json.dumps({"benchmark": "transactions",
                      "ratios": {"txn_produce_vs_idempotent": round(ratio, 3), **ratios},
                      "figures": figures}))


if __name__ == "__main__":
    main()
