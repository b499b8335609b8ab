"""DeleteRecords under ACLs (a SASL broker process with pyq's authorizer): it needs Delete
on the topic (TOPIC_AUTHORIZATION_FAILED otherwise, and nothing is deleted); Write or Read
are not enough."""

from __future__ import annotations

import pytest

from broker_sim.protocol.errors import TopicAuthorizationFailed
from broker_sim.security.acl import Operation, ResourceType
from connector.client import Admin, Producer
from tests.security.test_acls import _start, allow, as_user, grant


def test_delete_records_needs_delete_on_the_topic(tmp_path) -> None:
    proc = _start(tmp_path / "broker")
    try:
        with Admin(as_user(proc, "admin")) as admin:
            admin.create_topic("ledger", num_partitions=1)
        producer = Producer(as_user(proc, "admin"))
        try:
            for i in range(10):
                producer.send("ledger", b"%d" % i, partition=0)
            producer.flush(30)
        finally:
            producer.close()

        grant(proc, allow(ResourceType.TOPIC, "ledger", "bob", Operation.WRITE),
              allow(ResourceType.TOPIC, "ledger", "bob", Operation.READ))
        with Admin(as_user(proc, "bob")) as bob:
            with pytest.raises(TopicAuthorizationFailed):
                bob.delete_records({("ledger", 0): 5})
            assert [o.offset for o in bob.list_offsets({("ledger", 0): "earliest"}).values()] == [0]

        grant(proc, allow(ResourceType.TOPIC, "ledger", "bob", Operation.DELETE))
        with Admin(as_user(proc, "bob")) as bob:
            assert list(bob.delete_records({("ledger", 0): 5}).values()) == [5]
            assert [o.offset for o in bob.list_offsets({("ledger", 0): "earliest"}).values()] == [5]
    finally:
        proc.stop()
