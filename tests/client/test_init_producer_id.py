"""The idempotent producer's InitProducerId, step by step over the in-memory network.

Which version and body it sends (v4 with producer id and epoch -1 when fresh; its current
id and epoch after a sequence error, for a KIP-360 bump), which errors are retried, and
how a non-retriable one (or a broker with no usable version) becomes the producer's fatal
error that fails every record at once. ``tests/client/test_init_producer_id_broker.py``
does the same against real broker processes.
"""

from __future__ import annotations

import logging

import pytest

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    ClusterAuthorizationFailed,
    ConcurrentTransactions,
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    InvalidRequest,
    InvalidTransactionTimeout,
    NotCoordinator,
    OutOfOrderSequenceNumber,
    TransactionalIdAuthorizationFailed,
    UnknownServerError,
    UnsupportedVersion,
)
from connector.client.errors import DisconnectError, IncompatibleBrokerError, RequestTimeoutError
from connector.client.idempotence import init_producer_id_error, kafka_error_name
from tests.client.support import produce_response
from tests.client.test_sender import T0, ok, setup


def pid_response(code: int = 0, producer_id: int = 77, epoch: int = 2) -> dict:
    return {"throttle_time_ms": 0, "error_code": code,
            "producer_id": producer_id if code == 0 else -1,
            "producer_epoch": epoch if code == 0 else -1}


def test_a_fresh_producer_sends_v4_with_no_id_and_no_epoch():
    env = setup(enable_idempotence=True)
    env.net.handlers[ApiKey.INIT_PRODUCER_ID] = lambda r: pid_response()
    env.run(0)
    [request] = env.net.requests(ApiKey.INIT_PRODUCER_ID)
    assert request.version == 4
    body = request.body
    assert (body.transactional_id, body.producer_id, body.producer_epoch) == (None, -1, -1)
    assert env.idem.producer_id_and_epoch == (77, 2)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_the_negotiated_version_is_used(version: int):
    env = setup(enable_idempotence=True)
    env.net.versions[ApiKey.INIT_PRODUCER_ID] = version
    env.net.handlers[ApiKey.INIT_PRODUCER_ID] = lambda r: pid_response()
    env.run(0)
    [request] = env.net.requests(ApiKey.INIT_PRODUCER_ID)
    assert request.version == version
    assert env.idem.producer_id_and_epoch == (77, 2)


@pytest.mark.parametrize("error", [CoordinatorLoadInProgress, NotCoordinator,
                                   CoordinatorNotAvailable, ConcurrentTransactions])
def test_retriable_error_codes_are_retried_after_the_backoff_and_logged_by_name(error, caplog):
    env = setup(enable_idempotence=True, retry_backoff_ms=100)
    answers = [pid_response(error.code), pid_response()]
    env.net.handlers[ApiKey.INIT_PRODUCER_ID] = lambda r: answers.pop(0)
    env.net.handlers[ApiKey.PRODUCE] = ok
    future = env.send(T0)
    with caplog.at_level(logging.WARNING):
        env.run(0)
    assert env.sender.fatal_error is None and not future.done()
    assert kafka_error_name(error) in caplog.text and "InitProducerId" in caplog.text
    env.run(50)  # still backing off
    assert len(env.net.requests(ApiKey.INIT_PRODUCER_ID)) == 1
    env.run(100)
    assert len(env.net.requests(ApiKey.INIT_PRODUCER_ID)) == 2
    env.run(101)
    assert future.result(0).offset == 0


@pytest.mark.parametrize("error", [DisconnectError("connection reset"),
                                   RequestTimeoutError("no response within 1000 ms")])
def test_disconnects_and_timeouts_are_retried(error, caplog):
    env = setup(enable_idempotence=True, retry_backoff_ms=100)
    answers: list = [error, pid_response()]
    env.net.handlers[ApiKey.INIT_PRODUCER_ID] = lambda r: answers.pop(0)
    with caplog.at_level(logging.WARNING):
        env.run(0)
    assert env.sender.fatal_error is None
    assert type(error).__name__ in caplog.text
    env.run(100)
    assert env.idem.producer_id_and_epoch == (77, 2)


@pytest.mark.parametrize("error", [UnsupportedVersion, InvalidRequest, ClusterAuthorizationFailed,
                                   TransactionalIdAuthorizationFailed, InvalidTransactionTimeout])
def test_a_non_retriable_error_fails_pending_records_at_once(error, caplog):
    env = setup(enable_idempotence=True, delivery_timeout_ms=120_000)
    env.net.handlers[ApiKey.INIT_PRODUCER_ID] = lambda r: pid_response(error.code)
    pending = [env.send(T0), env.send(T0, b"w" * 40)]
    with caplog.at_level(logging.ERROR):
        env.run(0)
        env.run(1)
    for future in pending:
        assert future.done()
        failure = future.exception(0)
        assert isinstance(failure, error)
        assert "InitProducerId v4" in str(failure) and kafka_error_name(error) in str(failure)
        assert f"(error {error.code})" in str(failure)
    assert isinstance(env.sender.fatal_error, error)
    assert kafka_error_name(error) in caplog.text
    env.run(10_000)
    assert len(env.net.requests(ApiKey.INIT_PRODUCER_ID)) == 1  # never asked again
    assert env.net.requests(ApiKey.PRODUCE) == []


def test_an_error_code_the_client_does_not_know_is_fatal_and_named_by_its_code():
    env = setup(enable_idempotence=True)
    env.net.handlers[ApiKey.INIT_PRODUCER_ID] = lambda r: pid_response(999)
    future = env.send(T0)
    env.run(0)
    env.run(1)
    failure = future.exception(0)
    assert isinstance(failure, UnknownServerError)
    assert "InitProducerId v4 to broker 0 failed with error code 999" in str(failure)


def test_a_broker_with_no_usable_version_is_fatal_with_a_clear_message():
    env = setup(enable_idempotence=True)
    env.net.versions[ApiKey.INIT_PRODUCER_ID] = None
    future = env.send(T0)
    env.run(0)
    env.run(1)
    failure = future.exception(0)
    assert isinstance(failure, IncompatibleBrokerError)
    assert "InitProducerId" in str(failure) and "enable.idempotence=false" in str(failure)
    assert env.net.requests(ApiKey.INIT_PRODUCER_ID) == []


def test_the_error_message_names_request_error_and_meaning():
    e = init_producer_id_error(ClusterAuthorizationFailed.code, 4, 2)
    assert isinstance(e, ClusterAuthorizationFailed)
    assert str(e) == ("InitProducerId v4 to broker 2 failed with CLUSTER_AUTHORIZATION_FAILED "
                      "(error 31): an idempotent producer needs IdempotentWrite on the cluster "
                      "or Write on some topic")


@pytest.mark.parametrize(("version", "sent"), [(4, (77, 2)), (3, (77, 2)), (2, (-1, -1))])
def test_after_a_sequence_error_the_producer_asks_to_bump_its_epoch(version, sent):
    env = setup(enable_idempotence=True)
    env.net.versions[ApiKey.INIT_PRODUCER_ID] = version
    answers = [pid_response(), pid_response(producer_id=77, epoch=3)]
    env.net.handlers[ApiKey.INIT_PRODUCER_ID] = lambda r: answers.pop(0)
    env.net.handlers[ApiKey.PRODUCE] = lambda r: produce_response(
        r, errors={("t", 0): OutOfOrderSequenceNumber.code})
    future = env.send(T0)
    for t in range(3):
        env.run(t)
    assert isinstance(future.exception(0), OutOfOrderSequenceNumber)
    env.net.handlers[ApiKey.PRODUCE] = ok
    later = env.send(T0)
    for t in range(3, 6):
        env.run(t)
    first, second = env.net.requests(ApiKey.INIT_PRODUCER_ID)
    assert (second.body.producer_id, second.body.producer_epoch) == sent
    assert env.idem.producer_id_and_epoch == (77, 3)
    assert later.result(0).offset == 0
