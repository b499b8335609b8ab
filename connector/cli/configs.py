"""``pyq configs describe | alter``, like Kafka's ``kafka-configs``.

The entity is ``--topic T``, ``--broker N`` or ``--broker-defaults`` (the cluster-wide
default of the dynamic broker configs). ``describe`` prints one row per config that is set
somewhere other than pyq's defaults (``--all``: every config)::

    NAME          VALUE    SOURCE                READ-ONLY
    retention.ms  3600000  DYNAMIC_TOPIC_CONFIG  false

The source is Kafka's (``DYNAMIC_TOPIC_CONFIG``, ``DYNAMIC_BROKER_CONFIG``,
``DYNAMIC_DEFAULT_BROKER_CONFIG``, ``STATIC_BROKER_CONFIG``, ``DEFAULT_CONFIG``); a sensitive
value shows as ``(sensitive)``. ``alter`` sets (``--config NAME=VALUE``) and removes
(``--delete-config NAME``) configs, leaving the others as they are; for a topic it is the
same as ``pyq topics alter TOPIC --config ...``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .args import client_options, client_parent, name_value
from .errors import EXIT_USAGE, CommandError
from .output import add_output_options, print_json, print_table, wants_json
from .topics import config_changes, describe_changes

if TYPE_CHECKING:
    from connector.client import Admin

COLUMNS = ["NAME", "VALUE", "SOURCE", "READ-ONLY"]


def _entity(parser: argparse.ArgumentParser) -> None:
    entity = parser.add_mutually_exclusive_group(required=True)
    entity.add_argument("--topic", metavar="TOPIC", help="a topic's configs")
    entity.add_argument("--broker", metavar="N", help="broker N's configs")
    entity.add_argument("--broker-defaults", action="store_true",
                        help="the cluster-wide default of the dynamic broker configs")


def register(commands: Any) -> None:
    configs = commands.add_parser("configs", help="describe and change topic and broker configs",
                                  description="Describe and change topic and broker configs.")
    actions = configs.add_subparsers(dest="action", metavar="ACTION", required=True)
    client = client_parent()

    describe = actions.add_parser(
        "describe", parents=[client], help="a topic's or a broker's configs and their sources",
        description="Print the configs of a topic or a broker: value, where it comes from, "
                    "whether it can change at runtime.")
    _entity(describe)
    describe.add_argument("--all", action="store_true",
                          help="every config, defaults included (default: only those set)")
    add_output_options(describe)
    describe.set_defaults(run=describe_configs)

    alter = actions.add_parser(
        "alter", parents=[client], help="set or remove configs at runtime",
        description="Set and remove configs of a topic or the dynamic configs of a broker "
                    "(the others keep their values).")
    _entity(alter)
    alter.add_argument("--config", type=name_value, action="append", default=[],
                       metavar="NAME=VALUE", help="set a config (repeatable)")
    alter.add_argument("--delete-config", action="append", default=[], metavar="NAME",
                       help="remove a config: back to its default (repeatable)")
    alter.set_defaults(run=alter_configs)


def resource_of(args: argparse.Namespace) -> tuple[str, str]:
    if args.topic is not None:
        return "topic", args.topic
    if args.broker_defaults:
        return "broker", ""
    broker = str(args.broker).strip()
    if not broker.isdigit():
        raise CommandError(f"--broker {args.broker!r}: must be a broker id (an integer >= 0)",
                           exit_code=EXIT_USAGE)
    return "broker", broker


def _label(resource: tuple[str, str]) -> str:
    kind, name = resource
    return "broker defaults" if kind == "broker" and name == "" else f"{kind} {name}"


def _admin(args: argparse.Namespace) -> Admin:
    from connector.client import Admin

    return Admin(client_options(args))


def describe_configs(args: argparse.Namespace) -> int:
    from connector.client import UnknownTopicOrPartition

    resource = resource_of(args)
    with _admin(args) as admin:
        try:
            entries = admin.describe_configs([resource])[resource]
        except UnknownTopicOrPartition as e:
            raise CommandError(f"topic {resource[1]!r} does not exist") from e
    shown = [e for e in sorted(entries.values()) if args.all or not e.is_default]
    if wants_json(args):  # a sensitive value is null, read_only a boolean
        print_json([{"name": e.name, "value": None if e.sensitive else e.value,
                     "source": e.source, "read_only": bool(e.read_only),
                     "sensitive": bool(e.sensitive)} for e in shown])
        return 0
    rows = [[e.name, "(sensitive)" if e.sensitive else e.value, e.source,
             "true" if e.read_only else "false"] for e in shown]
    print_table(args, COLUMNS, rows, empty_text=False)
    return 0


def alter_configs(args: argparse.Namespace) -> int:
    resource = resource_of(args)
    changes = config_changes(args.config, args.delete_config)
    if not changes:
        raise CommandError("nothing to alter: give --config NAME=VALUE or --delete-config NAME",
                           exit_code=EXIT_USAGE)
    with _admin(args) as admin:
        admin.incremental_alter_configs({resource: changes})
    print(f"{_label(resource)}: {describe_changes(changes)}")
    return 0
