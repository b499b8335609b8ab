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

Where the time goes: both modes pay the same for the records themselves (the accumulator,
produce requests, replication to the in-sync replicas for acks=all). A transaction adds,
per transaction: one AddPartitionsToTxn round trip per partition on its first record
(made by the sending thread, so sends stall for it), the flush at commit (the pipeline
drains: no batch of the next transaction is in flight while this one ends), and EndTxn —
the coordinator writes PrepareCommit to ``__transaction_state`` with acks=all, answers,
then has each partition leader write a marker (acks=all) and writes CompleteCommit. With
10,000 records per transaction those fixed costs are spread thin; the drain at each commit
is the largest of them.

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "transactions", "ratios": {"txn_produce_vs_idempotent": ...}, "figures": {...}}

The issue's second ratio, ``exactly_once_sink_vs_at_least_once``, waits for the sink to be
rebuilt on transactions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._cluster import wait_in_sync  # noqa: E402
from benchmarks._proc import Timed  # noqa: E402
from broker_sim.cluster import LocalCluster  # noqa: E402
from connector.client import Admin, Fetcher, Producer  # noqa: E402

PRODUCER = {"acks": "all", "linger.ms": 5, "batch.size": 64 * 1024, "enable.idempotence": True}


def make_topic(cluster: LocalCluster, name: str, partitions: int) -> None:
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topic(name, partitions, 3, {"min.insync.replicas": "2"})
    wait_in_sync([b.port for b in cluster.brokers if b.port is not None], name, partitions)


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
    args = parser.parse_args()
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
        finally:
            cluster.stop()
    idem, txn = statistics.median(rates["idempotent"]), statistics.median(rates["transactional"])
    figures["idempotent_records_per_s"] = round(idem)
    figures["transactional_records_per_s"] = round(txn)
    ratio = txn / idem
    print(f"transactional / idempotent: {ratio:.3f} (target >= 0.8)")
    print(json.dumps({"benchmark": "transactions",
                      "ratios": {"txn_produce_vs_idempotent": round(ratio, 3)},
                      "figures": figures}))


if __name__ == "__main__":
    main()
