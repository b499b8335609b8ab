"""Kafka's ACL model: bindings (what is stored) and filters (what Describe/Delete match).

A binding says: *principal* from *host* is ALLOWed or DENYed *operation* on resources of
*type* whose name equals (LITERAL; ``*`` is every name) or starts with (PREFIXED)
*name*. The numbers are Kafka's own, as they travel in CreateAcls/DescribeAcls/DeleteAcls::

    resource type  ANY 1, TOPIC 2, GROUP 3, CLUSTER 4, TRANSACTIONAL_ID 5
    pattern type   ANY 1, MATCH 2, LITERAL 3, PREFIXED 4
    operation      ANY 1, ALL 2, READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8,
                   CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12
    permission     ANY 1, DENY 2, ALLOW 3

A filter matches bindings field by field (ANY / None match everything); its pattern type
MATCH also finds the bindings that would *apply* to a name (LITERAL equal or ``*``,
PREFIXED a prefix of it), as ``kafka-acls --resource-pattern-type match`` does.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass
from typing import Any

from ..protocol.errors import InvalidRequest

CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"


class ResourceType(enum.IntEnum):
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5


class PatternType(enum.IntEnum):
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(enum.IntEnum):
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class Permission(enum.IntEnum):
    ANY = 1
    DENY = 2
    ALLOW = 3


#: An ALLOW of the key grants the values too (Kafka: Describe comes with Read, Write,
#: Delete and Alter; DescribeConfigs with AlterConfigs).
IMPLIED_BY: dict[Operation, tuple[Operation, ...]] = {
    Operation.DESCRIBE: (Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER),
    Operation.DESCRIBE_CONFIGS: (Operation.ALTER_CONFIGS,),
}


def _enum(kind: type[enum.IntEnum], value: int, what: str) -> Any:
    try:
        return kind(value)
    except ValueError:
        raise InvalidRequest(f"unknown {what} {value}") from None


@dataclass(frozen=True)
class AclBinding:
    resource_type: ResourceType
    name: str
    pattern: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    @classmethod
    def create(cls, resource_type: int, name: str, pattern: int, principal: str, host: str,
               operation: int, permission: int) -> AclBinding:
        """A binding to store, checked as Kafka checks a new ACL (InvalidRequest if not)."""
        binding = cls(_enum(ResourceType, resource_type, "resource type"), name,
                      _enum(PatternType, pattern, "pattern type"), principal, host,
                      _enum(Operation, operation, "operation"),
                      _enum(Permission, permission, "permission type"))
        if binding.resource_type is ResourceType.ANY:
            raise InvalidRequest("an ACL needs a concrete resource type, not ANY")
        if binding.pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidRequest(f"an ACL's pattern type must be LITERAL or PREFIXED, not {binding.pattern.name}")
        if binding.operation is Operation.ANY or binding.permission is Permission.ANY:
            raise InvalidRequest("an ACL needs a concrete operation and permission, not ANY")
        kind, sep, who = principal.partition(":")
        if not sep or not kind or not who:
            raise InvalidRequest(f"principal {principal!r} is not TYPE:NAME (e.g. User:alice)")
        if not name or not host:
            raise InvalidRequest("an ACL needs a resource name and a host ('*' for any)")
        if binding.resource_type is ResourceType.CLUSTER and name != CLUSTER_NAME:
            raise InvalidRequest(f"the cluster resource is named {CLUSTER_NAME!r}, not {name!r}")
        return binding

    def to_json(self) -> dict[str, Any]:
        return {k: int(v) if isinstance(v, enum.IntEnum) else v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> AclBinding:
        return cls(ResourceType(raw["resource_type"]), raw["name"], PatternType(raw["pattern"]),
                   raw["principal"], raw["host"], Operation(raw["operation"]),
                   Permission(raw["permission"]))


@dataclass(frozen=True)
class AclFilter:
    """What DescribeAcls and DeleteAcls match (None: any value)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: Operation = Operation.ANY
    permission: Permission = Permission.ANY

    @classmethod
    def create(cls, resource_type: int, name: str | None, pattern: int, principal: str | None,
               host: str | None, operation: int, permission: int) -> AclFilter:
        return cls(_enum(ResourceType, resource_type, "resource type"), name,
                   _enum(PatternType, pattern, "pattern type"), principal, host,
                   _enum(Operation, operation, "operation"),
                   _enum(Permission, permission, "permission type"))

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type is not ResourceType.ANY and self.resource_type != b.resource_type:
            return False
        if not self._matches_pattern(b):
            return False
        return ((self.principal is None or self.principal == b.principal)
                and (self.host is None or self.host == b.host)
                and (self.operation is Operation.ANY or self.operation == b.operation)
                and (self.permission is Permission.ANY or self.permission == b.permission))

    def _matches_pattern(self, b: AclBinding) -> bool:
        if self.pattern is PatternType.MATCH:
            if self.name is None:
                return True
            if b.pattern is PatternType.LITERAL:
                return b.name in (self.name, WILDCARD)
            return self.name.startswith(b.name)
        if self.pattern is not PatternType.ANY and self.pattern != b.pattern:
            return False
        return self.name is None or self.name == b.name
