"""``pyq transactions list | describe`` against a broker while a librdkafka transactional
producer holds a transaction open, then after it commits — on pyq's broker process, then on
Apache Kafka (``broker_under_test``), the same test on both. The broker is the module's (the
session's, on Kafka), so lists are looked at for this module's transactional ids only."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from connector.client import Admin
from tests.cli.support import pyq_here
from tests.wire import wait_for

pytestmark = pytest.mark.integration


TOPIC, TXN = "ctx-orders", "ctx-orders-writer"


@pytest.fixture(scope="module")
def broker(broker_under_test):
    with Admin(bootstrap_servers=broker_under_test.bootstrap_servers) as admin:
        admin.create_topic(TOPIC, 2, 1)
    return broker_under_test


def ours(rows: list[list[str]]) -> list[list[str]]:
    """The rows of this module's transactional ids in a ``pyq transactions list`` table."""
    return [row for row in rows[1:] if row[0].startswith("ctx-")]


def test_an_open_transaction_is_listed_and_described(broker, monkeypatch):
    def ok(*args: str) -> list[list[str]]:
        out = pyq_here(monkeypatch, *args, "--bootstrap-server", broker.bootstrap_servers)
        assert out.returncode == 0, out.stderr
        return [line.split() for line in out.stdout.splitlines()]

    producer = Producer({"bootstrap.servers": broker.bootstrap_servers,
                         "transactional.id": TXN})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(TOPIC, b"o1", partition=0)
    producer.produce(TOPIC, b"o2", partition=1)
    assert producer.flush(30) == 0

    listed = ok("transactions", "list", "--state", "Ongoing")
    assert listed[0] == ["TRANSACTIONAL-ID", "PRODUCER-ID", "STATE", "COORDINATOR"]
    assert [row[0] for row in ours(listed)] == [TXN] and ours(listed)[0][2] == "Ongoing"
    shown = ok("transactions", "describe", TXN)
    assert shown[1][0:2] == [TXN, "Ongoing"]
    assert shown[1][6] == f"{TOPIC}-0,{TOPIC}-1"
    assert int(shown[1][5]) >= 0  # open for this long
    assert ours(ok("transactions", "list", "--min-duration-ms", "3600000")) == []

    producer.commit_transaction(30)
    wait_for(lambda: ok("transactions", "describe", TXN)[1][1] == "CompleteCommit",
             20, what="the commit to complete")
    assert ours(ok("transactions", "list", "--state", "Ongoing")) == []
    missing = pyq_here(monkeypatch, "transactions", "describe", "ctx-nobody",
                       "--bootstrap-server", broker.bootstrap_servers)
    assert missing.returncode == 1 and "TransactionalIdNotFound" in missing.stderr
