"""``pyq acls add | list | remove``, with ``kafka-acls``'s flags.

    pyq acls add --allow-principal User:alice --operation Read --operation Describe --topic events
    pyq acls add --deny-principal User:bob --operation Write --topic logs- --resource-pattern-type prefixed
    pyq acls add --allow-principal User:etl --operation Read --group etl
    pyq acls list [--topic events] [--principal User:alice]
    PRINCIPAL   HOST  PERMISSION  OPERATION  RESOURCE  NAME    PATTERN
    User:alice  *     ALLOW       READ       TOPIC     events  LITERAL
    pyq acls remove --principal User:bob --topic logs- --resource-pattern-type prefixed

A resource is one of ``--topic NAME``, ``--group NAME``, ``--transactional-id NAME`` or
``--cluster``; ``*`` as a name is every resource of that type. ``list`` and ``remove``
take the same flags as a filter (what is not given matches everything; pattern type
``match`` lists every binding that applies to the named resource). The brokers enforce
ACLs only with ``authorizer.class.name`` set (``super.users`` bypass them).
"""

from __future__ import annotations

import argparse
from typing import Any

from broker_sim.security.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

from .args import client_options, client_parent
from .errors import CommandError
from .output import add_output_options, print_table

OPERATIONS = [op.name.title().replace("_", "") for op in Operation if op is not Operation.ANY]


def _operation(text: str) -> Operation:
    key = text.replace("-", "").replace("_", "").upper()
    for op in Operation:
        if op.name.replace("_", "") == key and op is not Operation.ANY:
            return op
    raise argparse.ArgumentTypeError(f"{text!r} is not an operation: one of {', '.join(OPERATIONS)}")


def _resource_args(p: argparse.ArgumentParser, required: bool) -> None:
    which = p.add_mutually_exclusive_group(required=required)
    which.add_argument("--topic", metavar="NAME", help="a topic ('*': every topic)")
    which.add_argument("--group", metavar="NAME", help="a consumer group ('*': every group)")
    which.add_argument("--transactional-id", metavar="NAME", help="a transactional id")
    which.add_argument("--cluster", action="store_true", help="the cluster")


def register(commands: Any) -> None:
    acls = commands.add_parser("acls", help="add, list and remove ACLs",
                               description="Add, list and remove the ACLs brokers enforce.")
    actions = acls.add_subparsers(dest="action", metavar="ACTION", required=True)
    client = client_parent()

    add = actions.add_parser("add", parents=[client], help="add ACLs",
                             description="Allow or deny principals operations on a resource.")
    who = add.add_mutually_exclusive_group(required=True)
    who.add_argument("--allow-principal", metavar="PRINCIPAL", help="e.g. User:alice ('User:*': anyone)")
    who.add_argument("--deny-principal", metavar="PRINCIPAL", help="deny wins over any allow")
    add.add_argument("--operation", type=_operation, action="append", required=True,
                     help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, All, ... "
                          "(repeatable)")
    add.add_argument("--host", default="*", help="client address the ACL applies to (default *)")
    add.add_argument("--resource-pattern-type", choices=["literal", "prefixed"], default="literal")
    _resource_args(add, required=True)
    add.set_defaults(run=add_acls)

    for name, help_text, run in [("list", "list ACLs", list_acls),
                                 ("remove", "remove the ACLs a filter matches", remove_acls)]:
        p = actions.add_parser(name, parents=[client], help=help_text,
                               description=f"{help_text[0].upper()}{help_text[1:]} "
                                           "(flags not given match everything).")
        p.add_argument("--principal", help="only ACLs of this principal")
        p.add_argument("--operation", type=_operation, help="only ACLs of this operation")
        p.add_argument("--resource-pattern-type", choices=["any", "match", "literal", "prefixed"],
                       default="any")
        _resource_args(p, required=False)
        if name == "list":
            add_output_options(p)
        p.set_defaults(run=run)


def _resource(args: argparse.Namespace) -> tuple[ResourceType, str | None]:
    if args.cluster:
        return ResourceType.CLUSTER, CLUSTER_NAME
    for flag, kind in (("topic", ResourceType.TOPIC), ("group", ResourceType.GROUP),
                       ("transactional_id", ResourceType.TRANSACTIONAL_ID)):
        if getattr(args, flag) is not None:
            return kind, getattr(args, flag)
    return ResourceType.ANY, None


def _filter(args: argparse.Namespace) -> AclFilter:
    kind, name = _resource(args)
    return AclFilter(kind, name, PatternType[args.resource_pattern_type.upper()], args.principal, None,
                     args.operation or Operation.ANY, Permission.ANY)


def _admin(args: argparse.Namespace) -> Any:
    from connector.client import Admin

    return Admin(client_options(args))


def _rows(args: argparse.Namespace, bindings: list[AclBinding]) -> None:
    print_table(args, ["PRINCIPAL", "HOST", "PERMISSION", "OPERATION", "RESOURCE", "NAME",
                       "PATTERN"],
                [[b.principal, b.host, b.permission.name, b.operation.name,
                  b.resource_type.name, b.name, b.pattern.name] for b in bindings])


def add_acls(args: argparse.Namespace) -> int:
    kind, name = _resource(args)
    principal = args.allow_principal or args.deny_principal
    permission = Permission.ALLOW if args.allow_principal else Permission.DENY
    pattern = PatternType[args.resource_pattern_type.upper()]
    assert name is not None
    try:
        bindings = [AclBinding.create(kind, name, pattern, principal, args.host, op, permission)
                    for op in dict.fromkeys(args.operation)]
    except Exception as e:  # InvalidRequest: the same rule the controller applies
        raise CommandError(str(e)) from None
    with _admin(args) as admin:
        admin.create_acls(bindings)
    _rows(args, bindings)
    return 0


def list_acls(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        _rows(args, admin.describe_acls(_filter(args)))
    return 0


def remove_acls(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        removed = admin.delete_acls([_filter(args)])
    _rows(args, removed)
    return 0
