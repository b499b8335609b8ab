"""``pyq groups list | describe | delete | reset-offsets``, as ``kafka-consumer-groups.sh``.

    pyq groups list [--state Stable ...]      GROUP  TYPE      STATE   MEMBERS  COORDINATOR
    pyq groups describe G [G ...]             one summary line, then per partition: committed,
                                              latest, lag and the member that owns it
    pyq groups delete G [G ...]               only groups without members
    pyq groups delete-offsets G --topic T[:P,P...] ...   forget some committed offsets
    pyq groups reset-offsets --group G (--topic T[:P,P...] ... | --all-topics)
        (--to-earliest | --to-latest | --to-datetime ISO | --to-offset N | --shift-by N)
        [--dry-run | --execute]

``reset-offsets`` prints the plan and changes nothing unless ``--execute`` is given; the
new offsets are kept within each partition's earliest and latest offsets, and the group
must have no members (a live consumer would overwrite them), as Kafka requires.
``delete-offsets`` (OffsetDelete, as ``kafka-consumer-groups.sh --delete-offsets``) forgets
the group's committed offsets of the partitions named, so the group's consumers start
there by ``auto.offset.reset`` next time; the broker refuses while a member of the group
is subscribed to the topic (stop its consumers first). A group without an offset for a
partition named is not an error: there is nothing to forget.

A group's TYPE is ``consumer`` for consumer groups and ``simple`` for groups that only hold
offsets (the Spark source's ``groupId``, ``pyq`` itself).
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .args import client_options, client_parent
from .errors import CommandError
from .group_info import describe_any, group_type, owners, summary, summary_line
from .lag import lag_rows
from .output import add_output_options, print_json, print_table, records, wants_json
from .table import format_table

if TYPE_CHECKING:
    from connector.client import Admin, TopicPartition

INACTIVE = ("Empty", "Dead")


def register(commands: Any) -> None:
    groups = commands.add_parser("groups", help="list, describe, delete consumer groups; reset offsets",
                                 description="Consumer groups: list them, describe their members "
                                             "and lag, delete them, reset their offsets.")
    actions = groups.add_subparsers(dest="action", metavar="ACTION", required=True)
    client = client_parent()

    listing = actions.add_parser("list", parents=[client], help="every group of the cluster",
                                 description="Every group, its type, state, members and coordinator.")
    listing.add_argument("--state", action="append", metavar="S",
                         help="only groups in this state (Empty, Stable, PreparingRebalance, "
                              "CompletingRebalance); repeatable")
    add_output_options(listing)
    listing.set_defaults(run=list_groups)

    describe = actions.add_parser("describe", parents=[client], help="members, offsets and lag",
                                  description="A group's state and members, and for each partition "
                                              "its committed offset, latest offset, lag and owner.")
    describe.add_argument("group", metavar="G", nargs="+")
    add_output_options(describe)
    describe.set_defaults(run=describe_groups)

    delete = actions.add_parser("delete", parents=[client], help="delete groups without members",
                                description="Delete groups and their committed offsets; a group "
                                            "with members cannot be deleted.")
    delete.add_argument("group", metavar="G", nargs="+")
    delete.set_defaults(run=delete_groups)

    forget = actions.add_parser(
        "delete-offsets", parents=[client], help="forget a group's committed offsets",
        description="Delete a group's committed offsets of some topics or partitions "
                    "(OffsetDelete). Refused while a member of the group is subscribed to "
                    "the topic.")
    forget.add_argument("group", metavar="G")
    forget.add_argument("--topic", action="append", required=True, metavar="T[:P,...]",
                        help="a topic, or some of its partitions; repeatable")
    forget.set_defaults(run=delete_offsets, all_topics=False)

    reset = actions.add_parser("reset-offsets", parents=[client], help="move a group's offsets",
                               description="Plan (--dry-run, the default) or make (--execute) new "
                                           "committed offsets for a group without members.")
    reset.add_argument("--group", required=True, metavar="G")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", action="append", metavar="T[:P,...]",
                       help="a topic, or some of its partitions; repeatable")
    scope.add_argument("--all-topics", action="store_true",
                       help="every topic the group has committed offsets for")
    spec = reset.add_mutually_exclusive_group(required=True)
    spec.add_argument("--to-earliest", action="store_true", help="each partition's earliest offset")
    spec.add_argument("--to-latest", action="store_true", help="each partition's latest offset")
    spec.add_argument("--to-datetime", metavar="ISO", type=_datetime_ms,
                      help="the first offset at or after this time (e.g. 2026-11-25T10:00:00, "
                           "UTC unless an offset like +01:00 is given)")
    spec.add_argument("--to-offset", metavar="N", type=int, help="this offset")
    spec.add_argument("--shift-by", metavar="N", type=int,
                      help="the committed offset plus N (N may be negative)")
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    reset.set_defaults(run=reset_offsets)


def _datetime_ms(text: str) -> int:
    try:
        when = datetime.fromisoformat(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO date-time such as "
                                         "2026-11-25T10:00:00 or 2026-11-25T10:00:00+01:00") from e
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return int(when.timestamp() * 1000)


def _admin(args: argparse.Namespace) -> Admin:
    from connector.client import Admin

    return Admin(client_options(args))


def list_groups(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        listed = admin.list_groups(args.state)
        described = describe_any(admin, [g.group_id for g in listed])
    rows = [[g.group_id, group_type(g.protocol_type), g.state, len(described[g.group_id].members),
             g.coordinator, g.group_type] for g in listed]
    print_table(args, ["GROUP", "TYPE", "STATE", "MEMBERS", "COORDINATOR", "PROTOCOL"], rows)
    return 0


def describe_groups(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        described = describe_any(admin, list(args.group))
        blocks, documents = [], []
        for group in args.group:
            d = described[group]
            if d.state == "Dead":
                raise CommandError(f"group {group!r} does not exist")
            columns, rows = lag_rows(admin, group, None, owners(d))
            blocks.append(summary_line(d) + ("\n\n" + format_table(columns, rows) if rows else ""))
            documents.append({**summary(d), "partitions": records(columns, rows)})
    if wants_json(args):
        print_json(documents)
    else:
        print("\n\n".join(blocks))
    return 0


def delete_groups(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        admin.delete_groups(args.group)
    for group in args.group:
        print(f"deleted group {group}")
    return 0


def delete_offsets(args: argparse.Namespace) -> int:
    from broker_sim.protocol.errors import GroupIdNotFound, GroupSubscribedToTopic

    with _admin(args) as admin:
        partitions = _scope(admin, args)
        try:
            admin.delete_offsets(args.group, partitions)
        except GroupSubscribedToTopic as e:
            raise CommandError(f"group {args.group!r} has a member subscribed to the topic, "
                               "whose offsets it would commit again: stop the group's "
                               f"consumers first ({e})") from e
        except GroupIdNotFound as e:
            raise CommandError(f"group {args.group!r} does not exist") from e
    print(format_table(["GROUP", "TOPIC", "PARTITION", "STATUS"],
                       [[args.group, tp.topic, tp.partition, "deleted"] for tp in partitions]))
    return 0


def _scope(admin: Admin, args: argparse.Namespace) -> list[TopicPartition]:
    from connector.client import TopicPartition

    if args.all_topics:
        committed = sorted(admin.fetch_offsets(args.group))
        if not committed:
            raise CommandError(f"group {args.group!r} has no committed offsets")
        return committed
    out: list[TopicPartition] = []
    for spec in args.topic:
        topic, _, parts = spec.partition(":")
        if parts:
            try:
                out.extend(TopicPartition(topic, int(p)) for p in parts.split(","))
            except ValueError as e:
                raise CommandError(f"--topic {spec!r}: partitions must be integers, "
                                   "e.g. events:0,1") from e
        else:
            from .topics import describe

            out.extend(TopicPartition(p.topic, p.partition)
                       for p in describe(admin, topic)[topic].partitions)
    return out


def reset_offsets(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        d = describe_any(admin, [args.group])[args.group]
        if d.state not in INACTIVE:
            raise CommandError(f"group {args.group!r} is {d.state} with {len(d.members)} member(s): "
                               "offsets can only be reset while it has none (stop its consumers)")
        partitions = _scope(admin, args)
        earliest = {tp: o.offset for tp, o in admin.list_offsets(dict.fromkeys(partitions, "earliest")).items()}
        latest = {tp: o.offset for tp, o in admin.list_offsets(dict.fromkeys(partitions, "latest")).items()}
        committed = admin.fetch_offsets(args.group, partitions)
        if args.to_datetime is not None:
            found = admin.list_offsets(dict.fromkeys(partitions, args.to_datetime))
        plan = {}
        for tp in partitions:
            current = committed[tp].offset if tp in committed else None
            if args.to_earliest:
                target = earliest[tp]
            elif args.to_latest:
                target = latest[tp]
            elif args.to_datetime is not None:
                target = found[tp].offset if found[tp].offset >= 0 else latest[tp]
            elif args.to_offset is not None:
                target = args.to_offset
            else:
                if current is None:
                    raise CommandError(f"--shift-by: group {args.group!r} has no committed offset "
                                       f"for {tp.topic}-{tp.partition}")
                target = current + args.shift_by
            plan[tp] = (current, min(max(target, earliest[tp]), latest[tp]))
        if args.execute:
            admin.commit_offsets(args.group, {tp: new for tp, (_, new) in plan.items()})
    rows = [[args.group, tp.topic, tp.partition, old, new] for tp, (old, new) in sorted(plan.items())]
    print(format_table(["GROUP", "TOPIC", "PARTITION", "CURRENT", "NEW"], rows))
    if not args.execute:
        print("(dry run: nothing changed; add --execute to commit these offsets)")
    return 0
