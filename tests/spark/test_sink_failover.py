"""A broker killed (SIGKILL) while the sink writes: the write finishes once a new leader is
elected, and nothing it acknowledged is missing.

3 broker processes, a topic with 4 partitions, replication factor 3, min.insync.replicas 2.
A ``df.write.format("pyq")`` of 300,000 rows runs, its input paced in small slices (sent with
``kafka.linger.ms``, else the sink holds a partition's rows until a batch fills); as soon
as the topic holds a tenth of the rows, a thread kills the leader of partition 0. Spark here
is ``local[2]``, where a failed task is not retried: the sink itself must ride out the
election. Partition 0 then holds batches stamped with the new leader's epoch (rows the sink
wrote after the election), and read back the topic holds every row — exactly once with
``exactlyOnce=true``, at least once without.

Pacing alone cannot promise that rows are still to come when the kill lands: on a loaded
machine the acknowledged end offsets the killer watches lag the sink by seconds, and a write
whose last rows were already on every replica when the leader died tests nothing (it happened
once, in a full run). So each task stops at a third of its rows and waits for the killer's
word before handing on the rest: the kill always falls mid-write, usually while rows flow.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter

import pytest

from broker_sim.protocol.errors import PyqError
from broker_sim.protocol.records.batch_header import HEADER_SIZE, BatchHeader
from connector.client import Admin, Fetcher, NewTopic
from tests.wire import partition_states, wait_for

pytestmark = pytest.mark.integration

ROWS = 300_000
PARTITIONS = 4
FAST = {"replica.lag.time.max.ms": "2000", "log.retention.check.interval.ms": "60000"}
PACE_ROWS, PACE_SECONDS = 1_500, 0.1  # per Spark task: 150,000 rows in about 10 s
GATE = ROWS // 2 // 3  # each task's rows before it waits for the kill: 2 * GATE > ROWS // 10


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
def test_sink_write_survives_a_leader_kill(spark, cluster_factory, exactly_once, tmp_path):
    cluster = cluster_factory(3, overrides=FAST, session_timeout_ms=3000)
    bootstrap = cluster.bootstrap_servers
    topic = "sink-failover"
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, 3, {"min.insync.replicas": "2"})])
    victim, _isr, old_epoch = wait_for(lambda: _in_sync(cluster, topic), timeout=30,
                                       what="3 replicas in sync")[0]

    df = spark.range(ROWS, numPartitions=2).selectExpr(
        "cast(id % 997 as string) as key", "concat('row-', cast(id as string)) as value")

    killed_file = str(tmp_path / "killed")  # the killer's word to the Python workers

    def paced(batches):  # local: pickled by value for workers
        handed = 0
        for batch in batches:  # the rows handed on in small slices, one every PACE_SECONDS
            for start in range(0, batch.num_rows, PACE_ROWS):
                if handed >= GATE:
                    deadline = time.monotonic() + 120
                    while not os.path.exists(killed_file):
                        if time.monotonic() > deadline:
                            raise TimeoutError("no kill within 120 s")
                        time.sleep(0.02)
                time.sleep(PACE_SECONDS)
                piece = batch.slice(start, PACE_ROWS)
                handed += piece.num_rows
                yield piece

    df = df.mapInArrow(paced, df.schema)
    writer = (df.write.format("pyq").mode("append").option("kafka.bootstrap.servers", bootstrap)
              .option("topic", topic).option("kafka.linger.ms", "20"))  # rows out as they come
    if exactly_once:
        writer = writer.option("exactlyOnce", "true").option("queryName", "failover-writer")
    killed: list[float] = []

    def kill_the_leader_mid_write() -> None:  # the write itself runs in the test's thread
        written = wait_for(lambda: max(0, _end_offsets(bootstrap, topic) - ROWS // 10 + 1),
                           timeout=120, interval=0.02, what="the write under way")
        cluster.broker(victim).kill()
        killed.append(written + ROWS // 10 - 1)  # rows in the topic just before the kill
        open(killed_file, "w").close()  # the workers hand on the rest

    killer = threading.Thread(target=kill_the_leader_mid_write, daemon=True)
    killer.start()
    writer.save()  # returns once every row is acknowledged, or raises
    killer.join(10)
    assert killed, "the leader was not killed"

    for survivor in (b for b in cluster.brokers if b.broker_id != victim):
        # each broker hears of the election on its own heartbeat: wait for both
        wait_for(lambda s=survivor: partition_states(s.port, topic)[0][0] not in (-1, victim),
                 timeout=30, what=f"broker {survivor.broker_id} to see a new leader")
    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        start, end = fetcher.offset_bounds(topic, 0)
        epochs = {BatchHeader.parse(records, pos).partition_leader_epoch
                  for records in fetcher.fetch_record_sets(topic, 0, start, end)
                  for pos in _batch_positions(records)}
        assert max(epochs) > old_epoch, f"no row written after the election (epochs {epochs})"
    isolation = "read_committed" if exactly_once else "read_uncommitted"
    with Fetcher({"bootstrap.servers": bootstrap, "isolation.level": isolation}) as fetcher:
        def read() -> Counter[bytes]:
            out: Counter[bytes] = Counter()
            for p in range(PARTITIONS):
                start, end = fetcher.offset_bounds(topic, p)
                out.update(r.value for r in fetcher.iter_records(topic, p, start, end))
            return out
        # exactly once: visible when the coordinator has written the commit markers
        values = wait_for(lambda: (v := read()) and len(v) == ROWS and v, timeout=30,
                          what="every row readable")
    assert set(values) == {b"row-%d" % i for i in range(ROWS)}  # nothing acknowledged is missing
    if exactly_once:  # read_committed: each row once
        assert max(values.values()) == 1 and sum(values.values()) == ROWS


def _batch_positions(records) -> list[int]:
    """Start of every whole record batch in a fetched record set."""
    positions, pos = [], 0
    while len(records) - pos >= HEADER_SIZE:
        header = BatchHeader.parse(records, pos)
        if len(records) - pos < header.size:
            break  # a partial batch at the end of a fetch
        positions.append(pos)
        pos += header.size
    return positions
