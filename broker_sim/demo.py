"""``make demo``: start a local broker process, run a pipeline end to end, report, stop.

Until the Spark connector lands this pipeline is plain Kafka clients: kafka-python (a
client we did not write) creates a topic, produces keyed records with headers across
partitions, consumes them back, commits the group's offsets, and the demo checks that
every record arrived exactly once and in order per partition. Exit code 0 only if the
counts reconcile.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from .process import BrokerProcess

RECORDS = 20_000
PARTITIONS = 4
TOPIC = "demo-events"
GROUP = "demo-group"


def main() -> int:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic

    with tempfile.TemporaryDirectory(prefix="pyq-demo-") as tmp:
        broker = BrokerProcess(Path(tmp) / "broker0").start()
        bootstrap = broker.bootstrap_servers
        print(f"started broker pid {broker.pid} on {bootstrap}")
        try:
            admin = KafkaAdminClient(bootstrap_servers=bootstrap)
            admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
            admin.close()
            print(f"created topic {TOPIC} with {PARTITIONS} partitions")

            t0 = time.perf_counter()
            producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                                     compression_type="lz4")
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
            broker.stop()
            print(f"stopped broker pid {broker.pid}")
    ok = len(seen) == RECORDS and in_order and sum(v for v in committed.values()) == RECORDS
    print("demo OK: counts reconcile" if ok else "demo FAILED: counts do not reconcile")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
