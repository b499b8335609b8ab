"""A broker killed (SIGKILL) while the sink writes: the write finishes once a new leader is
elected, and nothing it acknowledged is missing.

3 broker processes, a topic with 4 partitions, replication factor 3, min.insync.replicas 2.
A ``df.write.format("pyq")`` of 300,000 rows runs; as soon as the topic holds a tenth of
them, a thread kills the leader of partition 0. Spark here is ``local[2]``, where a failed
task is not retried: the sink itself must ride out the election. Read back, the topic holds
every row — exactly once with ``exactlyOnce=true``, at least once without.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from broker_sim.protocol.errors import PyqError
from connector.client import Admin, Fetcher, NewTopic
from tests.wire import partition_states, wait_for

pytestmark = pytest.mark.integration

ROWS = 300_000
PARTITIONS = 4
FAST = {"replica.lag.time.max.ms": "2000", "log.retention.check.interval.ms": "60000"}


def _in_sync(cluster, topic: str) -> dict:
    states = partition_states(cluster.brokers[0].port, topic)
    ok = len(states) == PARTITIONS and all(len(isr) == 3 for _l, isr, _e in states.values())
    return states if ok else {}


def _end_offsets(bootstrap: str, topic: str) -> int:
    """Records in the topic (0 while its metadata is not everywhere yet)."""
    try:
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            found = admin.list_offsets({(topic, p): "latest" for p in range(PARTITIONS)})
    except PyqError:
        return 0
    return sum(o.offset for o in found.values())


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at-least-once", "exactly-once"])
def test_sink_write_survives_a_leader_kill(spark, cluster_factory, exactly_once):
    cluster = cluster_factory(3, overrides=FAST, session_timeout_ms=3000)
    bootstrap = cluster.bootstrap_servers
    topic = "sink-failover"
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, 3, {"min.insync.replicas": "2"})])
    victim = wait_for(lambda: _in_sync(cluster, topic), timeout=30, what="3 replicas in sync")[0][0]

    df = spark.range(ROWS, numPartitions=2).selectExpr(
        "cast(id % 997 as string) as key", "concat('row-', cast(id as string)) as value")
    writer = (df.write.format("pyq").mode("append").option("kafka.bootstrap.servers", bootstrap)
              .option("topic", topic))
    if exactly_once:
        writer = writer.option("exactlyOnce", "true").option("queryName", "failover-writer")
    killed: list[float] = []

    def kill_the_leader_mid_write() -> None:  # the write itself runs in the test's thread
        written = wait_for(lambda: max(0, _end_offsets(bootstrap, topic) - ROWS // 10 + 1),
                           timeout=120, interval=0.02, what="the write under way")
        cluster.broker(victim).kill()
        killed.append(written + ROWS // 10 - 1)  # rows in the topic just before the kill

    killer = threading.Thread(target=kill_the_leader_mid_write, daemon=True)
    killer.start()
    writer.save()  # returns once every row is acknowledged, or raises
    killer.join(10)
    assert killed and killed[0] < ROWS, "the write ended before the kill: nothing was tested"

    survivor = next(b for b in cluster.brokers if b.broker_id != victim)
    assert partition_states(survivor.port, topic)[0][0] not in (-1, victim)
    values: Counter[bytes] = Counter()
    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        for p in range(PARTITIONS):
            start, end = fetcher.offset_bounds(topic, p)
            values.update(r.value for r in fetcher.iter_records(topic, p, start, end))
    assert set(values) == {b"row-%d" % i for i in range(ROWS)}  # nothing acknowledged is missing
    if exactly_once:
        assert max(values.values()) == 1 and sum(values.values()) == ROWS
