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
* **figures**, per write: the three brokers' user and system CPU seconds (``/proc``) and
  the Fetch requests they answered (their metrics endpoints, ``pyq_requests_total``; no
  consumer runs, so these are the followers' fetches); ``--rounds`` (3) writes per state,
  each into a fresh topic.

Ratios (the JSON's ``ratios``, medians over the rounds): ``idle_vs_none_with_sessions`` =
the brokers' **user** CPU per follower fetch with the idle partitions ÷ without them,
sessions on (1.0: idle partitions cost nothing); ``idle_vs_none_without_sessions``, the
same with sessions off (the cost sessions remove). Per fetch and user time only, because
the two other things a write costs swing from run to run with no relation to idle
partitions: how many fetches the followers make (each acks=all append wakes every
follower's long poll, so it follows the write's pace), and the kernel's page-cache copy of
the appended bytes, which on this machine (a VM that hands freed memory back to its host)
costs ~2-2.5 CPU-s per GB into memory new to the guest and ~0.27 into memory freed a
moment before. Those two made the first version of this benchmark, which divided whole
CPU per write, give ratios 1.92 and 0.94 with sessions and 1.51 and 2.31 without in two
runs on one day.

Where the time goes: without sessions each follower fetch carries an entry per partition
each way, decoded and encoded in Python at both ends, and the follower handles each entry
of the answer. With sessions the idle partitions are named once, then left out of requests
and answers; the leader still reads them on every fetch (to keep each follower's position
and the ISR current).

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "idle_partitions", "ratios": {...}, "figures": {...}}
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from benchmarks._cluster import wait_in_sync
from benchmarks._proc import proc_user_system_seconds
from broker_sim.cluster import LocalCluster
from connector.client import Admin, NewTopic, Producer

PARTITIONS = 4


def _fetches(port: int) -> float:
    """Fetch requests a broker answered so far (its metrics endpoint)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(sample.value for family in text_string_to_metric_families(text)
               for sample in family.samples
               if sample.name == "pyq_requests_total" and sample.labels.get("api") == "Fetch")


@dataclass
class Write:
    """What one write cost the three brokers."""

    user_s: float
    system_s: float
    fetches: float  # follower fetches answered (no consumer runs)

    @property
    def user_ms_per_fetch(self) -> float:
        return 1000 * self.user_s / max(self.fetches, 1)


def measure(slots: int, records: int, idle_topics: int, rounds: int) -> dict[str, list[Write]]:
    """What each write cost, without and with the idle topics."""
    tmp = Path(tempfile.mkdtemp(prefix="pyq-idle-partitions-"))
    cluster = LocalCluster(tmp / "cluster", 3,
                           overrides={"max.incremental.fetch.session.cache.slots": str(slots),
                                      "metrics.port": "0"}).start()
    try:
        bootstrap = cluster.bootstrap_servers
        ports = cluster.ports
        pids = [b.pid for b in cluster.brokers]
        metrics = [b.metrics_port for b in cluster.brokers]
        assert all(metrics), "every broker's metrics endpoint is on"

        def create(name: str) -> None:
            with Admin({"bootstrap.servers": bootstrap}) as admin:
                admin.create_topics([NewTopic(name, PARTITIONS, 3, {"min.insync.replicas": "2"})])
            wait_in_sync(ports, name, PARTITIONS)

        value = os.urandom(100)

        def snapshot() -> tuple[float, float, float]:
            cpu = [proc_user_system_seconds(pid) for pid in pids]
            return (sum(u for u, _ in cpu), sum(s for _, s in cpu),
                    sum(_fetches(port) for port in metrics if port))

        def write(name: str) -> Write:
            create(name)
            producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                 "batch.size": 900 * 1024, "linger.ms": 20})
            try:
                producer.partitions_for(name)
                time.sleep(0.5)  # the followers' first fetches of the new topic are done
                before = snapshot()
                for i in range(records):
                    producer.send(name, value, partition=i % PARTITIONS)
                producer.flush()
                after = snapshot()
                return Write(*(a - b for a, b in zip(after, before, strict=True)))
            finally:
                producer.close()
                # every write runs beside the same partitions: its own and the idle ones
                with Admin({"bootstrap.servers": bootstrap}) as admin:
                    admin.delete_topics([name])

        out: dict[str, list[Write]] = {"none": [], "idle": []}
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
        writes = measure(slots, args.records, args.idle_topics, args.rounds)
        per_fetch = {k: statistics.median(w.user_ms_per_fetch for w in ws) for k, ws in writes.items()}
        ratio = per_fetch["idle"] / per_fetch["none"]
        ratios[f"idle_vs_none_{name}"] = round(ratio, 3)
        figures[name] = {k: [{"user_s": round(w.user_s, 3), "system_s": round(w.system_s, 3),
                              "fetches": int(w.fetches),
                              "user_ms_per_fetch": round(w.user_ms_per_fetch, 3)} for w in ws]
                         for k, ws in writes.items()}
        for k, ws in writes.items():
            label = "no other topic" if k == "none" else f"{args.idle_topics * PARTITIONS} idle partitions"
            print(f"{name.replace('_', ' ')}, {label}: per write " + "; ".join(
                f"user {w.user_s:.2f} s, system {w.system_s:.2f} s, {w.fetches:.0f} fetches, "
                f"{w.user_ms_per_fetch:.2f} user-ms/fetch" for w in ws), flush=True)
        print(f"{name.replace('_', ' ')}: user CPU per follower fetch, idle / none = {ratio:.2f}x",
              flush=True)
    print(json.dumps({"benchmark": "idle_partitions", "ratios": ratios, "figures": figures}))


if __name__ == "__main__":
    main()
