"""Client benchmark: pyq's Producer and Fetcher against kafka-python's, side by side.

What is measured (one run, one cluster on 127.0.0.1, the clients in this process):

* **cluster**: a local 3-broker cluster of separate processes
  (:class:`broker_sim.cluster.LocalCluster`: one controller and three
  ``python -m broker_sim`` brokers), fresh data directories. Every topic has one
  partition, replication factor 3 and ``min.insync.replicas=2``; the benchmark waits
  until all three replicas of every topic are in sync before it starts, so acks=all
  means "written by the leader and fetched by both followers". One topic per producer run.
* **produce**: ``--records`` records of ``--value-bytes`` (100) random bytes, no key, with
  the same settings for both producers: acks=all, linger 5 ms, batch 64 KiB, no
  compression, idempotence off for both (so both do exactly the same work; pyq's default
  with acks=all would be on). Each producer connects and loads the topic metadata before
  the clock starts; the clock runs from the first ``send()`` to the return of ``flush()``,
  i.e. until every record is acknowledged. Before the real run, kafka-python produces a
  50,000-record sample: if, at 1/1.5 of the sample's rate (kafka-python slows down over a
  long run), it would need more than 60 s for ``--records``, the run uses 300,000 records
  instead (the N used is printed; 1,000,000 records on this 2-CPU machine took
  kafka-python 69-77 s per run).
* **fetch**: the clients read the *same* records (the topic kafka-python wrote) from
  offset 0 to the end with their default fetch sizes (Kafka's: 1 MiB per partition,
  50 MiB per fetch), CRC checks on. Like with like: kafka-python's ``KafkaConsumer``
  (``assign`` + ``seek``, native CRC-32C) returns a record object per record from
  ``poll()``, and so does pyq's record path, ``Fetcher.iter_records`` (a
  :class:`~broker_sim.protocol.records.Record` per record): the headline
  ``fetcher_vs_kafka_python`` compares these two. pyq's columnar path,
  ``Fetcher.iter_arrow`` (what the Spark source uses: ``pyarrow.RecordBatch``es, no Python
  object per record), is a different kind of consumer and gets its own ratio,
  ``fetcher_arrow_vs_kafka_python``. Each reader touches every value (its length), connects
  before the clock starts, and the clock stops when the last record is in hand. All read
  from the partition's leader (consumers do not read from followers here). Each reader's
  record count and total value bytes are checked against what was written.

Each producer runs ``--produce-runs`` times (2, each into a fresh topic) and each fetcher
``--fetch-runs`` times (3), alternating between the two clients so that other load on a
shared machine hits both alike; the run with the median wall time counts (of two runs,
the faster one, by the same rule for both clients).

records/s = records / wall seconds. Ratios are pyq / kafka-python (higher is better for
pyq; the target is >= 2 for the producer and the record fetcher). CPU: this process's
``process_time`` (all threads, including both producers' I/O threads) and the three
brokers' utime + stime summed (leader and followers: replication is part of the cost), per
phase; the ratio of client CPU seconds is printed too, as a figure that other load on the
machine disturbs less than wall time.

Where the time goes (cProfile, 500,000 records of 100 B from one partition on this
machine; profiled times are inflated, the shares are what matters):

* **kafka-python fetch**: 7.9 s profiled (~2.4 s of CPU unprofiled), ~40 Python calls per
  record: ``Fetcher._unpack_records`` 2.4 s itself, ``DefaultRecordBatch._read_msg`` 1.9 s,
  ``decode_varint`` 3.5 million calls 0.9 s, the ``timestamp_type``/``attributes``/
  ``headers`` properties 1.0 s; the network is a few percent.
* **pyq record path**: 1.1 s profiled (~0.6 s unprofiled): ``records.reader._decode``
  0.93 s (one call per batch that walks its records and builds every ``Record``),
  ``iter_records`` 0.08 s, receiving and framing the responses 0.05 s, CRC-32C 0.01 s.
* **pyq columnar path** (~0.11 s unprofiled when its per-record pass was numpy): no
  Python work per record; per response (1 MiB here) one C pass finds every record's fields
  and a ``memcpy`` per value fills Arrow's buffer (``RecordScan``; outside this benchmark,
  a 4 MiB response of 100-byte records decodes in 50 ns per record, CRC-32C and Arrow
  assembly included, 13 of them the scan, against 140 ns with the numpy steps), then the receive and CRC-32C (see
  :mod:`connector.client.columnar`).
* **producers** (200,000 records, the calling thread): kafka-python 9.8 s profiled —
  ``KafkaProducer.send`` 1.1 s itself, ``RecordAccumulator.append`` 1.0 s,
  ``DefaultRecordBatchBuilder.append`` 1.1 s, ``encode_varint`` 1 million calls 0.5 s, the
  partitioner and metadata lookups 1.4 s, futures 1.0 s; pyq 2.1 s — ``Producer.send``
  0.47 s itself, ``RecordBatchBuilder.append`` 0.39 s, ``RecordAccumulator.append`` 0.30 s,
  ``ProducerBatch.try_append`` 0.24 s. Both build record batches one ``send()`` at a time
  with a future per record, the same work: the producer ratio is like for like.

Three runs on 2026-11-27: ``producer_vs_kafka_python`` 6.474, 5.994, 5.925;
``fetcher_vs_kafka_python`` 4.171, 4.066, 4.587; ``fetcher_arrow_vs_kafka_python`` 49.9,
51.4, 44.2.

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "client", "ratios": {"producer_vs_kafka_python": ...,
     "fetcher_vs_kafka_python": ..., "fetcher_arrow_vs_kafka_python": ...},
     "figures": {...}}
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._cluster import wait_in_sync
from benchmarks._proc import Timed
from broker_sim.cluster import LocalCluster
from connector.client import (
    Admin,
    Fetcher,
    NewTopic,
    Producer,
    TopicPartition,
)

LINGER_MS = 5
BATCH_BYTES = 64 * 1024
SAMPLE_RECORDS = 50_000
# kafka-python slows down over a long run: on the 3-broker cluster its rate over 1,000,000
# records was ~0.7x the rate of a short sample (20,682 -> 13,016-14,516 records/s), so the
# projection divides the sample rate by this factor.
SUSTAINED_SLOWDOWN = 1.5
MAX_KAFKA_PYTHON_SECONDS = 60.0
REDUCED_RECORDS = 300_000
BROKERS = 3
REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2




class Phase(Timed):
    """Wall time, client CPU and (all brokers') CPU of one timed phase."""

    def __init__(self, name: str, records: int, broker_pids: list[int]) -> None:
        super().__init__(broker_pids)
        self.name = name
        self.records = records

    @property
    def broker_cpu(self) -> float:
        return self.server_cpu

    @property
    def rate(self) -> float:
        return self.records / self.wall

    def line(self) -> str:
        return (f"{self.name:28s} {self.records:>9,} records in {self.wall:7.2f} s = "
                f"{self.rate:>10,.0f} records/s   client CPU {self.client_cpu:6.2f} s   "
                f"brokers' CPU {self.broker_cpu:6.2f} s")

    def figures(self) -> dict[str, float]:
        return {"records_per_s": round(self.rate, 1), "wall_s": round(self.wall, 3),
                "client_cpu_s": round(self.client_cpu, 3),
                "brokers_cpu_s": round(self.broker_cpu, 3)}


# ---- producers --------------------------------------------------------------------------
def kafka_python_produce(bootstrap: str, topic: str, n: int, value: bytes,
                         pids: list[int], name: str = "kafka-python KafkaProducer") -> Phase:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=LINGER_MS,
                             batch_size=BATCH_BYTES, compression_type=None,
                             enable_idempotence=False)
    try:
        producer.partitions_for(topic)
        send = producer.send
        with Phase(name, n, pids) as phase:
            for _ in range(n):
                send(topic, value)
            producer.flush()
    finally:
        producer.close()
    return phase


def pyq_produce(bootstrap: str, topic: str, n: int, value: bytes, pids: list[int]) -> Phase:
    producer = Producer(bootstrap_servers=bootstrap, acks="all", linger_ms=LINGER_MS,
                        batch_size=BATCH_BYTES, compression_type="none",
                        enable_idempotence=False)
    try:
        producer.partitions_for(topic)
        send = producer.send
        with Phase("pyq Producer", n, pids) as phase:
            for _ in range(n):
                send(topic, value)
            producer.flush()
    finally:
        producer.close()
    return phase


# ---- fetchers ---------------------------------------------------------------------------
def kafka_python_fetch(bootstrap: str, topic: str, n: int, value_bytes: int,
                       pids: list[int]) -> Phase:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             enable_auto_commit=False)
    try:
        tp = KTopicPartition(topic, 0)
        consumer.assign([tp])
        stored = consumer.end_offsets([tp])[tp]
        if stored != n:
            raise RuntimeError(f"the broker holds {stored} records of {topic}, expected {n}")
        consumer.seek(tp, 0)
        count = nbytes = 0
        deadline = time.monotonic() + 900
        with Phase("kafka-python KafkaConsumer", n, pids) as phase:
            while count < n:
                for records in consumer.poll(timeout_ms=1000, max_records=100_000).values():
                    count += len(records)
                    for r in records:
                        nbytes += len(r.value)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"kafka-python fetched only {count} of {n} records")
    finally:
        consumer.close()
    check(count, nbytes, n, value_bytes, "kafka-python")
    return phase


def pyq_fetch_arrow(bootstrap: str, topic: str, n: int, value_bytes: int,
                       pids: list[int]) -> Phase:
    with Fetcher(bootstrap_servers=bootstrap) as fetcher:
        if fetcher.offset_bounds(topic, 0) != (0, n):  # also connects before the clock
            raise RuntimeError(f"{topic} does not hold offsets [0, {n})")
        count = nbytes = 0
        with Phase("pyq Fetcher.iter_arrow", n, pids) as phase:
            for batch in fetcher.iter_arrow(topic, 0, 0, n):
                count += batch.num_rows
                _, offsets, _ = batch.column("value").buffers()
                first, last = (int.from_bytes(offsets[i * 4 : i * 4 + 4], "little") for i in (
                    batch.column("value").offset, batch.column("value").offset + batch.num_rows))
                nbytes += last - first
    check(count, nbytes, n, value_bytes, "pyq Fetcher.iter_arrow")
    return phase


def pyq_fetch_records(bootstrap: str, topic: str, n: int, value_bytes: int,
                       pids: list[int]) -> Phase:
    with Fetcher(bootstrap_servers=bootstrap) as fetcher:
        if fetcher.offset_bounds(topic, 0) != (0, n):  # also connects before the clock
            raise RuntimeError(f"{topic} does not hold offsets [0, {n})")
        count = nbytes = 0
        with Phase("pyq Fetcher.iter_records", n, pids) as phase:
            for record in fetcher.iter_records(topic, 0, 0, n):
                count += 1
                nbytes += len(record.value or b"")
    check(count, nbytes, n, value_bytes, "pyq Fetcher.iter_records")
    return phase


def check(count: int, nbytes: int, n: int, value_bytes: int, who: str) -> None:
    if count != n or nbytes != n * value_bytes:
        raise RuntimeError(f"{who} read {count} records / {nbytes} value bytes, "
                           f"expected {n} / {n * value_bytes}")


def end_offset(bootstrap: str, topic: str) -> int:
    with Admin(bootstrap_servers=bootstrap) as admin:
        tp = TopicPartition(topic, 0)
        return admin.list_offsets({tp: "latest"})[tp].offset


def median_phase(phases: list[Phase]) -> Phase:
    """The run with the median wall time (of two runs: the faster, for both clients alike)."""
    ordered = sorted(phases, key=lambda ph: ph.wall)
    return ordered[(len(ordered) - 1) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--produce-runs", type=int, default=2,
                        help="runs of each producer, alternating; the median counts")
    parser.add_argument("--fetch-runs", type=int, default=3,
                        help="runs of each fetcher, alternating; the median counts")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    value = os.urandom(args.value_bytes)

    tmp = Path(tempfile.mkdtemp(prefix="pyq-client-bench-"))
    cluster: LocalCluster | None = None
    runs: dict[str, list[Phase]] = {"kp_produce": [], "pyq_produce": [], "kp_fetch": [],
                                    "pyq_records": [], "pyq_arrow": []}
    try:
        cluster = LocalCluster(tmp / "cluster", BROKERS)
        cluster.start()
        bootstrap = cluster.bootstrap_servers
        pids = [b.pid for b in cluster.brokers]
        print(f"cluster: {BROKERS} broker processes + 1 controller process at {bootstrap}; "
              f"topics with 1 partition, replication factor {REPLICATION_FACTOR}, "
              f"min.insync.replicas {MIN_INSYNC_REPLICAS}; {os.cpu_count()} CPUs shared by "
              f"the brokers and the clients")
        topics = ["sample"] + [f"{who}-{i}" for i in range(args.produce_runs)
                               for who in ("kafka-python", "pyq")]
        with Admin(bootstrap_servers=bootstrap) as admin:
            admin.create_topics([NewTopic(t, 1, REPLICATION_FACTOR,
                                          {"min.insync.replicas": str(MIN_INSYNC_REPLICAS)})
                                 for t in topics])
        for t in topics:
            wait_in_sync(cluster.ports, t, 1, REPLICATION_FACTOR)
        with Admin(bootstrap_servers=bootstrap) as admin:
            leaders = {t: d.partitions[0].leader
                       for t, d in admin.describe_topics(topics).items()}
        print("leaders: " + ", ".join(f"{t} -> broker {b}" for t, b in leaders.items()))

        sample = kafka_python_produce(bootstrap, "sample", SAMPLE_RECORDS, value, pids,
                                      name="kafka-python sample")
        print(sample.line())
        n = args.records
        projected = n / sample.rate * SUSTAINED_SLOWDOWN
        if projected > MAX_KAFKA_PYTHON_SECONDS:
            print(f"kafka-python would need ~{projected:.0f} s for {n:,} records "
                  f"(> {MAX_KAFKA_PYTHON_SECONDS:.0f} s): using {REDUCED_RECORDS:,}")
            n = REDUCED_RECORDS
        print(f"workload: N = {n:,} records x {args.value_bytes} B, acks=all, linger "
              f"{LINGER_MS} ms, batch {BATCH_BYTES // 1024} KiB, no compression, 1 partition "
              f"x {REPLICATION_FACTOR} replicas; "
              f"{args.produce_runs} run(s) per producer, {args.fetch_runs} per fetcher, "
              f"alternating, median reported")

        for i in range(args.produce_runs):
            runs["kp_produce"].append(
                kafka_python_produce(bootstrap, f"kafka-python-{i}", n, value, pids))
            print(runs["kp_produce"][-1].line())
            runs["pyq_produce"].append(pyq_produce(bootstrap, f"pyq-{i}", n, value, pids))
            print(runs["pyq_produce"][-1].line())
        for topic in topics[1:]:
            stored = end_offset(bootstrap, topic)
            if stored != n:
                raise RuntimeError(f"topic {topic} holds {stored} records, expected {n}")

        source = "kafka-python-0"  # both fetchers read the records kafka-python wrote
        for _ in range(args.fetch_runs):
            runs["kp_fetch"].append(
                kafka_python_fetch(bootstrap, source, n, args.value_bytes, pids))
            print(runs["kp_fetch"][-1].line())
            runs["pyq_records"].append(
                pyq_fetch_records(bootstrap, source, n, args.value_bytes, pids))
            print(runs["pyq_records"][-1].line())
            runs["pyq_arrow"].append(pyq_fetch_arrow(bootstrap, source, n, args.value_bytes, pids))
            print(runs["pyq_arrow"][-1].line())
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    kp_produce, our_produce = median_phase(runs["kp_produce"]), median_phase(runs["pyq_produce"])
    kp_fetch = median_phase(runs["kp_fetch"])
    our_records, our_arrow = median_phase(runs["pyq_records"]), median_phase(runs["pyq_arrow"])
    ratios = {
        "producer_vs_kafka_python": round(our_produce.rate / kp_produce.rate, 3),
        "fetcher_vs_kafka_python": round(our_records.rate / kp_fetch.rate, 3),
        "fetcher_arrow_vs_kafka_python": round(our_arrow.rate / kp_fetch.rate, 3),
    }
    print(f"producer (median): pyq {our_produce.rate:,.0f} vs kafka-python "
          f"{kp_produce.rate:,.0f} records/s = {ratios['producer_vs_kafka_python']:.2f}x "
          f"(target >= 2)")
    print(f"fetcher, record objects (median): pyq {our_records.rate:,.0f} vs kafka-python "
          f"{kp_fetch.rate:,.0f} records/s = {ratios['fetcher_vs_kafka_python']:.2f}x "
          f"(target >= 2)")
    print(f"fetcher, pyq columnar (Arrow) vs kafka-python's records (median): "
          f"{our_arrow.rate:,.0f} vs {kp_fetch.rate:,.0f} records/s = "
          f"{ratios['fetcher_arrow_vs_kafka_python']:.2f}x")
    cpu_ratio_produce = (kp_produce.client_cpu / our_produce.client_cpu)
    cpu_ratio_fetch = (kp_fetch.client_cpu / our_records.client_cpu)
    cpu_ratio_arrow = (kp_fetch.client_cpu / our_arrow.client_cpu)
    print(f"client CPU per record, kafka-python / pyq: producer {cpu_ratio_produce:.2f}x, "
          f"fetcher {cpu_ratio_fetch:.2f}x (records), {cpu_ratio_arrow:.2f}x (Arrow) "
          f"(less sensitive to other load on the machine)")
    figures: dict[str, Any] = {
        "records": n, "value_bytes": args.value_bytes, "brokers": BROKERS,
        "replication_factor": REPLICATION_FACTOR, "min_insync_replicas": MIN_INSYNC_REPLICAS,
        "acks": "all", "idempotence": False, "cpus": os.cpu_count(),
        "note": "local 3-broker cluster (separate processes) on the same machine as the "
                "clients; brokers_cpu_s sums leader and followers",
        "kafka_python_producer": kp_produce.figures(), "pyq_producer": our_produce.figures(),
        "kafka_python_fetcher": kp_fetch.figures(), "pyq_fetcher_records": our_records.figures(),
        "pyq_fetcher_arrow": our_arrow.figures(),
        "client_cpu_ratio_producer": round(cpu_ratio_produce, 3),
        "client_cpu_ratio_fetcher": round(cpu_ratio_fetch, 3),
        "client_cpu_ratio_fetcher_arrow": round(cpu_ratio_arrow, 3),
        "runs": {k: [round(ph.rate, 1) for ph in v] for k, v in runs.items() if v},
    }
    print(json.dumps({"benchmark": "client", "ratios": ratios, "figures": figures}))


if __name__ == "__main__":
    main()
