"""RecordAccumulator, driven by ``now``: readiness, draining, expiry, retries, muting."""

from __future__ import annotations

from typing import Any

import pytest

from broker_sim.protocol.records import BatchHeader, iter_records
from connector.client.accumulator import RecordAccumulator
from connector.client.buffer_pool import BufferPool
from connector.client.config import ProducerConfig
from connector.client.errors import KafkaTimeoutError, ProducerClosedError
from connector.client.idempotence import IdempotenceManager
from connector.client.metadata import TopicPartition
from tests.client.support import cluster

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
U0 = TopicPartition("u", 0)
CLUSTER = cluster({("t", 0): 0, ("t", 1): 1, ("u", 0): 0})
VALUE = b"v" * 40  # a record of 40 + 7 bytes on the wire; a 200-byte batch holds 2 of them


def config(**overrides) -> ProducerConfig:
    base: dict[str, Any] = {"bootstrap_servers": "h:1", "batch_size": 200, "linger_ms": 10,
            "retry_backoff_ms": 100, "request_timeout_ms": 500, "delivery_timeout_ms": 5000,
            "buffer_memory": 10_000}
    base.update(overrides)
    return ProducerConfig(**base)


def accumulator(**overrides) -> RecordAccumulator:
    return RecordAccumulator(config(**overrides))


def append(acc: RecordAccumulator, tp: TopicPartition, now: float, value: bytes = VALUE,
           key: bytes | None = None):
    return acc.append(tp, 1_000 + int(now), key, value, None, None, 0, now)


class ExhaustedPool(BufferPool):
    """A pool on which some thread is (said to be) blocked waiting for memory."""

    @property
    def queued(self) -> int:
        return 1


# ---- append ----------------------------------------------------------------------------
def test_append_fills_the_open_batch_then_opens_a_new_one():
    acc = accumulator()
    first = append(acc, T0, 0)
    second = append(acc, T0, 1)
    third = append(acc, T0, 2)
    assert (first.new_batch_created, second.new_batch_created, third.new_batch_created) == (
        True, False, True)
    assert third.batch_is_full  # a second batch means the first is full
    assert [b.record_count for b in acc.batches(T0)] == [2, 1]
    assert acc.pool.available == 10_000 - 2 * 200


def test_a_record_larger_than_batch_size_gets_a_batch_of_its_own():
    acc = accumulator()
    append(acc, T0, 0)
    big = append(acc, T0, 1, value=b"x" * 500)
    assert big.new_batch_created and big.batch_is_full
    assert [b.record_count for b in acc.batches(T0)] == [1, 1]
    assert acc.batches(T0)[1].reserved_bytes > 500


def test_append_after_close_raises():
    acc = accumulator()
    acc.close()
    with pytest.raises(ProducerClosedError):
        append(acc, T0, 0)


# ---- ready -----------------------------------------------------------------------------
def test_linger_makes_a_partial_batch_ready_only_when_it_expires():
    acc = accumulator(linger_ms=10)
    append(acc, T0, 0)
    r = acc.ready(CLUSTER, 0)
    assert r.ready_nodes == set() and r.next_ready_check_delay_ms == 10
    assert acc.ready(CLUSTER, 9).next_ready_check_delay_ms == 1
    assert acc.ready(CLUSTER, 10).ready_nodes == {0}


def test_a_full_batch_is_ready_before_linger_expires():
    acc = accumulator(linger_ms=1000)
    for i in range(3):
        append(acc, T0, i)
    assert acc.ready(CLUSTER, 3).ready_nodes == {0}


def test_a_single_batch_without_room_is_full():
    acc = accumulator(linger_ms=1000)
    append(acc, T0, 0, value=b"x" * 180)
    assert acc.batches(T0)[0].is_full
    assert acc.ready(CLUSTER, 0).ready_nodes == {0}


def test_exhausted_memory_makes_every_batch_ready():
    acc = RecordAccumulator(config(linger_ms=1000), pool=ExhaustedPool(10_000))
    append(acc, T0, 0)
    append(acc, T1, 0)
    assert acc.ready(CLUSTER, 0).ready_nodes == {0, 1}


def test_flush_makes_every_batch_ready_until_it_ends():
    acc = accumulator(linger_ms=1000)
    append(acc, T0, 0)
    acc.begin_flush()
    assert acc.ready(CLUSTER, 0).ready_nodes == {0}
    acc.end_flush()
    assert acc.ready(CLUSTER, 0).ready_nodes == set()


def test_close_makes_every_batch_ready():
    acc = accumulator(linger_ms=1000)
    append(acc, T0, 0)
    acc.close()
    assert acc.ready(CLUSTER, 0).ready_nodes == {0}


def test_a_retried_batch_backs_off_even_when_full_or_flushing():
    acc = accumulator(linger_ms=0, retry_backoff_ms=100)
    append(acc, T0, 0)
    [batch] = acc.drain(CLUSTER, {0}, 10_000, 0)[0]
    for i in range(3):  # more batches queue behind it
        append(acc, T0, 10 + i)
    acc.reenqueue(batch, now=50)
    acc.begin_flush()
    r = acc.ready(CLUSTER, 100)
    assert r.ready_nodes == set() and r.next_ready_check_delay_ms == 50
    assert acc.drain(CLUSTER, {0}, 10_000, 100) == {}  # drain honours the backoff too
    assert acc.ready(CLUSTER, 150).ready_nodes == {0}


def test_unknown_leaders_are_reported_not_ready():
    acc = accumulator(linger_ms=0)
    append(acc, TopicPartition("new-topic", 0), 0)
    r = acc.ready(CLUSTER, 100)
    assert r.ready_nodes == set() and r.unknown_leader_topics == {"new-topic"}


def test_a_muted_partition_is_neither_ready_nor_drained():
    acc = accumulator(linger_ms=0)
    append(acc, T0, 0)
    acc.mute_partition(T0)
    assert acc.ready(CLUSTER, 10).ready_nodes == set()
    assert acc.drain(CLUSTER, {0}, 10_000, 10) == {}
    acc.unmute_partition(T0)
    assert acc.ready(CLUSTER, 10).ready_nodes == {0}


# ---- drain -----------------------------------------------------------------------------
def test_drain_groups_head_batches_by_leader_one_per_partition():
    acc = accumulator(linger_ms=0)
    for _ in range(3):
        append(acc, T0, 0)  # two batches for t-0
    append(acc, T1, 0)
    append(acc, U0, 0)
    drained = acc.drain(CLUSTER, {0, 1}, 10_000, 5)
    assert sorted(b.tp for b in drained[0]) == [T0, U0]
    assert [b.tp for b in drained[1]] == [T1]
    assert all(b.is_closed and b.drained_ms == 5 for bs in drained.values() for b in bs)
    assert [b.record_count for b in acc.batches(T0)] == [1]  # the second batch stays
    # the drained bytes are a valid batch holding the records in order
    t0 = next(b for b in drained[0] if b.tp == T0)
    assert [r.value for r in iter_records(t0.records)] == [VALUE, VALUE]


def test_drain_stops_at_max_request_size_but_always_sends_one_batch():
    acc = accumulator(linger_ms=0)
    append(acc, T0, 0, value=b"x" * 150)
    append(acc, U0, 0, value=b"y" * 150)
    first = acc.drain(CLUSTER, {0}, 300, 0)[0]
    assert len(first) == 1  # two batches of ~220 bytes do not fit in 300
    second = acc.drain(CLUSTER, {0}, 100, 0)[0]
    assert len(second) == 1 and second[0].tp != first[0].tp  # alone, even if over the limit


def test_drain_rotates_the_first_partition_so_none_starves():
    acc = accumulator(linger_ms=0)
    served = []
    for round_ in range(4):
        for tp in (T0, U0):
            if not acc.batches(tp):
                append(acc, tp, round_, value=b"z" * 150)
        [batch] = acc.drain(CLUSTER, {0}, 1, round_)[0]
        served.append(batch.tp)
    assert served.count(T0) == 2 and served.count(U0) == 2


# ---- expiry and retries ----------------------------------------------------------------
def test_batches_expire_at_delivery_timeout():
    acc = accumulator(delivery_timeout_ms=1600, linger_ms=1000)
    append(acc, T0, 0)
    append(acc, T1, 500)
    assert acc.expired_batches(1599) == []
    assert acc.next_expiry_delay(1599) == 1
    [expired] = acc.expired_batches(1600)
    assert expired.tp == T0 and acc.batches(T0) == []
    assert [b.tp for b in acc.expired_batches(2100)] == [T1]


def test_reenqueue_puts_the_batch_back_at_the_head_with_the_same_bytes():
    acc = accumulator(linger_ms=0, retry_backoff_ms=100)
    append(acc, T0, 0)
    [batch] = acc.drain(CLUSTER, {0}, 10_000, 0)[0]
    sent = batch.records
    append(acc, T0, 1)  # a newer batch
    acc.reenqueue(batch, now=20)
    assert acc.batches(T0)[0] is batch and len(acc.batches(T0)) == 2
    assert batch.attempts == 1 and batch.in_retry
    [again] = acc.drain(CLUSTER, {0}, 10_000, 120)[0]
    assert again is batch and again.records == sent


# ---- idempotence -----------------------------------------------------------------------
def idempotent_accumulator(**overrides) -> RecordAccumulator:
    return RecordAccumulator(config(linger_ms=0, **overrides), idempotence=IdempotenceManager())


def acked(acc: RecordAccumulator, batch) -> None:
    """What the sender does with a batch the broker wrote."""
    assert acc.idempotence is not None
    acc.idempotence.acknowledged(batch.tp)
    acc.idempotence.completed(batch)


def known_to_the_broker(acc: RecordAccumulator, tp: TopicPartition) -> None:
    """Drain one batch of ``tp`` and acknowledge it: the broker now knows the producer there."""
    append(acc, tp, 0)
    [batch] = acc.drain(CLUSTER, {0}, 10_000, 0)[0]
    acked(acc, batch)


def test_idempotent_drain_waits_for_a_producer_id_then_numbers_batches():
    acc = idempotent_accumulator()
    append(acc, T0, 0)
    append(acc, T0, 0)
    assert acc.drain(CLUSTER, {0}, 10_000, 0) == {}
    acc.idempotence.set_producer_id(4242, 3)
    [first] = acc.drain(CLUSTER, {0}, 10_000, 0)[0]
    acked(acc, first)
    append(acc, T0, 1)
    [second] = acc.drain(CLUSTER, {0}, 10_000, 1)[0]
    h1, h2 = BatchHeader.parse(first.records), BatchHeader.parse(second.records)
    assert (h1.producer_id, h1.producer_epoch, h1.base_sequence) == (4242, 3, 0)
    assert (h2.producer_id, h2.producer_epoch, h2.base_sequence) == (4242, 3, 2)


def test_until_a_partition_acknowledged_a_batch_of_the_producer_one_goes_at_a_time():
    # A broker that does not know the producer in a partition accepts any sequence, so a
    # second batch overtaking a first that failed would be written first (Apache Kafka).
    acc = idempotent_accumulator()
    acc.idempotence.set_producer_id(1, 0)
    append(acc, T0, 0)
    [first] = acc.drain(CLUSTER, {0}, 10_000, 0)[0]
    append(acc, T0, 1)
    assert acc.drain(CLUSTER, {0}, 10_000, 1) == {}
    acked(acc, first)
    [second] = acc.drain(CLUSTER, {0}, 10_000, 2)[0]
    append(acc, T0, 3)
    [third] = acc.drain(CLUSTER, {0}, 10_000, 3)[0]  # with the second still in flight
    assert (second.base_sequence, third.base_sequence) == (1, 2)
    acked(acc, second)
    acked(acc, third)
    acc.idempotence.set_producer_id(1, 1)  # a new epoch: the broker does not know it yet
    append(acc, T0, 4)
    assert len(acc.drain(CLUSTER, {0}, 10_000, 4)[0]) == 1
    append(acc, T0, 5)
    assert acc.drain(CLUSTER, {0}, 10_000, 5) == {}


def test_retried_idempotent_batches_go_back_in_sequence_order_and_one_at_a_time():
    acc = idempotent_accumulator(retry_backoff_ms=0)
    acc.idempotence.set_producer_id(1, 0)
    known_to_the_broker(acc, T0)
    batches = []
    for i in range(3):
        append(acc, T0, i)
        batches.extend(acc.drain(CLUSTER, {0}, 10_000, i)[0])
    assert [b.base_sequence for b in batches] == [1, 2, 3]
    append(acc, T0, 5)  # a new, unnumbered batch
    acc.reenqueue(batches[2], 10)  # responses can fail in any order
    acc.reenqueue(batches[0], 10)
    acc.reenqueue(batches[1], 10)
    assert [b.base_sequence for b in acc.batches(T0)] == [1, 2, 3, -1]
    [again] = acc.drain(CLUSTER, {0}, 10_000, 20)[0]
    assert again is batches[0]
    # sequence 1 is not the first unacknowledged while 0 is still in flight
    assert acc.drain(CLUSTER, {0}, 10_000, 20) == {}
    acc.idempotence.completed(batches[0])
    assert acc.drain(CLUSTER, {0}, 10_000, 20)[0] == [batches[1]]


def test_at_most_five_idempotent_batches_of_a_partition_are_unacknowledged():
    acc = idempotent_accumulator()
    acc.idempotence.set_producer_id(1, 0)
    known_to_the_broker(acc, T0)
    drained = []
    for i in range(6):
        append(acc, T0, i)
        drained.extend(acc.drain(CLUSTER, {0}, 10_000, i).get(0, []))
    assert len(drained) == 5 and len(acc.batches(T0)) == 1
    acc.idempotence.completed(drained[0])
    assert len(acc.drain(CLUSTER, {0}, 10_000, 9)[0]) == 1


# ---- memory, flush, abort --------------------------------------------------------------
def test_deallocate_returns_memory_once():
    acc = accumulator(linger_ms=0)
    append(acc, T0, 0)
    [batch] = acc.drain(CLUSTER, {0}, 10_000, 0)[0]
    assert acc.pool.available == 10_000 - 200
    acc.deallocate(batch)
    acc.deallocate(batch)
    assert acc.pool.available == 10_000 and not acc.has_incomplete()


def test_await_flush_completion_times_out_while_batches_are_pending():
    acc = accumulator()
    append(acc, T0, 0)
    with pytest.raises(KafkaTimeoutError, match="flush did not complete"):
        acc.await_flush_completion(0)


def test_abort_fails_every_incomplete_batch_and_frees_its_memory():
    acc = accumulator(linger_ms=0)
    queued = append(acc, T0, 0).future
    append(acc, T1, 0)
    acc.drain(CLUSTER, {1}, 10_000, 0)  # one batch in flight
    aborted = acc.abort_incomplete_batches(ProducerClosedError("closing"))
    assert len(aborted) == 2 and acc.pool.available == 10_000
    with pytest.raises(ProducerClosedError):
        queued.result(timeout=0)
