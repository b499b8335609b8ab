"""The Admin's SCRAM users and ACLs on a secured broker: pyq's (one broker with its
authorizer), then Apache Kafka's (the session's node, ``StandardAuthorizer``), the same tests
on both (``broker_under_test``). Both listen on SASL_SSL with SCRAM-SHA-512, ``admin`` a
super user, and allow nothing an ACL does not (``allow.everyone.if.no.acl.found=false``).

A user the admin creates logs in with its password, and no longer with the old one once
it is changed, nor at all once deleted; ACLs the admin creates are described back, filtered
(``MATCH`` finds the prefixed binding that applies to a name), let their principal do what
they allow and nothing else, and once deleted let it do nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from broker_sim.protocol.errors import (
    ClusterAuthorizationFailed,
    KafkaError,
    ResourceNotFound,
    TopicAuthorizationFailed,
)
from broker_sim.security.acl import (
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from connector.client import Admin, Fetcher, OffsetAndMetadata, Producer
from connector.client.errors import ClientError
from tests.secured import Secured, secured_broker_under_test
from tests.wire import wait_for

pytestmark = pytest.mark.integration

MECHANISM = "SCRAM-SHA-512"


@pytest.fixture(scope="module", params=["pyq", "kafka"])
def broker_under_test(request: pytest.FixtureRequest,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    """A secured pyq broker with its authorizer, then the session's secured Apache Kafka."""
    yield from secured_broker_under_test(request, tmp_path_factory)


def as_user(broker: Secured, user: str, password: str) -> dict[str, Any]:
    """The admin's connection options with another user's credentials."""
    return {**broker.options("admin"), "sasl.username": user, "sasl.password": password,
            "default.api.timeout.ms": 10_000}


def logs_in(options: dict[str, Any]) -> bool:
    """Whether ``options``' user is let in: a Metadata request answered (whatever it lists)."""
    try:
        with Admin(options) as admin:
            admin.list_topics()
        return True
    except (KafkaError, ClientError):
        return False


def allow(kind: ResourceType, name: str, principal: str, op: Operation,
          pattern: PatternType = PatternType.LITERAL) -> AclBinding:
    return AclBinding.create(kind, name, pattern, principal, "*", op, Permission.ALLOW)


def test_scram_users_are_created_changed_and_deleted(broker_under_test: Secured) -> None:
    user = "admin-sec-carol"
    with Admin(broker_under_test.options("admin")) as admin:

        def described() -> dict | None:
            try:
                return admin.describe_users([user])
            except ResourceNotFound:
                return None

        admin.upsert_user(user, "first-pw", MECHANISM, iterations=8192)
        # on Kafka a broker's image has the change once it catches up with the controller
        wait_for(lambda: described() == {user: {MECHANISM: 8192}}, 30, what=f"{user} described")
        assert {user, "admin", "alice", "bob"} <= set(admin.describe_users())
        # credentials reach the listener through the controller: wait until they are there
        wait_for(lambda: logs_in(as_user(broker_under_test, user, "first-pw")), 30,
                 what=f"{user} logs in")
        assert not logs_in(as_user(broker_under_test, user, "wrong-pw"))

        admin.upsert_user(user, "second-pw", MECHANISM)  # the default 4096 iterations
        wait_for(lambda: described() == {user: {MECHANISM: 4096}}, 30,
                 what=f"{user} described with 4096 iterations")
        wait_for(lambda: logs_in(as_user(broker_under_test, user, "second-pw")), 30,
                 what=f"{user} logs in with the new password")
        assert not logs_in(as_user(broker_under_test, user, "first-pw"))

        admin.delete_user(user, MECHANISM)
        wait_for(lambda: described() is None, 30, what=f"{user} no longer described")
        with pytest.raises(ResourceNotFound):
            admin.delete_user(user, MECHANISM)
        wait_for(lambda: not logs_in(as_user(broker_under_test, user, "second-pw")), 30,
                 what=f"{user} refused once deleted")
        with pytest.raises(ValueError, match="mechanism"):
            admin.upsert_user(user, "pw", "PLAIN")


def test_acls_are_created_described_enforced_and_deleted(broker_under_test: Secured) -> None:
    user, password = "admin-sec-dave", "dave-pw"
    principal = f"User:{user}"
    topic, other, group = "admin-sec-orders", "admin-sec-secret", "admin-sec-etl"
    bindings = {allow(ResourceType.TOPIC, topic, principal, Operation.READ),
                allow(ResourceType.GROUP, "admin-sec-", principal, Operation.READ, PatternType.PREFIXED)}
    with Admin(broker_under_test.options("admin")) as admin:
        admin.upsert_user(user, password, MECHANISM)
        for name in (topic, other):
            admin.create_topic(name, 1, 1)
        with Producer(broker_under_test.options("admin")) as producer:
            for name in (topic, other):
                producer.send(name, b"r0", partition=0)
                producer.send(name, b"r1", partition=0)

        admin.create_acls(bindings)
        # Kafka answers CreateAcls once the controller committed them; each broker's
        # authorizer sees them when its metadata image catches up, so describe until then
        wait_for(lambda: set(admin.describe_acls(AclFilter(principal=principal))) == bindings, 30,
                 what="the created ACLs described")
        # MATCH: the bindings that apply to the group name, the prefixed one among them
        assert wait_for(lambda: admin.describe_acls(AclFilter(ResourceType.GROUP, f"{group}-1",
                                                              PatternType.MATCH, principal=principal)),
                        30, what="the prefixed ACL matched") == \
            [allow(ResourceType.GROUP, "admin-sec-", principal, Operation.READ, PatternType.PREFIXED)]
        assert admin.describe_acls(AclFilter(ResourceType.TOPIC, other, principal=principal)) == []

    dave = as_user(broker_under_test, user, password)
    wait_for(lambda: logs_in(dave), 30, what=f"{user} logs in")

    def reads(name: str) -> list[bytes | None] | None:
        try:
            with Fetcher(dave) as fetcher:
                return [r.value for r in fetcher.iter_records(name, 0, 0, 2, timeout_ms=5000)]
        except TopicAuthorizationFailed:
            return None

    assert wait_for(lambda: reads(topic), 30, what=f"{user} reads {topic}") == [b"r0", b"r1"]
    assert reads(other) is None
    with Admin(dave) as admin:
        admin.commit_offsets(group, {(topic, 0): OffsetAndMetadata(2, "q")})
        assert admin.fetch_offsets(group) == {(topic, 0): OffsetAndMetadata(2, "q")}
        assert admin.list_topics() == {topic}  # Describe comes with Read; nothing else is listed
        with pytest.raises(ClusterAuthorizationFailed):
            admin.describe_acls()
        with pytest.raises(ClusterAuthorizationFailed):
            admin.create_acls([allow(ResourceType.TOPIC, other, principal, Operation.READ)])
    with Producer({**dave, "max.block.ms": 10_000}, enable_idempotence=False, acks=1) as producer:
        with pytest.raises(TopicAuthorizationFailed):
            producer.send(topic, b"not allowed").get(10)

    with Admin(broker_under_test.options("admin")) as admin:
        assert set(admin.delete_acls([AclFilter(principal=principal)])) == bindings
        wait_for(lambda: admin.describe_acls(AclFilter(principal=principal)) == [], 30,
                 what="the deleted ACLs gone from describe")
        assert admin.delete_acls([AclFilter(principal=principal)]) == []
        wait_for(lambda: reads(topic) is None, 30, what=f"{user} refused once the ACLs are gone")
        admin.delete_user(user, MECHANISM)
