"""pyq's authorizer: Kafka's ACL semantics over the cluster image's bindings.

A request of ``principal`` from ``host`` to do ``operation`` on a resource is decided so:

1. a principal in ``super.users`` may do anything;
2. the bindings that apply are those of the resource's type whose pattern covers its name
   (LITERAL equal or ``*``, PREFIXED a prefix) and whose principal (or ``User:*``) and host
   (or ``*``) match the request's;
3. any applicable DENY of the operation (or ALL) refuses — deny beats allow;
4. any applicable ALLOW of the operation, of ALL, or of an operation that implies it
   (Describe from Read/Write/Delete/Alter; DescribeConfigs from AlterConfigs) allows;
5. a resource no binding at all applies to (for anyone) is allowed only with
   ``allow.everyone.if.no.acl.found=true``; otherwise refused.

The bindings are indexed by resource type once per cluster-image version, so a decision
looks at the few bindings of its type. Threading: called from any request handler; the
index is rebuilt under a lock and swapped in whole.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from .acl import IMPLIED_BY, WILDCARD, AclBinding, Operation, PatternType, Permission, ResourceType

ANY_USER = "User:*"


class Authorizer:
    def __init__(self, version: Callable[[], int], bindings: Callable[[], Iterable[AclBinding]],
                 super_users: Iterable[str] = (), allow_if_no_acl: bool = False) -> None:
        """``version()`` is the cluster image's version, ``bindings()`` its bindings (read
        only when the version moved)."""
        self._image_version = version
        self._bindings = bindings
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._lock = threading.Lock()
        self._version = -1
        self._index: dict[ResourceType, list[AclBinding]] = {}

    def _by_type(self, resource_type: ResourceType) -> list[AclBinding]:
        version = self._image_version()
        if version != self._version:
            with self._lock:
                index: dict[ResourceType, list[AclBinding]] = {}
                for b in self._bindings():
                    index.setdefault(b.resource_type, []).append(b)
                self._index, self._version = index, version
        return self._index.get(resource_type, [])

    def authorize(self, principal: str, host: str, operation: Operation,
                  resource_type: ResourceType, name: str) -> bool:
        if principal in self.super_users:
            return True
        applicable = [b for b in self._by_type(resource_type)
                      if (b.name == name or b.name == WILDCARD) and b.pattern is PatternType.LITERAL
                      or b.pattern is PatternType.PREFIXED and name.startswith(b.name)]
        if not applicable:
            return self.allow_if_no_acl
        mine = [b for b in applicable if b.principal in (principal, ANY_USER)
                and b.host in (host, WILDCARD)]
        if any(b.permission is Permission.DENY and b.operation in (operation, Operation.ALL)
               for b in mine):
            return False
        granting = (operation, Operation.ALL, *IMPLIED_BY.get(operation, ()))
        return any(b.permission is Permission.ALLOW and b.operation in granting for b in mine)

    def may_on_some(self, principal: str, host: str, operation: Operation,
                    resource_type: ResourceType) -> bool:
        """Whether ``principal`` may do ``operation`` on at least one resource of the type
        (an ALLOW of it or of ALL, on any name), as an idempotent producer needs Write on
        *some* topic. With no binding of the type at all, ``allow.everyone.if.no.acl.found``
        decides."""
        if principal in self.super_users:
            return True
        bindings = self._by_type(resource_type)
        if not bindings:
            return self.allow_if_no_acl
        return any(b.permission is Permission.ALLOW and b.operation in (operation, Operation.ALL)
                   and b.principal in (principal, ANY_USER) and b.host in (host, WILDCARD)
                   for b in bindings)
