"""``make demo``: start a local cluster, run a pipeline end to end, report, stop.

A controller and three broker processes start; kafka-python (a client we did not write)
creates a topic replicated three times, produces keyed records with headers at
acks=all, consumes them back, commits the group's offsets, and the demo checks that every
record arrived exactly once and in order per partition. Exit code 0 only if the counts
reconcile. (The Spark pipeline joins this demo when the connector lands.)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from .cluster import LocalCluster

RECORDS = 20_000
PARTITIONS = 4
TOPIC = "demo-events"
GROUP = "demo-group"


def main() -> int:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic

    with tempfile.TemporaryDirectory(prefix="pyq-demo-") as tmp:
        cluster = LocalCluster(Path(tmp), brokers=3).start()
        bootstrap = cluster.bootstrap_servers
        print(f"started controller pid {cluster.controller.pid} and brokers "
              f"{[b.pid for b in cluster.brokers]} on {bootstrap}")
        try:
            admin = KafkaAdminClient(bootstrap_servers=bootstrap)
            admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])
            admin.close()
            print(f"created topic {TOPIC} with {PARTITIONS} partitions, replication factor 3")

            t0 = time.perf_counter()
            producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                                     compression_type="lz4", enable_idempotence=False, retries=10)
            for i in range(RECORDS):
                producer.send(TOPIC, key=f"user-{i % 100}".encode(),
                              value=f'{{"event": {i}, "page": "/p/{i % 37}"}}'.encode(),
                              headers=[("source", b"demo")])
            producer.flush()
            producer.close()
            t1 = time.perf_counter()
            print(f"produced {RECORDS} records (acks=all, lz4) in {t1 - t0:.2f}s")

            consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP,
                                     enable_auto_commit=False, consumer_timeout_ms=5000)
            tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
            consumer.assign(tps)
            consumer.seek_to_beginning()
            seen, per_partition = set(), {p: -1 for p in range(PARTITIONS)}
            in_order = True
            while len(seen) < RECORDS:
                batch = consumer.poll(timeout_ms=2000)
                if not batch:
                    break
                for tp, recs in batch.items():
                    for r in recs:
                        in_order &= r.offset == per_partition[tp.partition] + 1
                        per_partition[tp.partition] = r.offset
                        seen.add(r.value)
            consumer.commit()
            committed = {tp.partition: consumer.committed(tp) for tp in tps}
            consumer.close()
            t2 = time.perf_counter()
            print(f"consumed {len(seen)} distinct records in {t2 - t1:.2f}s; "
                  f"per-partition order intact: {in_order}")
            print(f"committed offsets of {GROUP}: {committed}")
        finally:
            cluster.stop()
            print("stopped the cluster")
    ok = len(seen) == RECORDS and in_order and sum(v for v in committed.values()) == RECORDS
    print("demo OK: counts reconcile" if ok else "demo FAILED: counts do not reconcile")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
