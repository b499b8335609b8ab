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

Three variants of what happens to the killed broker:

* ``stays-dead``: the controller fences it after its session (3 s) and elects new leaders
  from the ISR; the producer must find them (metadata refresh after the disconnect).
* ``restarts-after-election``: once partition 0 has a new leader it restarts (same port,
  same data), rebuilds its logs and producer state, truncates what it had not replicated
  and catches up as a follower; it must be back in every ISR at the end.
* ``restarts-within-session``: it restarts after half of the sends, before its session
  expired; the controller accepts the new registration without moving its leaderships,
  so it leads partition 0 again (same leader epoch) and the producer goes back to it.

Each value is ``b"<global sequence>:<per-key counter>"``; keys are ``b"key-NNN"``.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from connector.client import Admin, Fetcher, NewTopic, Producer
from connector.client.config import ClientConfig
from connector.client.metadata import Metadata
from connector.client.network_client import NetworkClient
from tests.client.support import metadata_response
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
    ok = len(states) == n and all(leader >= 0 and len(isr) == 3
                                  for leader, isr, _ in states.values())
    return states if ok and all(v == states for v in views) else {}


def read_partition(fetcher: Fetcher, partition: int) -> list[tuple[int, bytes | None, int, int]]:
    """[(offset, key, global sequence, per-key counter)] of the whole partition."""
    start, end = fetcher.offset_bounds(TOPIC, partition)
    out = []
    for r in fetcher.iter_records(TOPIC, partition, start, end):
        assert r.value is not None
        seq, counter = r.value.split(b":")
        out.append((r.offset, r.key, int(seq), int(counter)))
    assert len(out) == end - start, f"partition {partition}: read {len(out)} of [{start}, {end})"
    return out


def replica_bytes(broker, partition: int) -> bytes:
    files = sorted(Path(broker.data_dir, "logs", f"{TOPIC}-{partition}").glob("*.log"))
    return b"".join(f.read_bytes() for f in files)


def leader_of_0(cluster, victim: int) -> int:
    """Partition 0's leader as a broker other than the victim reports it."""
    other = next(b for b in cluster.brokers if b.broker_id != victim)
    return partition_states(other.port, TOPIC)[0][0]


@pytest.mark.parametrize("restart", ["stays-dead", "restarts-after-election",
                                     "restarts-within-session"])
def test_idempotent_producer_survives_leader_kill(cluster_factory, restart):
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
    killed_at = restarted_at = 0.0
    restarter_errors: list[BaseException] = []

    def restart_after_election() -> None:
        nonlocal restarted_at
        try:
            wait_for(lambda: leader_of_0(cluster, victim) not in (-1, victim), timeout=30,
                     what="a new leader for partition 0")
            cluster.broker(victim).start()  # same port, same data directory
            restarted_at = time.monotonic()
        except BaseException as e:  # reported by the test thread
            restarter_errors.append(e)

    restarter = threading.Thread(target=restart_after_election, daemon=True)
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
                if restart == "restarts-after-election":
                    restarter.start()
            elif i == TOTAL // 2 and restart == "restarts-within-session":
                cluster.broker(victim).start()  # same port, same data directory
                restarted_at = time.monotonic()
        producer.flush(timeout=180)
    finally:
        producer.close(timeout=30)
    elapsed = time.monotonic() - t0
    if restarter.ident is not None:  # started
        restarter.join(60)
    assert not restarter_errors, restarter_errors

    acked: dict[int, tuple[int, int]] = {}  # global sequence -> (partition, offset)
    failures: Counter[str] = Counter()
    for i, f in enumerate(futures):
        error = f.exception(timeout=0)
        if error is None:
            md = f.result(timeout=0)
            acked[i] = (md.partition, md.offset)
        else:
            failures[type(error).__name__] += 1

    if restart == "stays-dead":
        live = [b for b in cluster.brokers if b.broker_id != victim]
        wait_for(lambda: leader_of_0(cluster, victim) not in (-1, victim), timeout=30,
                 what="a new leader for partition 0")
    else:
        live = list(cluster.brokers)
        wait_for(lambda: fully_replicated(cluster, TOPIC, PARTITIONS), timeout=60,
                 what="the restarted broker back in every ISR")
    leader_now = leader_of_0(cluster, victim)

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

    restarted = f", restarted {restarted_at - killed_at:.1f} s later" if restarted_at else ""
    print(f"\n[{restart}] leader of partition 0 (broker {victim}) killed after "
          f"{TOTAL // 4 + 1:,} sends, {killed_at - t0:.1f} s in{restarted}; partition 0 now "
          f"led by broker {leader_now}; {elapsed:.1f} s until every send was acknowledged")
    print(f"sent {TOTAL:,}: acked {len(acked):,}, failed {sum(failures.values()):,} "
          f"{dict(failures)}; read {len(records):,}, duplicates {len(duplicates):,}, "
          f"lost {len(lost):,}, misplaced {len(misplaced):,}, order breaks {len(order_breaks):,}")

    assert not lost, f"{len(lost)} acknowledged records are missing, e.g. {sorted(lost)[:5]}"
    assert not duplicates, (f"{len(duplicates)} records written more than once, e.g. "
                            f"{sorted(duplicates.items())[:5]}")
    assert not misplaced, (f"{len(misplaced)} records are not at their acknowledged offset, "
                           f"e.g. {[(s, acked[s], where[s]) for s in misplaced[:5]]}")
    assert not order_breaks, (f"per-key order broken {len(order_breaks)} times, "
                              f"e.g. {order_breaks[:5]}")
    assert all(len(ps) == 1 for ps in key_partitions.values())
    assert len(key_partitions) == KEYS
    assert not failures, f"sends failed despite retries: {dict(failures)}"
    assert len(acked) == TOTAL
    assert len(records) == TOTAL

    # Every live replica holds the same bytes (nothing more is produced; the followers
    # reach the leader's end in their own fetch round: read while they run until all
    # agree, then again once stopped).
    wait_for(lambda: all(len({replica_bytes(b, p) for b in live}) == 1 for p in range(PARTITIONS)),
             what="every live replica holding the same bytes")
    for b in live:
        b.stop()
    for p in range(PARTITIONS):
        contents = {b.broker_id: replica_bytes(b, p) for b in live}
        sizes = {broker_id: len(c) for broker_id, c in contents.items()}
        assert len(set(contents.values())) == 1, f"partition {p}: replicas differ, sizes {sizes}"


# ---- the client fix this test led to ------------------------------------------------------
def _client_with_fresh_metadata() -> tuple[NetworkClient, Metadata]:
    cfg = ClientConfig(bootstrap_servers=(("127.0.0.1", 9),), reconnect_backoff_ms=10,
                       reconnect_backoff_max_ms=10)
    metadata = Metadata(cfg)
    client = NetworkClient(cfg, metadata)
    metadata.update(metadata_response({("t", 0): 0}), client.now())  # fresh: no refresh due
    assert not metadata.update_requested()
    return client, metadata


def _poll_until(client: NetworkClient, condition, timeout_ms: float = 10_000) -> None:
    deadline = client.now() + timeout_ms
    while not condition():
        assert client.now() < deadline, "condition not reached"
        client.poll(20, client.now())


def test_a_refused_connect_requests_a_metadata_refresh():
    """The leader's node refuses connections (it was killed): the producer drains nothing
    for a node that is not ready, so only the failed connect can ask for the metadata
    that names the new leader (before the fix: not until metadata.max.age.ms, 5 min)."""
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]  # closed below: nothing listens there any more
    client, metadata = _client_with_fresh_metadata()
    try:
        client.add_node(7, "127.0.0.1", port)
        _poll_until(client, lambda: not client.ready(7, client.now())
                    and client.connection_failed(7))
        assert metadata.update_requested()
    finally:
        client.close()


def test_a_lost_connection_requests_a_metadata_refresh(broker_factory):
    broker = broker_factory()
    client, metadata = _client_with_fresh_metadata()
    try:
        client.add_node(7, "127.0.0.1", broker.port)
        _poll_until(client, lambda: client.ready(7, client.now()))
        metadata.update(metadata_response({("t", 0): 0}), client.now())
        assert not metadata.update_requested()
        broker.kill()
        _poll_until(client, lambda: not client.is_ready(7))
        assert metadata.update_requested()
    finally:
        client.close()
