"""DescribeTransactions and ListTransactions against a broker process, with a real
librdkafka transactional producer holding a transaction open."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import TransactionalIdNotFound
from tests.wire import WireClient, create_topic, wait_for


@pytest.fixture
def broker(broker_factory):
    b = broker_factory(overrides={"transaction.state.log.num.partitions": "3"})
    create_topic(b.port, "dt", partitions=2)
    return b


def describe(port: int, *ids: str):  # the response's states
    with WireClient(port) as c:
        return c.request(ApiKey.DESCRIBE_TRANSACTIONS, 0,
                         {"transactional_ids": list(ids)}).transaction_states


def listed(port: int, states=(), pids=(), duration=-1):
    with WireClient(port) as c:
        return c.request(ApiKey.LIST_TRANSACTIONS, 1, {
            "state_filters": list(states), "producer_id_filters": list(pids),
            "duration_filter": duration})


def test_an_open_transaction_is_described_and_listed_until_it_commits(broker):
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "dt-app"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("dt", b"a", partition=0)
    producer.produce("dt", b"b", partition=1)
    assert producer.flush(30) == 0

    (state,) = describe(broker.port, "dt-app")
    assert (state.error_code, state.transaction_state) == (0, "Ongoing")
    assert [(t.topic, sorted(t.partitions)) for t in state.topics] == [("dt", [0, 1])]
    assert state.producer_id >= 0 and state.transaction_start_time_ms > 0
    open_now = listed(broker.port, states=["Ongoing"])
    assert [(t.transactional_id, t.producer_id) for t in open_now.transaction_states] == \
        [("dt-app", state.producer_id)]
    assert listed(broker.port, duration=3_600_000).transaction_states == []  # not that old
    bogus = listed(broker.port, states=["Bogus"])
    assert bogus.unknown_state_filters == ["Bogus"] and bogus.transaction_states == []

    producer.commit_transaction(30)
    wait_for(lambda: describe(broker.port, "dt-app")[0].transaction_state == "CompleteCommit",
             20, what="the transaction to complete")
    assert describe(broker.port, "dt-app")[0].topics == []
    assert listed(broker.port, states=["Ongoing"]).transaction_states == []
    assert describe(broker.port, "nobody")[0].error_code == TransactionalIdNotFound.code
