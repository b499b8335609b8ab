"""``pyq topics create | list | describe | alter | delete | truncate``, like Kafka's
``kafka-topics`` (and ``kafka-delete-records`` for ``truncate``).

``alter TOPIC --partitions N`` grows a topic to N partitions (a topic never shrinks; keyed
records of existing keys may then map to other partitions, as in Kafka).
``alter TOPIC --config NAME=VALUE --delete-config NAME`` changes the topic's configs at
runtime (IncrementalAlterConfigs; configs not named keep their values); both kinds of
change may be given at once, partitions first. ``pyq configs describe --topic TOPIC`` shows
the result.

``truncate TOPIC --before OFFSET [--partition N]`` deletes every record before OFFSET
(``latest``: every record written so far) of each partition, or of partition N only, by
moving the log start offset up (DeleteRecords). Nothing is deleted if some partition's
latest offset is below OFFSET (the error names it). It prints each partition's new
earliest offset (its low watermark, once every in-sync replica moved)::

    $ pyq topics truncate events --before 1000
    TOPIC   PARTITION  EARLIEST
    events  0          1000
    events  1          1000

``describe`` prints one row per partition::

    TOPIC   PARTITION  LEADER  REPLICAS  ISR    EARLIEST  LATEST
    events  0          1       1,2,0     1,2,0  0         1200
    events  1          2       2,0,1     2,0    0         1187

``EARLIEST`` is the log start offset and ``LATEST`` the high watermark (the offset the
next record will get, as consumers see it). A partition without a leader shows ``-``
for its leader and offsets.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .args import at_least, client_options, client_parent, name_value
from .errors import EXIT_USAGE, CommandError
from .output import add_output_options, print_list, print_table
from .table import format_table

if TYPE_CHECKING:
    from connector.client import Admin, TopicDescription

DESCRIBE_COLUMNS = ["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "EARLIEST", "LATEST"]


def register(commands: Any) -> None:
    topics = commands.add_parser(
        "topics", help="create, list, describe, alter, delete and truncate topics",
        description="Create, list, describe, alter, delete and truncate topics.")
    actions = topics.add_subparsers(dest="action", metavar="ACTION", required=True)
    client = client_parent()

    create = actions.add_parser("create", parents=[client], help="create a topic",
                                description="Create a topic.")
    create.add_argument("topic", metavar="TOPIC")
    create.add_argument("--partitions", type=at_least(1), default=-1, metavar="N",
                        help="number of partitions (default: the broker's num.partitions)")
    create.add_argument("--replication-factor", type=at_least(1), default=-1, metavar="N",
                        help="replicas per partition (default: the broker's "
                             "default.replication.factor)")
    create.add_argument("--config", type=name_value, action="append", default=[],
                        metavar="NAME=VALUE",
                        help="a topic config, e.g. retention.ms=3600000 (repeatable)")
    create.add_argument("--if-not-exists", action="store_true",
                        help="succeed if the topic already exists")
    create.set_defaults(run=create_topic)

    listing = actions.add_parser("list", parents=[client], help="list topic names",
                                 description="Print the name of every topic, one per line.")
    add_output_options(listing)
    listing.set_defaults(run=list_topics)

    describe = actions.add_parser(
        "describe", parents=[client], help="partitions, leaders, replicas, ISR and offsets",
        description="Print each partition's leader, replicas, in-sync replicas and its "
                    "earliest and latest offsets.")
    describe.add_argument("topic", metavar="TOPIC", nargs="?",
                          help="the topic to describe (default: every topic)")
    add_output_options(describe)
    describe.set_defaults(run=describe_topics)

    alter = actions.add_parser(
        "alter", parents=[client], help="add partitions to a topic, change its configs",
        description="Grow a topic to more partitions (it never shrinks) and/or change its "
                    "configs at runtime (the others keep their values).")
    alter.add_argument("topic", metavar="TOPIC")
    alter.add_argument("--partitions", type=at_least(1), metavar="N",
                       help="the new total number of partitions (more than it has now)")
    alter.add_argument("--config", type=name_value, action="append", default=[],
                       metavar="NAME=VALUE",
                       help="set a topic config, e.g. retention.ms=3600000 (repeatable)")
    alter.add_argument("--delete-config", action="append", default=[], metavar="NAME",
                       help="remove a topic config override: back to the broker's default "
                            "(repeatable)")
    alter.set_defaults(run=alter_topic)

    delete = actions.add_parser("delete", parents=[client], help="delete a topic",
                                description="Delete a topic and all its records.")
    delete.add_argument("topic", metavar="TOPIC")
    delete.add_argument("--if-exists", action="store_true",
                        help="succeed if the topic does not exist")
    delete.set_defaults(run=delete_topic)

    truncate = actions.add_parser(
        "truncate", parents=[client], help="delete the records before an offset",
        description="Delete every record before OFFSET of each partition of a topic (or of "
                    "one partition) by moving its log start offset up (DeleteRecords). "
                    "Nothing is deleted if a partition's latest offset is below OFFSET.")
    truncate.add_argument("topic", metavar="TOPIC")
    truncate.add_argument("--before", type=before_offset, required=True, metavar="OFFSET",
                          help="the new earliest offset, or 'latest' for every record "
                               "written so far")
    truncate.add_argument("--partition", type=at_least(0), metavar="N",
                          help="only this partition (default: every partition)")
    truncate.set_defaults(run=truncate_topic)


def _admin(args: argparse.Namespace) -> Admin:
    from connector.client import Admin

    return Admin(client_options(args))


def create_topic(args: argparse.Namespace) -> int:
    from connector.client import NewTopic

    with _admin(args) as admin:
        admin.create_topics([NewTopic(args.topic, args.partitions, args.replication_factor,
                                      dict(args.config))], if_not_exists=args.if_not_exists)
    print(f"created topic {args.topic}")
    return 0


def list_topics(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        names = sorted(admin.list_topics())
    print_list(args, names)
    return 0


def describe_topics(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        descriptions = describe(admin, args.topic)
        rows = describe_rows(admin, descriptions.values())
    print_table(args, DESCRIBE_COLUMNS, rows, empty_text=False)
    return 0


def alter_topic(args: argparse.Namespace) -> int:
    changes = config_changes(args.config, args.delete_config)
    if args.partitions is None and not changes:
        raise CommandError("nothing to alter: give --partitions N, --config NAME=VALUE or "
                           "--delete-config NAME", exit_code=EXIT_USAGE)
    with _admin(args) as admin:
        if args.partitions is not None:
            admin.create_partitions({args.topic: args.partitions})
            print(f"topic {args.topic} now has {args.partitions} partitions")
        if changes:
            admin.incremental_alter_configs({("topic", args.topic): changes})
            print(f"topic {args.topic}: {describe_changes(changes)}")
    return 0


def config_changes(sets: list[tuple[str, str]], deletes: list[str]) -> dict[str, str | None]:
    """``--config`` and ``--delete-config`` as one change set (None: delete); a config named
    twice is a usage error."""
    changes: dict[str, str | None] = {}
    for name, value in sets:
        if name in changes:
            raise CommandError(f"config {name} is given more than once", exit_code=EXIT_USAGE)
        changes[name] = value
    for name in deletes:
        name = name.strip()
        if not name:
            raise CommandError("--delete-config needs a config name", exit_code=EXIT_USAGE)
        if name in changes:
            raise CommandError(f"config {name} is both set and deleted", exit_code=EXIT_USAGE)
        changes[name] = None
    return changes


def describe_changes(changes: dict[str, str | None]) -> str:
    """``set retention.ms=1000, deleted cleanup.policy``."""
    sets = [f"{k}={v}" for k, v in changes.items() if v is not None]
    deletes = [k for k, v in changes.items() if v is None]
    return ", ".join(([f"set {', '.join(sets)}"] if sets else [])
                     + ([f"deleted {', '.join(deletes)}"] if deletes else []))


def delete_topic(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        admin.delete_topics([args.topic], if_exists=args.if_exists)
    print(f"deleted topic {args.topic}")
    return 0


TRUNCATE_COLUMNS = ["TOPIC", "PARTITION", "EARLIEST"]


def before_offset(text: str) -> int:
    """An option type: an offset >= 0, or ``latest`` (-1: each partition's high watermark)."""
    if text.strip().lower() == "latest":
        return -1
    return at_least(0)(text)


before_offset.__name__ = "offset"


def truncate_topic(args: argparse.Namespace) -> int:
    from connector.client import TopicPartition

    with _admin(args) as admin:
        partitions = describe(admin, args.topic)[args.topic].partitions
        if args.partition is not None:
            if args.partition >= len(partitions):
                raise CommandError(f"topic {args.topic!r} has no partition {args.partition} "
                                   f"(it has {len(partitions)})")
            partitions = [p for p in partitions if p.partition == args.partition]
        tps = [TopicPartition(args.topic, p.partition) for p in partitions]
        if args.before >= 0:
            latest = admin.list_offsets(dict.fromkeys(tps, "latest"))
            short = [f"{tp.partition} (latest {latest[tp].offset})" for tp in tps
                     if latest[tp].offset < args.before]
            if short:
                raise CommandError(f"nothing deleted: offset {args.before} is past the latest "
                                   f"offset of {args.topic} partition(s) {', '.join(short)}")
        low = admin.delete_records(dict.fromkeys(tps, args.before))
    print(format_table(TRUNCATE_COLUMNS, [[tp.topic, tp.partition, low[tp]] for tp in tps]))
    return 0


def describe(admin: Admin, topic: str | None) -> dict[str, TopicDescription]:
    """Descriptions of ``topic`` (every topic if None); a missing topic is a CommandError."""
    from connector.client import UnknownTopicOrPartition

    try:
        return admin.describe_topics(None if topic is None else [topic])
    except UnknownTopicOrPartition as e:
        raise CommandError(f"topic {topic!r} does not exist") from e


def describe_rows(admin: Admin, descriptions: Iterable[TopicDescription]) -> list[list[object]]:
    from connector.client import TopicPartition

    partitions = [p for d in descriptions for p in d.partitions]
    led = [TopicPartition(p.topic, p.partition) for p in partitions if p.leader >= 0]
    earliest = admin.list_offsets(dict.fromkeys(led, "earliest")) if led else {}
    latest = admin.list_offsets(dict.fromkeys(led, "latest")) if led else {}
    rows: list[list[object]] = []
    for p in partitions:
        tp = TopicPartition(p.topic, p.partition)
        first, last = earliest.get(tp), latest.get(tp)
        rows.append([p.topic, p.partition, p.leader if p.leader >= 0 else None,
                     p.replicas, p.isr, first.offset if first else None,
                     last.offset if last else None])
    return rows
