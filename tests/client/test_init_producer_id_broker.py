"""pyq's idempotent producer against a broker that refuses its InitProducerId: a pyq broker
process with its authorizer, then the session's secured Apache Kafka (``broker_under_test``).

The broker runs an authorizer: ``reader`` may describe (and so look up) the topic but
write nothing, so InitProducerId is answered CLUSTER_AUTHORIZATION_FAILED — an error that
asking again will not change. Every record fails at once with it, named, long before its
delivery timeout; later sends fail the same way and flush raises it. Once Write is
granted, a new producer gets its id (InitProducerId v4) and writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from broker_sim.process import BrokerProcess
from broker_sim.protocol.errors import ClusterAuthorizationFailed
from broker_sim.security.acl import (
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from connector.client import Admin, Producer
from tests.wire import wait_for

USERS = {"admin": "admin-pw", "reader": "reader-pw"}
TOPIC = "pid-refused"
DELIVERY_TIMEOUT_MS = 120_000


#: client options for a user: "admin" (a super user) or "reader"
Users = Callable[[str], dict[str, Any]]


def as_user(proc: BrokerProcess, user: str) -> dict[str, str]:
    return {"bootstrap.servers": proc.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user, "sasl.password": USERS[user]}


def allow(user: str, op: Operation) -> AclBinding:
    return AclBinding.create(ResourceType.TOPIC, TOPIC, PatternType.LITERAL, f"User:{user}", "*",
                             op, Permission.ALLOW)


def _setup(users: Users) -> None:
    with Admin(users("admin")) as admin:
        admin.create_topic(TOPIC, num_partitions=1)
        admin.create_acls([allow("reader", Operation.DESCRIBE)])


@pytest.fixture(scope="module", params=["pyq", "kafka"])
def broker_under_test(request: pytest.FixtureRequest,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[Users]:
    """A SASL pyq broker with its authorizer, then the session's secured Apache Kafka (SASL_SSL,
    ACLs by StandardAuthorizer), on which the admin first creates the user ``reader``."""
    if request.param == "kafka":
        kafka = request.getfixturevalue("kafka")
        reader = {**kafka.client_options("admin"), "sasl.username": "reader",
                  "sasl.password": USERS["reader"]}
        with Admin(kafka.client_options("admin")) as admin:
            admin.upsert_user("reader", USERS["reader"], reader["sasl.mechanism"])

        def users(user: str) -> dict[str, Any]:
            return reader if user == "reader" else kafka.client_options(user)

        def logs_in() -> bool:
            try:
                with Admin({**reader, "default.api.timeout.ms": 5000}) as admin:
                    admin.list_topics()
                return True
            except Exception:  # not yet known to the listener
                return False

        wait_for(logs_in, 30, what="the new user logs in")
        _setup(users)
        yield users
        return
    proc = BrokerProcess(tmp_path_factory.mktemp("pid-refused"), overrides={
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "authorizer.class.name": "pyq",
        "super.users": "User:admin", "auto.create.topics.enable": "false"},
        add_scram=[f"SCRAM-SHA-256=[name={u},password={p}]" for u, p in USERS.items()])
    proc.start()
    try:
        _setup(lambda user: as_user(proc, user))
        yield lambda user: as_user(proc, user)
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def broker(broker_under_test: Users) -> Users:
    return broker_under_test


def _assert_names_the_refusal(error: BaseException | None) -> None:
    assert isinstance(error, ClusterAuthorizationFailed), repr(error)
    text = str(error)
    assert "InitProducerId v4" in text and "CLUSTER_AUTHORIZATION_FAILED" in text, text
    assert "IdempotentWrite" in text, text


def test_a_refused_producer_id_fails_every_send_at_once(broker: Users) -> None:
    producer = Producer(broker("reader"), enable_idempotence=True,
                        delivery_timeout_ms=DELIVERY_TIMEOUT_MS, linger_ms=5)
    try:
        start = time.monotonic()
        pending = [producer.send(TOPIC, b"v%d" % i) for i in range(5)]
        for future in pending:
            _assert_names_the_refusal(future.exception(timeout=30))
        assert time.monotonic() - start < 10, "records should fail at once, not at their timeout"

        called: list = []
        later = producer.send(TOPIC, b"later", callback=lambda md, e: called.append((md, e)))
        assert later.done()
        _assert_names_the_refusal(later.exception(0))
        assert len(called) == 1 and called[0][0] is None
        _assert_names_the_refusal(called[0][1])

        with pytest.raises(ClusterAuthorizationFailed, match="InitProducerId"):
            producer.flush(timeout=10)
    finally:
        producer.close(timeout=10)


def test_with_write_granted_a_new_producer_gets_its_id_and_writes(broker: Users) -> None:
    with Admin(broker("admin")) as admin:
        admin.create_acls([allow("reader", Operation.WRITE)])
        # on Kafka a broker's authorizer has the ACL once its metadata image catches up
        wait_for(lambda: allow("reader", Operation.WRITE) in admin.describe_acls(
            AclFilter(principal="User:reader")), 30, what="the Write ACL described")
    producer = Producer(broker("reader"), enable_idempotence=True)
    try:
        assert producer.send(TOPIC, b"allowed").get(30).offset >= 0
        producer.flush(timeout=10)
        assert producer.sender.fatal_error is None
        assert producer.idempotence is not None and producer.idempotence.has_producer_id
    finally:
        producer.close(timeout=10)
