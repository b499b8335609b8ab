"""``pyq transactions list | describe`` against a broker process while a librdkafka
transactional producer holds a transaction open, then after it commits."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from tests.cli.support import pyq_here
from tests.wire import create_topic, wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
def broker(broker_factory):
    b = broker_factory(overrides={"transaction.state.log.num.partitions": "2"})
    create_topic(b.port, "orders", partitions=2)
    return b


def test_an_open_transaction_is_listed_and_described(broker, monkeypatch):
    def ok(*args: str) -> list[list[str]]:
        out = pyq_here(monkeypatch, *args, "--bootstrap-server", broker.bootstrap_servers)
        assert out.returncode == 0, out.stderr
        return [line.split() for line in out.stdout.splitlines()]

    producer = Producer({"bootstrap.servers": broker.bootstrap_servers,
                         "transactional.id": "orders-writer"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("orders", b"o1", partition=0)
    producer.produce("orders", b"o2", partition=1)
    assert producer.flush(30) == 0

    listed = ok("transactions", "list", "--state", "Ongoing")
    assert listed[0] == ["TRANSACTIONAL-ID", "PRODUCER-ID", "STATE", "COORDINATOR"]
    assert [row[0] for row in listed[1:]] == ["orders-writer"] and listed[1][2] == "Ongoing"
    shown = ok("transactions", "describe", "orders-writer")
    assert shown[1][0:2] == ["orders-writer", "Ongoing"]
    assert shown[1][6] == "orders-0,orders-1"
    assert int(shown[1][5]) >= 0  # open for this long
    assert ok("transactions", "list", "--min-duration-ms", "3600000")[1:] == []

    producer.commit_transaction(30)
    wait_for(lambda: ok("transactions", "describe", "orders-writer")[1][1] == "CompleteCommit",
             20, what="the commit to complete")
    assert ok("transactions", "list", "--state", "Ongoing")[1:] == []
    missing = pyq_here(monkeypatch, "transactions", "describe", "nobody",
                       "--bootstrap-server", broker.bootstrap_servers)
    assert missing.returncode == 1 and "TransactionalIdNotFound" in missing.stderr
