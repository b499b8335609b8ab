"""ACLs enforced by a broker process: what each API checks, managed three ways (pyq's CLI,
kafka-python's admin, librdkafka's admin), and kept across a restart."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AclBinding as CkAclBinding
from confluent_kafka.admin import AclBindingFilter as CkAclBindingFilter
from confluent_kafka.admin import AclOperation, AclPermissionType, AdminClient, ResourcePatternType
from confluent_kafka.admin import ResourceType as CkResourceType

from broker_sim.process import BrokerProcess
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    ClusterAuthorizationFailed,
    GroupAuthorizationFailed,
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
from tests.cli.support import pyq_here

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaAdminClient
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KpResourceType

USERS = {"admin": "admin-pw", "alice": "alice-pw", "bob": "bob-pw"}


def _start(directory: Path) -> BrokerProcess:
    proc = BrokerProcess(directory, overrides={
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "authorizer.class.name": "pyq",
        "super.users": "User:admin", "auto.create.topics.enable": "false"},
        add_scram=[f"SCRAM-SHA-256=[name={u},password={p}]" for u, p in USERS.items()])
    return proc.start()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = _start(tmp_path_factory.mktemp("acls"))
    with Admin(as_user(proc, "admin")) as admin:
        for topic in ("orders", "logs-public", "logs-secret", "audit"):
            admin.create_topic(topic, num_partitions=1)
    yield proc
    proc.stop()


def as_user(proc: BrokerProcess, user: str) -> dict[str, Any]:
    return {"bootstrap.servers": proc.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user, "sasl.password": USERS[user]}


def grant(proc: BrokerProcess, *bindings: AclBinding) -> None:
    with Admin(as_user(proc, "admin")) as admin:
        admin.create_acls(bindings)


def allow(kind: ResourceType, name: str, user: str, op: Operation, pattern: PatternType = PatternType.LITERAL,
          permission: Permission = Permission.ALLOW) -> AclBinding:
    return AclBinding.create(kind, name, pattern, f"User:{user}", "*", op, permission)


def _end_offset(proc: BrokerProcess, topic: str) -> int:
    with Admin(as_user(proc, "admin")) as admin:
        return next(iter(admin.list_offsets({(topic, 0): "latest"}).values())).offset


def test_write_needs_write_and_nothing_is_appended_without_it(broker: BrokerProcess) -> None:
    grant(broker, allow(ResourceType.TOPIC, "orders", "alice", Operation.READ))  # may see, not write
    before = _end_offset(broker, "orders")
    producer = Producer(as_user(broker, "alice"), enable_idempotence=False, acks=1)
    try:
        future = producer.send("orders", b"not allowed")
        with pytest.raises(TopicAuthorizationFailed):
            future.get(10)
    finally:
        producer.close()
    assert _end_offset(broker, "orders") == before  # nothing appended

    grant(broker, allow(ResourceType.TOPIC, "orders", "alice", Operation.WRITE))
    producer = Producer(as_user(broker, "alice"))  # idempotent: Write on some topic is enough
    try:
        assert producer.send("orders", b"allowed").get(10).offset == before
    finally:
        producer.close()


def test_idempotent_producer_without_any_write_is_refused_at_once(broker: BrokerProcess) -> None:
    producer = Producer(as_user(broker, "bob"))
    try:
        with pytest.raises((ClusterAuthorizationFailed, TopicAuthorizationFailed)):
            producer.send("audit", b"x").get(10)
    finally:
        producer.close()


def test_metadata_lists_only_what_the_principal_may_describe(broker: BrokerProcess) -> None:
    grant(broker, allow(ResourceType.TOPIC, "logs-", "bob", Operation.READ, PatternType.PREFIXED),
          allow(ResourceType.TOPIC, "logs-secret", "bob", Operation.READ, permission=Permission.DENY))
    with Admin(as_user(broker, "bob")) as admin:
        # Describe comes with the prefixed Read; a denied Read does not deny Describe (Kafka's rule)
        assert admin.list_topics() == {"logs-public", "logs-secret"}
    grant(broker, allow(ResourceType.TOPIC, "logs-secret", "bob", Operation.ALL, permission=Permission.DENY))
    with Admin(as_user(broker, "bob")) as admin:
        assert admin.list_topics() == {"logs-public"}  # denied everything: not even listed
    with Admin(as_user(broker, "admin")) as admin:
        assert {"orders", "logs-public", "logs-secret", "audit"} <= set(admin.list_topics())
    with Fetcher(as_user(broker, "bob")) as fetcher, pytest.raises(TopicAuthorizationFailed):
        list(fetcher.iter_records("logs-secret", 0, 0, 1, timeout_ms=5000))


def _metadata_v12(proc: BrokerProcess, user: str, topics: list[dict] | None) -> Any:
    """A Metadata request through our client, which negotiates v12 with the broker."""
    with Admin(as_user(proc, user)) as admin:
        sync = admin._sync
        body = {"topics": topics, "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False}
        return sync.request_any(ApiKey.METADATA, body, sync.deadline(10_000))


def test_metadata_by_id_does_not_tell_the_name_without_describe(broker: BrokerProcess) -> None:
    [audit] = _metadata_v12(broker, "admin", [{"name": "audit"}]).topics
    assert audit.error_code == 0 and audit.topic_id != uuid.UUID(int=0)
    # bob may not describe "audit": by name, nothing about it is told, not even its id ...
    [t] = _metadata_v12(broker, "bob", [{"name": "audit"}]).topics
    assert (t.error_code, t.name, t.topic_id) == (TopicAuthorizationFailed.code, "audit", uuid.UUID(int=0))
    # ... and by id, the id he already has comes back without the name
    [t] = _metadata_v12(broker, "bob", [{"topic_id": audit.topic_id, "name": None}]).topics
    assert (t.error_code, t.name, t.topic_id, t.partitions) == \
        (TopicAuthorizationFailed.code, None, audit.topic_id, [])
    # all topics: "audit" is left out, and every listed topic has its id
    listed = _metadata_v12(broker, "bob", None).topics
    assert "audit" not in {t.name for t in listed}
    assert all(t.topic_id != uuid.UUID(int=0) for t in listed)


def test_groups_topics_creation_and_acl_management_are_checked(broker: BrokerProcess) -> None:
    with Admin(as_user(broker, "alice")) as admin:
        with pytest.raises(GroupAuthorizationFailed):
            admin.commit_offsets("alice-group", {("orders", 0): OffsetAndMetadata(1)})
        with pytest.raises(TopicAuthorizationFailed):
            admin.create_topic("alice-topic", num_partitions=1)
        with pytest.raises(ClusterAuthorizationFailed):
            admin.describe_acls()
    grant(broker, allow(ResourceType.GROUP, "alice-", "alice", Operation.READ, PatternType.PREFIXED),
          allow(ResourceType.CLUSTER, "kafka-cluster", "alice", Operation.CREATE))
    with Admin(as_user(broker, "alice")) as admin:
        admin.commit_offsets("alice-group", {("orders", 0): OffsetAndMetadata(1)})
        assert admin.fetch_offsets("alice-group")[next(iter(admin.fetch_offsets("alice-group")))].offset == 1
        admin.create_topic("alice-topic", num_partitions=1)


def test_acls_through_the_cli_kafka_python_and_librdkafka(broker: BrokerProcess,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    conn = ["--bootstrap-server", broker.bootstrap_servers, "-X", "security.protocol=SASL_PLAINTEXT",
            "-X", "sasl.mechanism=SCRAM-SHA-256", "-X", "sasl.username=admin", "-X", "sasl.password=admin-pw"]
    added = pyq_here(monkeypatch, "acls", "add", "--allow-principal", "User:carol", "--operation", "Read",
                     "--operation", "Describe", "--topic", "audit", *conn)
    assert added.returncode == 0, added.stderr
    listed = pyq_here(monkeypatch, "acls", "list", "--principal", "User:carol", *conn).stdout.splitlines()
    assert [line.split() for line in listed[1:]] == [["User:carol", "*", "ALLOW", "READ", "TOPIC", "audit", "LITERAL"],
                                                     ["User:carol", "*", "ALLOW", "DESCRIBE", "TOPIC", "audit", "LITERAL"]]

    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, security_protocol="SASL_PLAINTEXT",
                          sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="admin",
                          sasl_plain_password="admin-pw")
    try:
        created = kp.create_acls([ACL("User:dave", "*", ACLOperation.WRITE, ACLPermissionType.ALLOW,
                                      ResourcePattern(KpResourceType.TOPIC, "audit",
                                                      ACLResourcePatternType.LITERAL))])
        assert not created["failed"]
        found, error = kp.describe_acls(ACLFilter("User:dave", None, ACLOperation.ANY, ACLPermissionType.ANY,
                                                  ResourcePatternFilter(KpResourceType.ANY, None,
                                                                        ACLResourcePatternType.ANY)))
        assert [(a.principal, a.operation, a.resource_pattern.resource_name) for a in found] == \
            [("User:dave", ACLOperation.WRITE, "audit")]
    finally:
        kp.close()

    ck = AdminClient({"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                      "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "admin", "sasl.password": "admin-pw"})
    ck.create_acls([CkAclBinding(CkResourceType.GROUP, "erin-g", ResourcePatternType.PREFIXED, "User:erin",
                                 "*", AclOperation.READ, AclPermissionType.ALLOW)])[
        CkAclBinding(CkResourceType.GROUP, "erin-g", ResourcePatternType.PREFIXED, "User:erin",
                     "*", AclOperation.READ, AclPermissionType.ALLOW)].result(30)
    anything: Any = None  # matches any name, any host (confluent-kafka's stubs say str)
    any_filter = CkAclBindingFilter(CkResourceType.ANY, anything, ResourcePatternType.ANY, "User:erin",
                                    anything, AclOperation.ANY, AclPermissionType.ANY)
    assert [(b.name, b.resource_pattern_type) for b in ck.describe_acls(any_filter).result(30)] == \
        [("erin-g", ResourcePatternType.PREFIXED)]
    deleted = ck.delete_acls([any_filter])[any_filter].result(30)
    assert [b.restype for b in deleted] == [CkResourceType.GROUP]

    removed = pyq_here(monkeypatch, "acls", "remove", "--principal", "User:carol", *conn)
    assert removed.returncode == 0 and len(removed.stdout.splitlines()) == 3  # header + 2
    with Admin(as_user(broker, "admin")) as admin:
        assert admin.describe_acls(AclFilter(principal="User:carol")) == []


def test_acls_survive_a_restart(tmp_path: Path) -> None:
    proc = _start(tmp_path / "restart")
    try:
        grant(proc, allow(ResourceType.TOPIC, "kept", "alice", Operation.READ))
        proc.stop()
        proc.start()
        with Admin(as_user(proc, "admin")) as admin:
            kept = admin.describe_acls()
        assert [(b.principal, b.name, b.operation) for b in kept] == [("User:alice", "kept", Operation.READ)]
    finally:
        proc.stop()
