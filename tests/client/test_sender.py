"""The Sender, driven step by step with ``run_once(now)`` over an in-memory network.

Every request goes through our codec as the broker would decode it, and every canned
response through our codec as the client decodes it (see tests/client/support.py).
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from broker_sim.common import ManualClock
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    DuplicateSequenceNumber,
    MessageTooLarge,
    NotEnoughReplicas,
    NotLeaderOrFollower,
    OutOfOrderSequenceNumber,
)
from broker_sim.protocol.records import BatchHeader
from connector.client.accumulator import RecordAccumulator
from connector.client.buffer_pool import BufferPool
from connector.client.config import ProducerConfig
from connector.client.errors import DisconnectError, KafkaTimeoutError, ProducerClosedError
from connector.client.idempotence import IdempotenceManager
from connector.client.metadata import Metadata, TopicPartition
from connector.client.sender import Sender
from tests.client.support import FakeNetworkClient, metadata_response, produce_response

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


def setup(**overrides) -> SimpleNamespace:
    options: dict[str, Any] = {"bootstrap_servers": "h:1", "linger_ms": 0, "retry_backoff_ms": 100,
               "request_timeout_ms": 1000, "delivery_timeout_ms": 5000, "batch_size": 200,
               "enable_idempotence": False, "buffer_memory": 100_000}
    options.update(overrides)
    cfg = ProducerConfig(**options)
    clock = ManualClock(0)
    metadata = Metadata(cfg)
    metadata.update(metadata_response({("t", 0): 0, ("t", 1): 1}), 0)
    net = FakeNetworkClient(max_in_flight=cfg.max_in_flight_requests_per_connection)
    idem = IdempotenceManager() if cfg.enable_idempotence else None
    acc = RecordAccumulator(cfg, BufferPool(cfg.buffer_memory, clock), idem)
    sender = Sender(cfg, net, metadata, acc, idem, clock)  # type: ignore[arg-type]  # FakeNetworkClient
    env = SimpleNamespace(cfg=cfg, clock=clock, metadata=metadata, net=net, acc=acc,
                          sender=sender, idem=idem)

    def send(tp: TopicPartition, value: bytes = b"v" * 40, key: bytes | None = None):
        now = clock.monotonic_ms()
        return acc.append(tp, 1_700_000_000_000 + int(now), key, value, None, None, 0, now).future

    def run(at: float | None = None) -> None:
        if at is not None:
            clock.advance(int(at - clock.monotonic_ms()))
        sender.run_once(clock.monotonic_ms())

    env.send, env.run = send, run
    return env


def ok(request):
    return produce_response(request)


# ---- the happy path --------------------------------------------------------------------
def test_batches_go_one_request_per_node_and_futures_get_their_offsets():
    env = setup()
    env.net.handlers[ApiKey.PRODUCE] = lambda r: produce_response(
        r, offsets={("t", 0): 100, ("t", 1): 7})
    values = [f"a{i}".encode() * 20 for i in range(3)]  # 40 bytes: two fit in a batch
    futures = [env.send(T0, v) for v in values] + [env.send(T1, b"b")]
    env.run(0)
    produce = env.net.requests(ApiKey.PRODUCE)
    assert sorted(r.node for r in produce) == [0, 1]
    assert all(r.body.acks == -1 and r.body.timeout_ms == 1000 for r in produce)
    sent = {k: [rec.value for rec in v] for r in produce for k, v in r.partitions().items()}
    assert sent == {("t", 0): values[:2], ("t", 1): [b"b"]}  # the third is in a second batch
    assert [f.result(0).offset for f in futures[:2]] == [100, 101]
    assert futures[3].result(0).offset == 7
    env.run(1)
    assert futures[2].result(0).offset == 100  # the handler answers 100 again
    assert env.acc.pool.available == 100_000 and not env.acc.has_incomplete()


def test_a_node_that_is_not_connected_is_skipped_until_it_is():
    env = setup()
    env.net.connected = {1}
    env.net.handlers[ApiKey.PRODUCE] = ok
    future = env.send(T0)
    env.run(0)
    assert env.net.connect_attempts == [0] and env.net.requests(ApiKey.PRODUCE) == []
    assert env.net.poll_timeouts[-1] == 50  # the connection delay
    env.net.connected = {0, 1}
    env.run(10)
    assert future.result(0).offset == 0


def test_poll_waits_until_the_next_batch_is_ready():
    env = setup(linger_ms=30)
    env.send(T0)
    env.run(0)
    assert env.net.poll_timeouts == [30]
    env.run(12)
    assert env.net.poll_timeouts[-1] == 18


def test_unknown_leader_requests_a_metadata_update():
    env = setup()
    env.metadata.update(metadata_response({("t", 0): 0}), 0)
    env.send(TopicPartition("other", 0))
    assert not env.metadata.update_requested()
    env.run(0)
    assert env.metadata.update_requested() and "other" in env.metadata.topics


# ---- errors and retries ----------------------------------------------------------------
def test_a_retriable_error_reenqueues_at_the_head_and_resends_the_same_bytes_after_backoff():
    env = setup(retry_backoff_ms=100)
    env.net.auto_respond = False
    first = env.send(T0)
    env.run(0)
    [request] = env.net.requests(ApiKey.PRODUCE)
    original = request.batch_bytes()[("t", 0)]
    later = env.send(T0, b"later")  # a newer batch queues behind
    env.net.respond(request, produce_response(request, errors={("t", 0): NotLeaderOrFollower.code}))
    assert env.metadata.update_requested()
    retried = env.acc.batches(T0)
    assert len(retried) == 2 and retried[0].attempts == 1 and not first.done()
    env.run(50)
    assert len(env.net.requests(ApiKey.PRODUCE)) == 1  # still backing off
    env.run(100)
    [_, resent] = env.net.requests(ApiKey.PRODUCE)
    assert resent.batch_bytes()[("t", 0)] == original
    env.net.respond(resent, produce_response(resent, offsets={("t", 0): 40}))
    assert first.result(0).offset == 40 and not later.done()


def test_a_disconnect_is_retried():
    env = setup()
    env.net.auto_respond = False
    future = env.send(T0)
    env.run(0)
    env.net.respond(env.net.in_flight[0], DisconnectError("connection reset"))
    env.net.auto_respond = True
    env.net.handlers[ApiKey.PRODUCE] = ok
    env.run(100)
    assert future.result(0).offset == 0


def test_a_non_retriable_error_fails_the_records():
    env = setup()
    env.net.handlers[ApiKey.PRODUCE] = lambda r: produce_response(
        r, errors={("t", 0): MessageTooLarge.code})
    future = env.send(T0)
    env.run(0)
    with pytest.raises(MessageTooLarge):
        future.result(0)
    assert env.acc.pool.available == 100_000


def test_retries_are_bounded_by_the_retries_option():
    env = setup(retries=1, retry_backoff_ms=0)
    env.net.handlers[ApiKey.PRODUCE] = lambda r: produce_response(
        r, errors={("t", 0): NotEnoughReplicas.code})
    future = env.send(T0)
    env.run(0)
    assert not future.done()
    env.run(1)
    with pytest.raises(NotEnoughReplicas):
        future.result(0)
    assert len(env.net.requests(ApiKey.PRODUCE)) == 2


# ---- delivery timeout ------------------------------------------------------------------
def test_queued_batches_expire_at_delivery_timeout():
    env = setup(delivery_timeout_ms=5000)
    env.net.connected = set()
    future = env.send(T0)
    env.run(4999)
    assert not future.done()
    env.run(5000)
    with pytest.raises(KafkaTimeoutError, match=r"Expiring 1 record\(s\) for t-0"):
        future.result(0)
    assert env.acc.pool.available == 100_000


def test_in_flight_batches_expire_too_and_a_late_response_is_ignored():
    env = setup(delivery_timeout_ms=5000)
    env.net.auto_respond = False
    future = env.send(T0)
    env.run(0)
    env.run(5000)
    with pytest.raises(KafkaTimeoutError):
        future.result(0)
    [request] = env.net.in_flight
    env.net.respond(request, produce_response(request, offsets={("t", 0): 9}))
    with pytest.raises(KafkaTimeoutError):  # still the first outcome
        future.result(0)
    assert env.acc.pool.available == 100_000


# ---- acks=0 and ordering ---------------------------------------------------------------
def test_acks_0_completes_when_written_with_offset_minus_one():
    env = setup(acks=0)
    future = env.send(T0)
    env.run(0)
    [request] = env.net.requests(ApiKey.PRODUCE)
    assert not request.expect_response and request.body.acks == 0
    assert future.result(0).offset == -1


def test_with_one_request_in_flight_a_partition_is_muted_until_its_response():
    env = setup(max_in_flight_requests_per_connection=1)
    env.net.auto_respond = False
    env.net.max_in_flight = 5  # muting, not the connection limit, must hold the second batch
    first = env.send(T0)
    env.run(0)
    second = env.send(T0, b"second")
    env.run(10)
    assert len(env.net.requests(ApiKey.PRODUCE)) == 1 and env.acc.is_muted(T0)
    [request] = env.net.in_flight
    env.net.respond(request, produce_response(request, errors={("t", 0): NotLeaderOrFollower.code}))
    assert not env.acc.is_muted(T0)
    env.run(200)  # the retry goes first, alone: the newer batch is behind it
    [_, retry] = env.net.requests(ApiKey.PRODUCE)
    assert [r.value for r in retry.partitions()[("t", 0)]] == [b"v" * 40]
    env.net.respond(retry, produce_response(retry, offsets={("t", 0): 0}))
    env.run(201)
    env.net.respond(env.net.in_flight[0], produce_response(env.net.in_flight[0],
                                                           offsets={("t", 0): 1}))
    assert (first.result(0).offset, second.result(0).offset) == (0, 1)


# ---- idempotence -----------------------------------------------------------------------
def init_pid(request):
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": 77, "producer_epoch": 2}


def test_idempotence_gets_a_producer_id_once_and_numbers_each_partition():
    env = setup(enable_idempotence=True)
    env.net.handlers[ApiKey.INIT_PRODUCER_ID] = init_pid
    env.net.handlers[ApiKey.PRODUCE] = ok
    futures = [env.send(T0) for _ in range(3)]
    env.run(0)
    assert env.net.requests(ApiKey.PRODUCE) == []  # nothing before the producer id
    for t in range(1, 4):
        env.run(t)
    assert len(env.net.requests(ApiKey.INIT_PRODUCER_ID)) == 1
    headers = [BatchHeader.parse(r.batch_bytes()[("t", 0)]) for r in env.net.requests(ApiKey.PRODUCE)]
    assert [(h.producer_id, h.producer_epoch, h.base_sequence) for h in headers] == [
        (77, 2, 0), (77, 2, 2)]
    assert all(f.done() for f in futures)


def test_idempotent_retries_keep_order_with_several_batches_in_flight():
    env = setup(enable_idempotence=True, retry_backoff_ms=10)
    env.net.handlers[ApiKey.INIT_PRODUCER_ID] = init_pid
    env.run(0)
    env.run(1)
    env.net.handlers[ApiKey.PRODUCE] = ok
    first = env.send(T0, b"first")  # acknowledged: the broker knows the producer in t-0 now
    env.run(1.5)
    env.run(1.6)
    assert first.exception(0) is None
    del env.net.handlers[ApiKey.PRODUCE]
    env.net.auto_respond = False
    futures = []
    for i in range(3):  # three batches of t-0 in flight at once
        futures.append(env.send(T0, f"r{i}".encode() * 30))
        env.run(2 + i)
    requests = env.net.requests(ApiKey.PRODUCE)[1:]
    assert len(requests) == 3 and len(env.net.in_flight) == 3
    seqs = [BatchHeader.parse(r.batch_bytes()[("t", 0)]).base_sequence for r in requests]
    assert seqs == [1, 2, 3]
    # the first fails; the broker then rejects the later ones as out of order
    env.net.respond(requests[0], produce_response(requests[0], errors={("t", 0): NotLeaderOrFollower.code}))
    for r in requests[1:]:
        env.net.respond(r, produce_response(r, errors={("t", 0): OutOfOrderSequenceNumber.code}))
    assert [b.base_sequence for b in env.acc.batches(T0)] == [1, 2, 3]
    written = []
    for step in range(3):
        env.run(100 + step * 20)
        [request] = env.net.in_flight  # one at a time, lowest sequence first
        records = request.batch_bytes()[("t", 0)]
        written.append(BatchHeader.parse(records).base_sequence)
        env.net.respond(request, produce_response(request, offsets={("t", 0): 1 + step}))
    assert written == [1, 2, 3]
    assert [f.result(0).offset for f in futures] == [1, 2, 3]


def test_duplicate_sequence_number_counts_as_success():
    env = setup(enable_idempotence=True)
    env.net.handlers[ApiKey.INIT_PRODUCER_ID] = init_pid
    env.net.handlers[ApiKey.PRODUCE] = lambda r: produce_response(
        r, errors={("t", 0): DuplicateSequenceNumber.code})
    future = env.send(T0)
    for t in range(3):
        env.run(t)
    assert future.exception(0) is None


def test_out_of_order_for_the_oldest_unacknowledged_batch_is_fatal():
    env = setup(enable_idempotence=True)
    env.net.handlers[ApiKey.INIT_PRODUCER_ID] = init_pid
    env.net.handlers[ApiKey.PRODUCE] = lambda r: produce_response(
        r, errors={("t", 0): OutOfOrderSequenceNumber.code})
    future = env.send(T0)
    for t in range(3):
        env.run(t)
    with pytest.raises(OutOfOrderSequenceNumber):
        future.result(0)


# ---- the thread body -------------------------------------------------------------------
def test_run_survives_a_failing_iteration_and_stops_cleanly(caplog: pytest.LogCaptureFixture) -> None:
    env = setup()
    calls = []

    def flaky(now: float) -> float:
        calls.append(now)
        if len(calls) == 1:
            raise RuntimeError("boom")
        env.sender.request_stop()
        return 0.0

    env.sender.send_producer_data = flaky  # a round that fails once
    with caplog.at_level(logging.ERROR):
        env.sender.run()
    assert len(calls) == 2 and "round of work failed" in caplog.text
    assert env.net.closed


def test_close_sends_what_is_queued_before_stopping():
    env = setup(linger_ms=1000)
    env.net.handlers[ApiKey.PRODUCE] = ok
    futures = [env.send(T0), env.send(T1)]
    env.sender.request_stop()
    env.sender.run()
    assert all(f.result(0).offset == 0 for f in futures) and env.net.closed


def test_force_close_fails_what_is_left():
    env = setup()
    env.net.connected = set()
    future = env.send(T0)
    env.sender.force_close()
    env.sender.run()
    with pytest.raises(ProducerClosedError):
        future.result(0)
