"""pyq's own transactional producer against a broker: commit and abort as seen by
read_committed readers, a fenced zombie, offsets inside a transaction, wrong-state calls —
on pyq's broker process, then on Apache Kafka (``broker_under_test``), the same tests."""

from __future__ import annotations

import pytest

from broker_sim.protocol.errors import ProducerFenced
from connector.client import Admin, Fetcher, Producer
from connector.client.errors import ConfigError
from connector.client.metadata import TopicPartition
from connector.client.transaction_manager import TransactionError
from tests.wire import wait_for


@pytest.fixture(scope="module")
def bootstrap(broker_under_test) -> str:
    return broker_under_test.bootstrap_servers


@pytest.fixture
def topic(bootstrap, request) -> str:
    """A topic of two partitions of this test's own (the broker is the module's)."""
    name = "pyq-txn-" + request.node.originalname.removeprefix("test_")[:40]
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topic(name, 2, 1)
    return name


def committed_values(bootstrap: str, topic: str, isolation: str = "read_committed") -> list[bytes]:
    with Fetcher(bootstrap_servers=bootstrap, isolation_level=isolation) as f:
        out: list[bytes] = []
        for p in range(2):
            start, end = f.offset_bounds(topic, p)
            out.extend(r.value or b"" for r in f.iter_records(topic, p, start, end))
    return sorted(out)


def test_committed_records_appear_together_and_aborted_ones_never(bootstrap, topic):
    with Producer(bootstrap_servers=bootstrap, transactional_id="pyq-app") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(10):
            producer.send(topic, b"c%d" % i, partition=i % 2)
        producer.flush()
        assert committed_values(bootstrap, topic) == []  # written, not yet committed
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(5):
            producer.send(topic, b"a%d" % i, partition=i % 2)
        producer.abort_transaction()
    assert committed_values(bootstrap, topic) == sorted(b"c%d" % i for i in range(10))
    assert len(committed_values(bootstrap, topic, "read_uncommitted")) == 15


def test_a_zombie_is_fenced_by_a_new_instance(bootstrap, topic):
    zombie = Producer(bootstrap_servers=bootstrap, transactional_id="pyq-zombie")
    successor = Producer(bootstrap_servers=bootstrap, transactional_id="pyq-zombie")
    try:
        zombie.init_transactions()
        successor.init_transactions()
        zombie.begin_transaction()
        late = zombie.send(topic, b"late", partition=0)  # the partition cannot join its txn
        with pytest.raises(ProducerFenced, match="fenced"):
            late.result(10)
        with pytest.raises(ProducerFenced):
            zombie.commit_transaction()
        with pytest.raises(ProducerFenced):
            zombie.send(topic, b"later", partition=1).result(10)
        successor.begin_transaction()
        successor.send(topic, b"new", partition=1)
        successor.commit_transaction()
    finally:
        zombie.close()
        successor.close()
    assert committed_values(bootstrap, topic) == [b"new"]


def test_offsets_sent_to_the_transaction_count_when_it_commits(bootstrap, topic):
    offsets = {TopicPartition(topic, 0): 7, TopicPartition(topic, 1): 3}
    with Producer(bootstrap_servers=bootstrap, transactional_id="pyq-eos") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"x", partition=0)
        producer.send_offsets_to_transaction(offsets, "pyq-eos-group")
        producer.abort_transaction()
        with Admin(bootstrap_servers=bootstrap) as admin:
            assert admin.fetch_offsets("pyq-eos-group") == {}
        producer.begin_transaction()
        producer.send(topic, b"y", partition=0)
        producer.send_offsets_to_transaction(offsets, "pyq-eos-group")
        producer.commit_transaction()
    with Admin(bootstrap_servers=bootstrap) as admin:
        wait_for(lambda: {tp: om.offset for tp, om in admin.fetch_offsets("pyq-eos-group").items()}
                 == offsets, 20, what="the transaction's offsets")


def test_calls_in_the_wrong_state_are_refused_and_options_checked(bootstrap, topic):
    with Producer(bootstrap_servers=bootstrap, transactional_id="pyq-x") as p:
        with pytest.raises(TransactionError, match="init_transactions"):
            p.begin_transaction()
        p.init_transactions()
        with pytest.raises(TransactionError, match="inside a transaction"):
            p.send(topic, b"v", partition=0)
        with pytest.raises(TransactionError):
            p.commit_transaction()
    with pytest.raises(ConfigError, match="transactional.id"):
        Producer(bootstrap_servers=bootstrap, transactional_id="pyq-y", acks=1)
    with Producer(bootstrap_servers=bootstrap) as plain:
        with pytest.raises(TransactionError, match="transactional.id"):
            plain.begin_transaction()
