"""ListOffsets answers the leader epoch of the batch that holds the offset it finds (as
Kafka's UnifiedLog.fetchOffsetByTimestamp does), not the partition's current epoch: a
consumer validating its position after a reset compares the epoch of *that* record."""

from __future__ import annotations

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.records import RecordBatchBuilder
from tests.wire import (
    WireClient,
    create_topic,
    list_offsets_body,
    partition_states,
    produce_body,
    wait_for,
)

T0 = 1_700_000_000_000


def produce(port: int, ts: int) -> None:
    b = RecordBatchBuilder()
    b.append(ts, b"k", b"v")
    with WireClient(port) as c:
        r = c.request(ApiKey.PRODUCE, 8, produce_body("epochs", 0, b.build()))
    assert r.responses[0].partition_responses[0].error_code == 0, r


def offsets(port: int, timestamp: int) -> tuple[int, int]:
    with WireClient(port) as c:
        p = c.request(ApiKey.LIST_OFFSETS, 5, list_offsets_body("epochs", 0, timestamp)).topics[0].partitions[0]
    assert p.error_code == 0, p
    return p.offset, p.leader_epoch


def test_list_offsets_answers_the_epoch_that_wrote_the_offset(broker_factory, tmp_path) -> None:
    broker = broker_factory(tmp_path / "b")
    create_topic(broker.port, "epochs", 1)
    produce(broker.port, T0)  # offset 0, at the first epoch
    first = partition_states(broker.port, "epochs")[0][2]
    broker.stop()
    broker.start()  # a restart: a new leader epoch
    later = wait_for(lambda: (s := partition_states(broker.port, "epochs")) and s[0][0] >= 0
                     and s[0][2] > first and s[0][2], 30, what="a new leader epoch")
    produce(broker.port, T0 + 1000)  # offset 1, at the new epoch
    assert offsets(broker.port, T0) == (0, first)  # by timestamp: the first batch's epoch
    assert offsets(broker.port, T0 + 500) == (1, later)
    assert offsets(broker.port, -2) == (0, first)  # earliest: the epoch of the log start
    assert offsets(broker.port, -1) == (2, later)  # latest: the current epoch
