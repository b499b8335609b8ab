"""pyq's own transactional producer against a broker process: commit and abort as seen by
read_committed readers, a fenced zombie, offsets inside a transaction, wrong-state calls."""

from __future__ import annotations

import pytest

from broker_sim.protocol.errors import ProducerFenced
from connector.client import Admin, Fetcher, Producer
from connector.client.errors import ConfigError
from connector.client.metadata import TopicPartition
from connector.client.transaction_manager import TransactionError
from tests.wire import create_topic, wait_for

TOPIC = "pyq-txn"


@pytest.fixture
def broker(broker_factory):
    b = broker_factory(overrides={"transaction.state.log.num.partitions": "2"})
    create_topic(b.port, TOPIC, partitions=2)
    return b


def committed_values(bootstrap: str, isolation: str = "read_committed") -> list[bytes]:
    with Fetcher(bootstrap_servers=bootstrap, isolation_level=isolation) as f:
        out = []
        for p in range(2):
            start, end = f.offset_bounds(TOPIC, p)
            out.extend(r.value for r in f.iter_records(TOPIC, p, start, end))
    return sorted(out)


def test_committed_records_appear_together_and_aborted_ones_never(broker):
    bootstrap = broker.bootstrap_servers
    with Producer(bootstrap_servers=bootstrap, transactional_id="pyq-app") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(10):
            producer.send(TOPIC, b"c%d" % i, partition=i % 2)
        producer.flush()
        assert committed_values(bootstrap) == []  # written, not yet committed
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(5):
            producer.send(TOPIC, b"a%d" % i, partition=i % 2)
        producer.abort_transaction()
    assert committed_values(bootstrap) == sorted(b"c%d" % i for i in range(10))
    assert len(committed_values(bootstrap, "read_uncommitted")) == 15


def test_a_zombie_is_fenced_by_a_new_instance(broker):
    bootstrap = broker.bootstrap_servers
    zombie = Producer(bootstrap_servers=bootstrap, transactional_id="pyq-zombie")
    successor = Producer(bootstrap_servers=bootstrap, transactional_id="pyq-zombie")
    try:
        zombie.init_transactions()
        successor.init_transactions()
        zombie.begin_transaction()
        late = zombie.send(TOPIC, b"late", partition=0)  # the partition cannot join its txn
        with pytest.raises(ProducerFenced, match="fenced"):
            late.result(10)
        with pytest.raises(ProducerFenced):
            zombie.commit_transaction()
        with pytest.raises(ProducerFenced):
            zombie.send(TOPIC, b"later", partition=1).result(10)
        successor.begin_transaction()
        successor.send(TOPIC, b"new", partition=1)
        successor.commit_transaction()
    finally:
        zombie.close()
        successor.close()
    assert committed_values(bootstrap) == [b"new"]


def test_offsets_sent_to_the_transaction_count_when_it_commits(broker):
    bootstrap = broker.bootstrap_servers
    offsets = {TopicPartition(TOPIC, 0): 7, TopicPartition(TOPIC, 1): 3}
    with Producer(bootstrap_servers=bootstrap, transactional_id="pyq-eos") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(TOPIC, b"x", partition=0)
        producer.send_offsets_to_transaction(offsets, "pyq-eos-group")
        producer.abort_transaction()
        with Admin(bootstrap_servers=bootstrap) as admin:
            assert admin.fetch_offsets("pyq-eos-group") == {}
        producer.begin_transaction()
        producer.send(TOPIC, b"y", partition=0)
        producer.send_offsets_to_transaction(offsets, "pyq-eos-group")
        producer.commit_transaction()
    with Admin(bootstrap_servers=bootstrap) as admin:
        wait_for(lambda: {tp: om.offset for tp, om in admin.fetch_offsets("pyq-eos-group").items()}
                 == offsets, 20, what="the transaction's offsets")


def test_calls_in_the_wrong_state_are_refused_and_options_checked(broker):
    with Producer(bootstrap_servers=broker.bootstrap_servers, transactional_id="pyq-x") as p:
        with pytest.raises(TransactionError, match="init_transactions"):
            p.begin_transaction()
        p.init_transactions()
        with pytest.raises(TransactionError, match="inside a transaction"):
            p.send(TOPIC, b"v", partition=0)
        with pytest.raises(TransactionError):
            p.commit_transaction()
    with pytest.raises(ConfigError, match="transactional.id"):
        Producer(bootstrap_servers=broker.bootstrap_servers, transactional_id="pyq-y", acks=1)
    with Producer(bootstrap_servers=broker.bootstrap_servers) as plain:
        with pytest.raises(TransactionError, match="transactional.id"):
            plain.begin_transaction()
