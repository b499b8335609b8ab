"""Kafka's ACL semantics, decision by decision (no broker: the authorizer alone)."""

from __future__ import annotations

from typing import Any

import pytest

from broker_sim.protocol.errors import InvalidRequest
from broker_sim.security.acl import (
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from broker_sim.security.authorizer import Authorizer

T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY


def acl(kind: ResourceType, name: str, principal: str, op: Operation, perm: Permission = ALLOW,
        pattern: PatternType = LIT, host: str = "*") -> AclBinding:
    return AclBinding.create(kind, name, pattern, principal, host, op, perm)


def authorizer(*bindings: AclBinding, super_users: tuple[str, ...] = (), allow: bool = False) -> Authorizer:
    return Authorizer(lambda: 1, lambda: bindings, super_users, allow)


def test_super_users_and_the_no_acl_rule() -> None:
    a = authorizer(acl(T, "t", "User:alice", Operation.READ), super_users=("User:root",))
    assert a.authorize("User:root", "1.2.3.4", Operation.DELETE, T, "t")
    assert not a.authorize("User:bob", "h", Operation.READ, T, "t")       # ACLs exist, none for bob
    assert not a.authorize("User:bob", "h", Operation.READ, T, "other")   # no ACL at all: refused...
    assert authorizer(allow=True).authorize("User:bob", "h", Operation.READ, T, "other")  # ...unless allowed
    lenient = authorizer(acl(T, "t", "User:alice", Operation.READ), allow=True)
    assert not lenient.authorize("User:bob", "h", Operation.READ, T, "t")  # the rule is per resource
    assert lenient.authorize("User:bob", "h", Operation.READ, T, "u")


def test_deny_beats_allow_and_all_covers_every_operation() -> None:
    a = authorizer(acl(T, "logs-", "User:*", Operation.ALL, pattern=PRE),
                   acl(T, "logs-secret", "User:bob", Operation.READ, DENY))
    assert a.authorize("User:bob", "h", Operation.READ, T, "logs-public")
    assert a.authorize("User:bob", "h", Operation.WRITE, T, "logs-secret")
    assert not a.authorize("User:bob", "h", Operation.READ, T, "logs-secret")
    assert a.authorize("User:carol", "h", Operation.READ, T, "logs-secret")
    assert not a.authorize("User:carol", "h", Operation.READ, T, "log")   # not under the prefix


def test_describe_is_implied_by_read_write_delete_alter_but_not_the_reverse() -> None:
    for op in (Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER):
        a = authorizer(acl(T, "t", "User:a", op))
        assert a.authorize("User:a", "h", Operation.DESCRIBE, T, "t")
    a = authorizer(acl(T, "t", "User:a", Operation.DESCRIBE))
    assert not a.authorize("User:a", "h", Operation.READ, T, "t")
    a = authorizer(acl(T, "t", "User:a", Operation.ALTER_CONFIGS))
    assert a.authorize("User:a", "h", Operation.DESCRIBE_CONFIGS, T, "t")
    # a denied Read does not deny Describe that Write implies
    a = authorizer(acl(T, "t", "User:a", Operation.WRITE), acl(T, "t", "User:a", Operation.READ, DENY))
    assert a.authorize("User:a", "h", Operation.DESCRIBE, T, "t")


def test_hosts_wildcards_and_types_are_matched_exactly() -> None:
    a = authorizer(acl(G, "*", "User:a", Operation.READ, host="10.0.0.1"),
                   acl(C, "kafka-cluster", "User:a", Operation.CREATE))
    assert a.authorize("User:a", "10.0.0.1", Operation.READ, G, "any-group")
    assert not a.authorize("User:a", "10.0.0.2", Operation.READ, G, "any-group")
    assert not a.authorize("User:a", "10.0.0.1", Operation.READ, T, "any-group")  # not a topic ACL
    assert a.authorize("User:a", "h", Operation.CREATE, C, "kafka-cluster")


def test_some_topic_write_is_enough_for_an_idempotent_producer() -> None:
    a = authorizer(acl(T, "out-", "User:sink", Operation.WRITE, pattern=PRE))
    assert a.may_on_some("User:sink", "h", Operation.WRITE, T)
    assert not a.may_on_some("User:reader", "h", Operation.WRITE, T)


def test_new_bindings_are_checked_as_kafka_checks_them() -> None:
    bads: list[dict[str, Any]] = [
        dict(resource_type=ResourceType.ANY), dict(pattern=PatternType.MATCH),
        dict(operation=Operation.ANY), dict(permission=Permission.ANY),
        dict(principal="alice"), dict(resource_type=C, name="other-cluster"), dict(host="")]
    for bad in bads:
        fields: dict[str, Any] = dict(resource_type=T, name="t", pattern=LIT, principal="User:a",
                                      host="*", operation=Operation.READ, permission=ALLOW)
        fields.update(bad)
        with pytest.raises(InvalidRequest):
            AclBinding.create(**fields)
    with pytest.raises(InvalidRequest, match="unknown operation 99"):
        AclBinding.create(T, "t", LIT, "User:a", "*", 99, ALLOW)


def test_filters_any_match_literal_and_prefixed() -> None:
    stored = [acl(T, "*", "User:a", Operation.READ), acl(T, "ev", "User:a", Operation.READ, pattern=PRE),
              acl(T, "events", "User:b", Operation.WRITE), acl(G, "events", "User:b", Operation.READ)]

    def names(f: AclFilter) -> list[tuple[str, str]]:
        return [(b.resource_type.name, b.name) for b in stored if f.matches(b)]

    assert len(names(AclFilter())) == 4
    assert names(AclFilter(T, "events", PatternType.MATCH)) == [("TOPIC", "*"), ("TOPIC", "ev"), ("TOPIC", "events")]
    assert names(AclFilter(T, "events", PatternType.ANY)) == [("TOPIC", "events")]
    assert names(AclFilter(T, "ev", PatternType.PREFIXED)) == [("TOPIC", "ev")]
    assert names(AclFilter(principal="User:b", operation=Operation.READ)) == [("GROUP", "events")]
