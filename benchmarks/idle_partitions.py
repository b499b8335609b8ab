"""Replication cost against idle partitions: incremental fetch sessions (KIP-227) on and off.

What is measured (one run, one machine):

* **cluster**: a local 3-broker cluster of separate processes (controller + three
  brokers), once with fetch sessions (the default, ``max.incremental.fetch.session.cache.slots``
  1000) and once without (``0``: every follower fetch names, and every answer carries,
  every partition the follower replicates from that leader).
* **load**: pyq's ``Producer`` (acks=all, batch 900 KiB, linger 20 ms) writes
  ``--records`` (600,000) records of 100 bytes round-robin into a topic of 4 partitions,
  replication factor 3; first with no other topic on the cluster, then after
  ``--idle-topics`` (8) topics of 4 partitions each (32 idle partitions, replication factor
  3) were created and are in sync. Each write's topic is deleted after it, so every write
  runs beside the same partitions.
* **figure**: the brokers' CPU seconds (``utime + stime`` of the three processes) for each
  write; ``--rounds`` (3) writes per state, each into a fresh topic.

Ratios (the JSON's ``ratios``, medians over the rounds): ``idle_vs_none_with_sessions`` =
broker CPU for the same write with the idle partitions ÷ without them, sessions on (1.0:
idle partitions cost nothing); ``idle_vs_none_without_sessions``, the same with sessions
off (the cost sessions remove).

Where the time goes: without sessions each follower fetch (one per leader append, as
followers long-poll with ``min_bytes`` 1) carries an entry per partition each way, decoded
and encoded in Python at both ends, and the follower handles each entry of the answer.
With sessions the idle partitions are named once, then left out of requests and answers;
the leader still reads them on every fetch (to keep each follower's position and the ISR
current). A one-off script before this benchmark existed (2026-11-25) put the cost of 32
idle partitions at +55 % broker CPU without sessions (0.45 -> 0.70 CPU-s per 600,000
records) and ~+10 % with them. **This benchmark does not reproduce that yet**: its two
runs on 2026-11-26 (quiet machine) gave, per write, 1.5-1.9 and 3.1-3.5 CPU-s with
sessions and no idle partition, 1.8-2.0 and 2.2-3.1 without; ratios 1.92 and 0.94 with
sessions, 1.51 and 2.31 without. The same configuration costs up to twice as much in one
run as in another, so the ratios say nothing yet; what makes a run cheap or dear (the
number of follower fetches per write is the suspect: each acks=all append wakes every
follower's long poll) is not found.

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "idle_partitions", "ratios": {...}, "figures": {...}}
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._cluster import wait_in_sync  # noqa: E402
from benchmarks._proc import tree_cpu_seconds  # noqa: E402
from broker_sim.cluster import LocalCluster  # noqa: E402
from connector.client import Admin, NewTopic, Producer  # noqa: E402

PARTITIONS = 4


def measure(slots: int, records: int, idle_topics: int, rounds: int) -> dict[str, list[float]]:
    """Broker CPU seconds of each write, without and with the idle topics."""
    tmp = Path(tempfile.mkdtemp(prefix="pyq-idle-partitions-"))
    cluster = LocalCluster(tmp / "cluster", 3,
                           overrides={"max.incremental.fetch.session.cache.slots": str(slots)}).start()
    try:
        bootstrap = cluster.bootstrap_servers
        ports = [b.port for b in cluster.brokers]
        pids = [b.pid for b in cluster.brokers]

        def create(name: str) -> None:
            with Admin({"bootstrap.servers": bootstrap}) as admin:
                admin.create_topics([NewTopic(name, PARTITIONS, 3, {"min.insync.replicas": "2"})])
            wait_in_sync(ports, name, PARTITIONS)

        value = os.urandom(100)

        def write(name: str) -> float:
            create(name)
            producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                 "batch.size": 900 * 1024, "linger.ms": 20})
            try:
                producer.partitions_for(name)
                time.sleep(0.5)  # the followers' first fetches of the new topic are done
                cpu0 = sum(map(tree_cpu_seconds, pids))
                for i in range(records):
                    producer.send(name, value, partition=i % PARTITIONS)
                producer.flush()
                return sum(map(tree_cpu_seconds, pids)) - cpu0
            finally:
                producer.close()
                # every write runs beside the same partitions: its own and the idle ones
                with Admin({"bootstrap.servers": bootstrap}) as admin:
                    admin.delete_topics([name])

        out: dict[str, list[float]] = {"none": [], "idle": []}
        write("warm-up")
        for i in range(rounds):
            out["none"].append(write(f"none-{i}"))
        for i in range(idle_topics):
            create(f"idle-{i}")
        for i in range(rounds):
            out["idle"].append(write(f"idle-write-{i}"))
        return out
    finally:
        cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=600_000)
    parser.add_argument("--idle-topics", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    ratios: dict[str, float] = {}
    figures: dict[str, Any] = {"records": args.records, "value_bytes": 100,
                               "idle_partitions": args.idle_topics * PARTITIONS,
                               "rounds": args.rounds}
    for name, slots in (("with_sessions", 1000), ("without_sessions", 0)):
        cpu = measure(slots, args.records, args.idle_topics, args.rounds)
        ratio = statistics.median(cpu["idle"]) / statistics.median(cpu["none"])
        ratios[f"idle_vs_none_{name}"] = round(ratio, 3)
        figures[f"broker_cpu_s_{name}"] = {k: [round(v, 3) for v in vs] for k, vs in cpu.items()}
        print(f"{name.replace('_', ' ')}: broker CPU per write {', '.join(f'{v:.2f}' for v in cpu['none'])}"
              f" s with no other topic, {', '.join(f'{v:.2f}' for v in cpu['idle'])} s with "
              f"{args.idle_topics * PARTITIONS} idle partitions: {ratio:.2f}x", flush=True)
    print(json.dumps({"benchmark": "idle_partitions", "ratios": ratios, "figures": figures}))


if __name__ == "__main__":
    main()
