"""Our idempotent producer across a leader failover on a 3-broker cluster of real processes.

100,000 keyed records (acks=all, enable.idempotence) go to a topic with replication
factor 3, min.insync.replicas 2 and 4 partitions. After a quarter of the sends the leader
of partition 0 is killed with SIGKILL while batches are in flight; the producer's retries
must carry every send through the election. Reading every partition back with our
Fetcher, each acknowledged record must be in the log exactly once, at the offset its
acknowledgement named, with no duplicate of anything (idempotence is on, and the brokers
de-duplicate by producer id, epoch and sequence), and each key's records must be in the
order they were sent. Finally the live replicas of every partition must hold the same
bytes.

Two variants: the killed broker stays dead, or it restarts halfway through the sends
(rebuilding its logs and producer state, truncating what it had not replicated, and
catching up while the producer keeps writing) and must be back in every ISR at the end.

Each value is ``b"<global sequence>:<per-key counter>"``; keys are ``b"key-NNN"``.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from connector.client import Admin, Fetcher, NewTopic, Producer
from tests.wire import partition_states, wait_for

pytestmark = pytest.mark.integration

TOPIC = "failover"
PARTITIONS = 4
TOTAL = 100_000
KEYS = 300
FAST = {"replica.lag.time.max.ms": "2000", "log.retention.check.interval.ms": "60000"}


def fully_replicated(cluster, topic: str, n: int) -> dict:
    """Every live broker reports all n partitions led, with 3 replicas in sync (same view)."""
    views = [partition_states(b.port, topic) for b in cluster.brokers if b.proc.poll() is None]
    states = views[0]
    ok = len(states) == n and all(leader >= 0 and len(isr) == 3 for leader, isr, _ in states.values())
    return states if ok and all(v == states for v in views) else {}


def read_partition(fetcher: Fetcher, partition: int) -> list[tuple[int, bytes, int, int]]:
    """[(offset, key, global sequence, per-key counter)] of the whole partition."""
    start, end = fetcher.offset_bounds(TOPIC, partition)
    out = []
    for r in fetcher.iter_records(TOPIC, partition, start, end):
        seq, counter = r.value.split(b":")
        out.append((r.offset, r.key, int(seq), int(counter)))
    assert len(out) == end - start, f"partition {partition}: read {len(out)} of [{start}, {end})"
    return out


def replica_bytes(broker, partition: int) -> bytes:
    files = sorted(Path(broker.data_dir, "logs", f"{TOPIC}-{partition}").glob("*.log"))
    return b"".join(f.read_bytes() for f in files)


@pytest.mark.parametrize("restart_killed", [False, True], ids=["killed-stays-dead", "killed-restarts"])
def test_idempotent_producer_survives_leader_kill(cluster_factory, restart_killed):
    cluster = cluster_factory(3, overrides=FAST, session_timeout_ms=3000)
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})])
    states = wait_for(lambda: fully_replicated(cluster, TOPIC, PARTITIONS), timeout=30,
                      what="all partitions with 3 replicas in sync")
    victim = states[0][0]

    producer = Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                        enable_idempotence=True, linger_ms=5, batch_size=16 * 1024,
                        request_timeout_ms=10_000, delivery_timeout_ms=120_000,
                        retry_backoff_ms=100)
    counters = [0] * KEYS
    futures = []
    killed_at = 0.0
    t0 = time.monotonic()
    try:
        producer.partitions_for(TOPIC)
        for i in range(TOTAL):
            k = (i * 7919) % KEYS
            counters[k] += 1
            futures.append(producer.send(TOPIC, b"%d:%d" % (i, counters[k]), key=b"key-%03d" % k))
            if i == TOTAL // 4:  # batches of every partition are queued and in flight now
                cluster.broker(victim).kill()
                killed_at = time.monotonic()
        producer.flush(timeout=180)
    finally:
        producer.close(timeout=30)
    elapsed = time.monotonic() - t0

    acked: dict[int, tuple[int, int]] = {}  # global sequence -> (partition, offset)
    failures: Counter[str] = Counter()
    for i, f in enumerate(futures):
        error = f.exception(timeout=0)
        if error is None:
            md = f.result(timeout=0)
            acked[i] = (md.partition, md.offset)
        else:
            failures[type(error).__name__] += 1

    survivors = [b for b in cluster.brokers if b.broker_id != victim]
    new_leader = wait_for(
        lambda: partition_states(survivors[0].port, TOPIC)[0][0] not in (-1, victim) and
        partition_states(survivors[0].port, TOPIC)[0][0], what="a new leader for partition 0")
    live = list(cluster.brokers) if restart_killed else survivors
    if restart_killed:
        wait_for(lambda: fully_replicated(cluster, TOPIC, PARTITIONS), timeout=60,
                 what="the restarted broker back in every ISR")

    records: list[tuple[int, int, bytes, int, int]] = []  # (partition, offset, key, seq, counter)
    bootstrap = ",".join(b.bootstrap_servers for b in live)
    with Fetcher(bootstrap_servers=bootstrap) as fetcher:
        for p in range(PARTITIONS):
            records += [(p, *r) for r in read_partition(fetcher, p)]

    seen = Counter(seq for _, _, _, seq, _ in records)
    duplicates = {seq: n for seq, n in seen.items() if n > 1}
    lost = [seq for seq in acked if seq not in seen]
    where = {seq: (p, off) for p, off, _, seq, _ in records}
    misplaced = [seq for seq, at in acked.items() if seq in where and where[seq] != at]
    order_breaks = []
    last: dict[tuple[int, bytes], tuple[int, int]] = {}  # (partition, key) -> (offset, counter)
    key_partitions: dict[bytes, set[int]] = {}
    for p, off, key, _seq, counter in sorted(records):
        key_partitions.setdefault(key, set()).add(p)
        prev = last.get((p, key))
        if prev is not None and counter <= prev[1]:
            order_breaks.append((p, key, prev, (off, counter)))
        last[(p, key)] = (off, counter)

    print(f"\nleader of partition 0 (broker {victim}) killed after {TOTAL // 4 + 1:,} sends, "
          f"{killed_at - t0:.1f} s in; partition 0 now led by broker {new_leader}; "
          f"{elapsed:.1f} s for all sends")
    print(f"sent {TOTAL:,}: acked {len(acked):,}, failed {sum(failures.values()):,} "
          f"{dict(failures)}; read {len(records):,}, duplicates {len(duplicates):,}, "
          f"lost {len(lost):,}, misplaced {len(misplaced):,}, order breaks {len(order_breaks):,}")

    assert not lost, f"{len(lost)} acknowledged records are missing, e.g. {sorted(lost)[:5]}"
    assert not duplicates, (f"{len(duplicates)} records written more than once, e.g. "
                            f"{sorted(duplicates.items())[:5]}")
    assert not misplaced, (f"{len(misplaced)} records are not at their acknowledged offset, "
                           f"e.g. {[(s, acked[s], where[s]) for s in misplaced[:5]]}")
    assert not order_breaks, f"per-key order broken {len(order_breaks)} times, e.g. {order_breaks[:5]}"
    assert all(len(ps) == 1 for ps in key_partitions.values())
    assert len(key_partitions) == KEYS
    assert not failures, f"sends failed despite retries: {dict(failures)}"
    assert len(acked) == TOTAL
    assert len(records) == TOTAL

    # Every live replica holds the same bytes (nothing more is produced: one replica
    # fetch round, 500 ms long polls, lets every follower reach the leader's end).
    time.sleep(1.5)
    for b in live:
        b.stop()
    for p in range(PARTITIONS):
        contents = {b.broker_id: replica_bytes(b, p) for b in live}
        sizes = {broker_id: len(c) for broker_id, c in contents.items()}
        assert len(set(contents.values())) == 1, f"partition {p}: replicas differ, sizes {sizes}"
