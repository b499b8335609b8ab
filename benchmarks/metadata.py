"""How fast metadata reaches the brokers: a new topic's first write, a leader's successor.

Everything runs on 127.0.0.1 in one run: :class:`broker_sim.cluster.LocalCluster` starts a
controller and 3 brokers, each its own OS process, with fresh data directories and
``broker.session.timeout.ms`` = ``--session-timeout-ms`` (3000; heartbeats every 250 ms).
The client is our own wire codec over blocking sockets, one persistent connection per
broker, opened before any clock starts (a client that already talks to the cluster).
Each measurement is a function of the running cluster returning ``(ratios, figures)``;
:func:`main` runs them in turn and merges both dicts into the JSON line.

**new_topic_ready_vs_produce_rtt** (target <= 5). The reference is the median round trip
of ``--rtt-samples`` (200) sequential acks=all Produce requests (one 100-byte record)
to the leader of an existing topic (3 partitions, replication factor 3, all in sync): an
append, both followers' fetches (parked at the leader, woken by the append), and their
next fetches, which move the high watermark. Then, ``--topics`` (5) times: CreateTopics
(3 partitions, replication factor 3) through broker 0; the clock starts when it returns;
the client asks broker 0's Metadata for partition 0's leader and sends it an acks=all
Produce, again at once after any error (counted); the clock stops when one is
acknowledged. The ratio is the median of those times over the median round trip.

Where the time goes: CreateTopics itself returns only once every live broker acknowledged
the image holding the topic — brokers long-poll the controller (BrokerMetadataFetch), so
the commit reaches all three at once, each applies it (creates its logs, becomes leader or
starts fetching) and acknowledges in its next poll (``create_topics_ms`` in the figures:
that whole exchange; a follower already fetching other partitions from the same leader
aborts its parked fetch to add the new partition at once). After it returns there is
nothing left to learn: the time is one Metadata round trip (``metadata_ms``) plus the first
acks=all write (``first_write_ms``). That write costs a few steady round trips, not one:
the first append to a new log does one-time work on the leader and then on each follower
(the new leader epoch recorded in the epoch checkpoint — written without an fsync, which
would add a millisecond or more per replica — and first-use costs in the broker; about
1 ms more than a later append, measured on a single broker). A follower whose first fetch
reaches the leader before the leader has applied the image is not refused (it would back
off 10 ms, and a write landing in that window would wait for it): its fetch waits at the
leader until the image arrives there.

**leader_change_vs_session_timeout** (target <= 1.2). A topic with one partition,
replication factor 3, ``min.insync.replicas=2``, all in sync. The clock starts just
before the partition leader's ``kill -9``; the client then asks a surviving broker's
Metadata every 10 ms and, once it names another leader, sends that leader an acks=all
Produce (repeated until one is acknowledged); the clock stops at the first acknowledgement.
The ratio is that time over ``broker.session.timeout.ms``.

Where the time goes: almost all of it is the controller noticing the death. A killed
broker sends no more heartbeats, and the controller fences it one session timeout after
its last one: between ``session − heartbeat interval`` and ``session`` after the kill.
Fencing elects the first live ISR member and shrinks the ISR in one commit, which every
broker's parked metadata poll carries back at once; the new leader's followers move
their fetchers to it (a fetch such a fetcher had parked at the new leader for other
partitions is aborted, not waited out).
What remains is the client's 10 ms polling and one acks=all round trip on the new ISR of
two. ``detect_ms`` (the first Metadata naming the successor) and ``write_ms`` (from
then to the acknowledgement) split it in the figures. The killed broker is restarted
afterwards, so later measurements see the full cluster again.

**compaction_vs_append** (target >= 0.5): after the cluster is stopped,
:func:`benchmarks.compaction.measure_compaction` — a broker process of its own with the
cleaner off appends a compacted topic (confluent-kafka, acks=1), then the log cleaner
cleans that broker's log: the cleaner's MB/s over the append MB/s (its docstring says where
the time goes; ``--no-compaction`` skips it).

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "metadata", "ratios": {...}, "figures": {...}}
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks._cluster import wait_in_sync
from broker_sim.cluster import LocalCluster
from broker_sim.network.blocking_client import BlockingConnection
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import NetworkException
from broker_sim.protocol.records import RecordBatchBuilder

Figures = dict[str, object]
Ratios = dict[str, float]


@dataclass
class Bench:
    """The running cluster and one persistent connection per live broker."""

    cluster: LocalCluster
    args: argparse.Namespace
    conns: dict[int, BlockingConnection] = field(default_factory=dict)

    def conn(self, broker_id: int) -> BlockingConnection:
        c = self.conns.get(broker_id)
        if c is None:
            b = self.cluster.broker(broker_id)
            assert b.port is not None
            c = self.conns[broker_id] = BlockingConnection("127.0.0.1", b.port, "bench-metadata")
        return c

    def drop(self, broker_id: int) -> None:
        c = self.conns.pop(broker_id, None)
        if c is not None:
            c.close()

    def ports(self) -> list[int]:
        return [b.port for b in self.cluster.brokers if b.port is not None]

    def close(self) -> None:
        for broker_id in list(self.conns):
            self.drop(broker_id)


def record_batch() -> bytes:
    b = RecordBatchBuilder()
    b.append(int(time.time() * 1000), None, os.urandom(100))
    return b.build()


def create_topic(bench: Bench, via: int, topic: str, partitions: int,
                 configs: dict[str, str] | None = None) -> None:
    r = bench.conn(via).request(ApiKey.CREATE_TOPICS, 4, {
        "topics": [{"name": topic, "num_partitions": partitions, "replication_factor": 3,
                    "assignments": [], "configs": [{"name": k, "value": v}
                                                   for k, v in (configs or {}).items()]}],
        "timeout_ms": 30_000, "validate_only": False})
    if r.topics[0].error_code:
        raise SystemExit(f"CreateTopics {topic}: error {r.topics[0].error_code}")


def leader_of(bench: Bench, via: int, topic: str, partition: int) -> int:
    """The leader ``via``'s Metadata names for the partition; -1 if none (or unknown)."""
    r = bench.conn(via).request(ApiKey.METADATA, 8, {
        "topics": [{"name": topic}], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False})
    t = r.topics[0]
    if t.error_code:
        return -1
    return next((p.leader_id for p in t.partitions if p.partition_index == partition), -1)


def produce(bench: Bench, leader: int, topic: str, partition: int, timeout_ms: int = 10_000) -> int:
    """One acks=all Produce of one record; its error code."""
    r = bench.conn(leader).request(ApiKey.PRODUCE, 8, {
        "transactional_id": None, "acks": -1, "timeout_ms": timeout_ms,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition,
                                                           "records": record_batch()}]}]})
    return int(r.responses[0].partition_responses[0].error_code)


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


# ---- (1) a new topic's first write ------------------------------------------------------
def new_topic_ready(bench: Bench) -> tuple[Ratios, Figures]:
    args = bench.args
    create_topic(bench, 0, "steady", 3)
    states = wait_in_sync(bench.ports(), "steady", 3)
    leader = states[0][0]
    for _ in range(20):  # warm-up
        assert produce(bench, leader, "steady", 0) == 0
    rtts = []
    for _ in range(args.rtt_samples):
        t = time.perf_counter()
        code = produce(bench, leader, "steady", 0)
        rtts.append(time.perf_counter() - t)
        assert code == 0, code
    rtt = statistics.median(rtts)
    print(f"acks=all round trip on an existing topic: median {rtt * 1000:.2f} ms "
          f"(p90 {sorted(rtts)[int(len(rtts) * 0.9)] * 1000:.2f} ms, {len(rtts)} samples)", flush=True)

    readies, creates, metas, writes, retries = [], [], [], [], 0
    for i in range(args.topics):
        topic = f"new-{i}"
        t0 = time.perf_counter()
        create_topic(bench, 0, topic, 3)
        t1 = time.perf_counter()
        meta_s = None
        while True:
            t = time.perf_counter()
            new_leader = leader_of(bench, 0, topic, 0)
            if meta_s is None:
                meta_s = time.perf_counter() - t
            if new_leader >= 0 and produce(bench, new_leader, topic, 0) == 0:
                break
            retries += 1
        t2 = time.perf_counter()
        creates.append(t1 - t0)
        readies.append(t2 - t1)
        metas.append(meta_s)
        writes.append(t2 - t1 - meta_s)
        print(f"{topic}: CreateTopics {ms(t1 - t0):8.2f} ms; then ready in {ms(t2 - t1):7.2f} ms "
              f"(Metadata {ms(meta_s):.2f} ms, first acks=all write {ms(t2 - t1 - meta_s):.2f} ms)",
              flush=True)
    ready = statistics.median(readies)
    ratio = ready / rtt
    print(f"new topic ready: median {ready * 1000:.2f} ms = {ratio:.2f} x the produce round trip "
          f"(target <= 5); {retries} retried requests", flush=True)
    return {"new_topic_ready_vs_produce_rtt": round(ratio, 3)}, {
        "produce_rtt_ms": ms(rtt),
        "new_topic_ready_ms": ms(ready),
        "new_topic_ready_ms_each": [ms(x) for x in readies],
        "create_topics_ms": ms(statistics.median(creates)),
        "metadata_ms": ms(statistics.median(metas)),
        "first_write_ms": ms(statistics.median(writes)),
        "new_topic_retried_requests": retries,
    }


# ---- (2) a leader's successor -------------------------------------------------------------
def leader_change(bench: Bench) -> tuple[Ratios, Figures]:
    session_ms = bench.args.session_timeout_ms
    topic = "failover"
    create_topic(bench, 0, topic, 1, {"min.insync.replicas": "2"})
    states = wait_in_sync(bench.ports(), topic, 1)
    victim = states[0][0]
    survivors = [b.broker_id for b in bench.cluster.brokers if b.broker_id != victim]
    assert produce(bench, victim, topic, 0) == 0
    bench.drop(victim)

    t0 = time.perf_counter()
    bench.cluster.broker(victim).kill()
    detected = None
    polls = 0
    while True:
        via = survivors[polls % len(survivors)]
        polls += 1
        try:
            leader = leader_of(bench, via, topic, 0)
        except NetworkException:
            bench.drop(via)
            leader = -1
        if leader in survivors:
            if detected is None:
                detected = time.perf_counter()
            try:
                if produce(bench, leader, topic, 0, timeout_ms=5000) == 0:
                    break
            except NetworkException:
                bench.drop(leader)
        time.sleep(0.01)
    t1 = time.perf_counter()
    assert detected is not None
    ratio = (t1 - t0) * 1000 / session_ms
    print(f"leader change: broker {victim} killed; broker {leader} acknowledged a write after "
          f"{ms(t1 - t0):.0f} ms = {ratio:.3f} x broker.session.timeout.ms ({session_ms} ms; "
          f"target <= 1.2); successor named after {ms(detected - t0):.0f} ms", flush=True)

    bench.cluster.broker(victim).start()  # later measurements get the whole cluster back
    wait_in_sync(bench.ports(), topic, 1)
    return {"leader_change_vs_session_timeout": round(ratio, 3)}, {
        "session_timeout_ms": session_ms,
        "leader_change_ms": ms(t1 - t0),
        "detect_ms": ms(detected - t0),
        "write_ms": ms(t1 - detected),
    }


MEASUREMENTS: list[Callable[[Bench], tuple[Ratios, Figures]]] = [new_topic_ready, leader_change]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rtt-samples", type=int, default=200)
    parser.add_argument("--topics", type=int, default=5)
    parser.add_argument("--session-timeout-ms", type=int, default=3000)
    parser.add_argument("--no-compaction", action="store_true")
    args = parser.parse_args()
    ratios: Ratios = {}
    figures: Figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        cluster = LocalCluster(Path(tmp), 3, session_timeout_ms=args.session_timeout_ms)
        cluster.start()
        bench = Bench(cluster, args)
        try:
            for measure in MEASUREMENTS:
                r, f = measure(bench)
                ratios.update(r)
                figures.update(f)
        finally:
            bench.close()
            cluster.stop()
        if not args.no_compaction:
            from benchmarks.compaction import measure_compaction

            result = measure_compaction(Path(tmp) / "compaction")
            ratios["compaction_vs_append"] = round(result["ratio"], 3)
            figures.update({f"compaction_{k}": v for k, v in result["figures"].items()})
            print(f"compaction_vs_append: {result['ratio']:.2f} (target >= 0.5)", flush=True)
    print(json.dumps({"benchmark": "metadata", "ratios": ratios, "figures": figures}))


if __name__ == "__main__":
    main()
