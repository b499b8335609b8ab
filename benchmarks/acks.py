"""acks=all vs acks=1 on a 3-broker cluster of real processes: what replication costs.

What is measured (one run, everything on 127.0.0.1):

* **cluster**: :class:`broker_sim.cluster.LocalCluster` starts a controller and 3 brokers,
  each its own OS process (``python -m broker_sim``), with fresh data directories.
* **topics**: every phase gets a fresh topic (so both modes start from an empty log; it
  is deleted after the phase, so every phase runs on the same cluster state) of
  ``--partitions`` partitions (4), replication factor 3 and ``min.insync.replicas=2``,
  created with kafka-python's ``KafkaAdminClient``. Before the phase starts, the script
  polls each broker's Metadata (our own wire codec, one connection per broker) until
  every broker reports every partition with a leader and all 3 replicas in sync, all
  brokers agreeing. The phase therefore runs with the full ISR: an acks=all append is
  acknowledged only once both followers have fetched it and the leader has seen their new
  log end offsets (their next fetch), i.e. the high watermark passed it.
* **load** (identical in both modes, only ``acks`` differs): a fresh kafka-python 3
  ``KafkaProducer`` per phase (``enable_idempotence=False``, no compression,
  ``linger_ms=5``, ``batch_size=64 KiB``, default 5 requests in flight per connection)
  sends ``--records`` records (default 150,000) of 100 random bytes, no key, partition
  ``i % partitions`` (round-robin, so every partition and hence every leader gets the
  same share). The producer connects and loads the topic metadata before the clock starts.
* **throughput** = records / wall seconds from the first ``send()`` to the return of
  ``flush()`` (every record acknowledged).
* **latency** per record = ``time.perf_counter()`` in the future's callback (run by
  kafka-python's I/O thread when the produce response arrives) minus
  ``time.perf_counter()`` just before that record's ``send()``. The load is open-loop
  (send as fast as the client can; ``send()`` only blocks if the 32 MiB buffer fills), so
  the latency includes the time a record waits in the producer's accumulator behind
  earlier batches, not only the broker round trip: it is the latency a producer that
  pushes as hard as it can sees. p50 and p99 are order statistics over all N records.
  Any failed send is counted and reported (and fails the run).
* **rounds**: the machine is small (2 cores for 1 controller + 3 brokers + the client)
  and shared, so the modes are interleaved ``acks=1, acks=all, acks=1, acks=all, ...``
  (3 rounds by default, ``--rounds``) and each figure (throughput, p50, p99) is the median
  over the rounds for that mode, taken separately per figure (for an even number of
  rounds: the mean of the middle two). The ratios are ratios of those medians.
  Per-round values are in the JSON.
* **diagnostics** (per phase, in the JSON): kafka-python's own producer metrics over the
  whole phase (``record-queue-time-avg/max``: how long batches waited in the accumulator;
  ``request-latency-avg/max``: produce request round trips, which for acks=all include
  the replication to both followers; records per request), and an ISR monitor thread
  that polls one broker's Metadata every 250 ms and records the smallest ISR and any
  leader change seen during the phase (an ISR shrink or a failover would explain a tail).
* **CPU**: utime + stime of each broker process (``/proc/<pid>/stat``) and of this
  process (``time.process_time()``, includes kafka-python's I/O thread) per phase, as a
  share of the wall time (1.0 = one core busy the whole phase).

Ratios (targets: throughput_all_vs_1 >= 0.5, p99_all_vs_1 <= 3)::

    throughput_all_vs_1 = median acks=all throughput / median acks=1 throughput
    p99_all_vs_1        = median acks=all p99 latency / median acks=1 p99 latency

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "acks", "ratios": {...}, "figures": {...}}
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks._cluster import partition_states, wait_in_sync
from benchmarks._proc import proc_cpu_seconds

VALUE_BYTES = 100
MIN_ISR = "2"


# ---- helpers ------------------------------------------------------------------------------


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="bench-acks-admin")
    try:
        admin.create_topics([NewTopic(topic, partitions, 3, topic_configs={"min.insync.replicas": MIN_ISR})])
    finally:
        admin.close()


class IsrMonitor(threading.Thread):
    """Polls one broker's Metadata for ``topic`` every 250 ms during a phase: the smallest
    ISR seen and how many leader changes (a shrink or a failover would explain a tail)."""

    def __init__(self, port: int, topic: str) -> None:
        super().__init__(name="isr-monitor", daemon=True)
        self.port, self.topic = port, topic
        self.min_isr_size = 3
        self.leader_changes = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        leaders: dict[int, int] | None = None
        while not self._stop_event.wait(0.25):
            try:
                states = partition_states(self.port, self.topic)
            except (OSError, ConnectionError):
                continue
            now = {p: leader for p, (leader, _) in states.items()}
            if leaders is not None:
                self.leader_changes += sum(1 for p, leader in now.items() if leaders.get(p) != leader)
            leaders = now
            for _, isr in states.values():
                self.min_isr_size = min(self.min_isr_size, len(isr))

    def stop(self) -> None:
        self._stop_event.set()
        self.join(5)


def _num(v: Any, scale: float = 1.0) -> float | None:
    return round(float(v) * scale, 3) if isinstance(v, (int, float)) and v == v else None


def delete_topic(cluster: Any, topic: str, timeout: float = 60.0) -> None:
    """Delete ``topic`` and wait until no broker knows it any more, so that every phase
    starts with the same cluster (followers fetch all their partitions from a leader in
    one request, so idle topics left behind would make later phases' round trips costlier)."""
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="bench-acks-admin")
    try:
        admin.delete_topics([topic])
    finally:
        admin.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if not any(partition_states(b.port, topic) for b in cluster.brokers):
                return
        except (OSError, ConnectionError):
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{topic}: still known to a broker {timeout}s after its deletion")


def quantile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


# ---- one phase ----------------------------------------------------------------------------
def run_phase(cluster: Any, topic: str, acks: int | str, args: argparse.Namespace) -> dict:
    from kafka import KafkaProducer

    create_topic(cluster.bootstrap_servers, topic, args.partitions)
    states = wait_in_sync(cluster.ports, topic, args.partitions)
    n, parts = args.records, args.partitions
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers, acks=acks, enable_idempotence=False,
        compression_type=None, linger_ms=args.linger_ms, batch_size=args.batch_size,
        request_timeout_ms=30_000, delivery_timeout_ms=300_000, client_id=f"bench-acks-{acks}",
        metrics_sample_window_ms=3_600_000)
    latencies: list[float] = []
    errors: list[BaseException] = []
    try:
        if not producer.partitions_for(topic):
            raise RuntimeError(f"no metadata for {topic}")
        value = os.urandom(VALUE_BYTES)
        send, perf, record, failed = producer.send, time.perf_counter, latencies.append, errors.append

        def acked(t0: float, _metadata: Any) -> None:
            record(perf() - t0)

        monitor = IsrMonitor(cluster.brokers[0].port, topic)
        monitor.start()
        pids = [b.pid for b in cluster.brokers]
        cpu0 = [proc_cpu_seconds(p) for p in pids]
        client0 = time.process_time()
        start = perf()
        for i in range(n):
            t0 = perf()
            send(topic, value, partition=i % parts).add_callback(partial(acked, t0)).add_errback(failed)
        producer.flush()
        wall = perf() - start
        client_cpu = time.process_time() - client0
        broker_cpu = [proc_cpu_seconds(p) - c for p, c in zip(pids, cpu0, strict=True)]
        monitor.stop()
        metrics = producer.metrics().get("producer-metrics", {})
    finally:
        producer.close()
    if errors or len(latencies) != n:
        raise RuntimeError(f"acks={acks}: {len(errors)} failed sends ({errors[:3]!r}), "
                           f"{len(latencies)} of {n} acknowledged")
    latencies.sort()
    return {
        "acks": str(acks),
        "topic": topic,
        "seconds": round(wall, 3),
        "records_s": round(n / wall, 1),
        "p50_ms": round(quantile(latencies, 0.50) * 1000, 3),
        "p99_ms": round(quantile(latencies, 0.99) * 1000, 3),
        "max_ms": round(latencies[-1] * 1000, 3),
        "leaders": {str(p): leader for p, (leader, _) in sorted(states.items())},
        "min_isr_size_seen": monitor.min_isr_size,
        "leader_changes_seen": monitor.leader_changes,
        # kafka-python's own view: time batches waited in the accumulator vs produce
        # request round trips (send to response, incl. replication for acks=all).
        # (kafka-python records the queue time in seconds, the request latency in ms.)
        "producer_metrics": {
            "record_queue_time_avg_ms": _num(metrics.get("record-queue-time-avg"), 1000),
            "record_queue_time_max_ms": _num(metrics.get("record-queue-time-max"), 1000),
            "request_latency_avg_ms": _num(metrics.get("request-latency-avg")),
            "request_latency_max_ms": _num(metrics.get("request-latency-max")),
            "records_per_request_avg": _num(metrics.get("records-per-request-avg")),
            "batch_size_avg": _num(metrics.get("batch-size-avg")),
            "record_retry_rate": _num(metrics.get("record-retry-rate")),
        },
        "broker_cpu_share": [round(c / wall, 3) for c in broker_cpu],
        "client_cpu_share": round(client_cpu / wall, 3),
    }


def line(r: dict) -> str:
    m = r["producer_metrics"]
    return (f"acks={r['acks']:>3s}  {r['records_s']:9,.0f} rec/s ({r['seconds']:6.2f} s)   "
            f"p50 {r['p50_ms']:8.1f} ms   p99 {r['p99_ms']:8.1f} ms   max {r['max_ms']:8.1f} ms   "
            f"broker CPU {'/'.join(f'{c:.2f}' for c in r['broker_cpu_share'])}   "
            f"client CPU {r['client_cpu_share']:.2f}   min ISR {r['min_isr_size_seen']}\n"
            f"          kafka-python: accumulator queue time avg {m['record_queue_time_avg_ms']} / max "
            f"{m['record_queue_time_max_ms']} ms, request latency avg {m['request_latency_avg_ms']} / max "
            f"{m['request_latency_max_ms']} ms, {m['records_per_request_avg']} records/request")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=150_000, help="records per phase")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of (acks=1, acks=all)")
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64 * 1024)
    args = parser.parse_args()

    import kafka.record.util as record_util

    from broker_sim.cluster import LocalCluster

    crc = "crc32c package (native)" if getattr(record_util, "crc32c_c", None) else "pure-python"
    print(f"workload: {args.records:,} records x {VALUE_BYTES} B per phase, {args.partitions} partitions, "
          f"RF 3, min.insync.replicas {MIN_ISR}, linger {args.linger_ms} ms, batch {args.batch_size} B, "
          f"{args.rounds} rounds of acks=1 then acks=all; {os.cpu_count()} CPUs; kafka-python CRC: {crc}")
    tmp = Path(tempfile.mkdtemp(prefix="pyq-bench-acks-"))
    cluster = LocalCluster(tmp, brokers=3)
    results: dict[str, list[dict]] = {"1": [], "all": []}
    try:
        cluster.start()
        print(f"cluster: {cluster.bootstrap_servers} (broker pids "
              f"{', '.join(str(b.pid) for b in cluster.brokers)})")
        for rnd in range(args.rounds):
            for acks, mode in ((1, "1"), ("all", "all")):
                r = run_phase(cluster, f"bench-acks-{mode}-r{rnd}", acks, args)
                delete_topic(cluster, r["topic"])
                results[mode].append(r)
                print(f"round {rnd + 1}: {line(r)}", flush=True)
    finally:
        cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    def med(mode: str, key: str) -> float:
        return statistics.median(r[key] for r in results[mode])

    figures: dict[str, Any] = {}
    for mode in ("1", "all"):
        figures[f"acks_{mode}"] = {"records_s": round(med(mode, "records_s"), 1),
                                   "p50_ms": round(med(mode, "p50_ms"), 3),
                                   "p99_ms": round(med(mode, "p99_ms"), 3)}
    ratios = {
        "throughput_all_vs_1": round(figures["acks_all"]["records_s"] / figures["acks_1"]["records_s"], 4),
        "p99_all_vs_1": round(figures["acks_all"]["p99_ms"] / figures["acks_1"]["p99_ms"], 4),
    }
    a1, aall = figures["acks_1"], figures["acks_all"]
    print(f"median acks=1:   {a1['records_s']:9,.0f} rec/s, p50 {a1['p50_ms']:.1f} ms, p99 {a1['p99_ms']:.1f} ms")
    print(f"median acks=all: {aall['records_s']:9,.0f} rec/s, p50 {aall['p50_ms']:.1f} ms, "
          f"p99 {aall['p99_ms']:.1f} ms")
    print(f"acks=all vs acks=1: throughput x{ratios['throughput_all_vs_1']:.3f} (target >= 0.5), "
          f"p99 x{ratios['p99_all_vs_1']:.3f} (target <= 3)")
    figures.update({
        "records": args.records,
        "value_bytes": VALUE_BYTES,
        "partitions": args.partitions,
        "replication_factor": 3,
        "min_insync_replicas": int(MIN_ISR),
        "linger_ms": args.linger_ms,
        "batch_size": args.batch_size,
        "rounds": {mode: results[mode] for mode in ("1", "all")},
        "cpus": os.cpu_count(),
        "kafka_crc": crc,
        "python": sys.version.split()[0],
    })
    print(json.dumps({"benchmark": "acks", "ratios": ratios, "figures": figures}))


if __name__ == "__main__":
    main()
