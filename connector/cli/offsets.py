"""``pyq offsets TOPIC [-p P] [--time MS|-1|-2]``: the offset of each partition for a time,
the latest or the earliest (kcat's ``-Q``, Kafka's ``kafka-get-offsets.sh``)::

    $ pyq offsets clicks --time 1700000000000
    TOPIC   PARTITION  OFFSET  TIMESTAMP
    clicks  0          41      1700000000250
    clicks  1          -1      -

``--time MS`` (ms since the epoch) gives the first offset whose record's timestamp is at
or after MS, with that record's timestamp; ``-1`` (Kafka's OFFSET_NOT_FOUND, what kcat
prints) when no record is that late. ``--time -1`` (or ``latest``, the default) is the
high watermark, the offset the next record will get; ``--time -2`` (``earliest``) the log
start offset; their TIMESTAMP is empty. ``--format json`` / ``-J``: one JSON list of
``{"topic", "partition", "offset", "timestamp"}`` (``null`` for an empty timestamp).
"""

from __future__ import annotations

import argparse
from typing import Any

from .args import at_least, client_options, client_parent
from .errors import CommandError
from .output import add_output_options, print_table
from .topics import describe

NAMED = {"latest": -1, "earliest": -2}
COLUMNS = ["TOPIC", "PARTITION", "OFFSET", "TIMESTAMP"]


def offset_time(text: str) -> int:
    """An option type: ms since the epoch (>= 0), -1/latest or -2/earliest."""
    word = text.strip().lower()
    if word in NAMED:
        return NAMED[word]
    try:
        value = int(word)
    except ValueError:
        value = None
    if value is None or value < -2:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed: must be a time in ms since the epoch, -1 (latest) or "
            "-2 (earliest)")
    return value


def register(commands: Any) -> None:
    offsets = commands.add_parser(
        "offsets", parents=[client_parent()], help="the offsets for a time, latest or earliest",
        description="Print each partition's offset for a time (the first record at or after "
                    "it), its latest offset (-1) or its earliest (-2), as kcat -Q.")
    offsets.add_argument("topic", metavar="TOPIC")
    offsets.add_argument("-p", "--partition", type=at_least(0), metavar="P",
                         help="only partition P (default: every partition)")
    offsets.add_argument("--time", type=offset_time, default=-1, metavar="MS|-1|-2",
                         help="a time in ms since the epoch, -1 or latest (the default), -2 "
                              "or earliest")
    add_output_options(offsets)
    offsets.set_defaults(run=show_offsets)


def show_offsets(args: argparse.Namespace) -> int:
    from connector.client import Admin, TopicPartition

    with Admin(client_options(args)) as admin:
        partitions = sorted(p.partition for p in describe(admin, args.topic)[args.topic].partitions)
        if args.partition is not None:
            if args.partition not in partitions:
                raise CommandError(f"-p {args.partition}: topic {args.topic!r} has partitions "
                                   f"0..{len(partitions) - 1}")
            partitions = [args.partition]
        tps = [TopicPartition(args.topic, p) for p in partitions]
        found = admin.list_offsets(dict.fromkeys(tps, args.time))
    rows = [[tp.topic, tp.partition, found[tp].offset,
             found[tp].timestamp if found[tp].timestamp >= 0 else None] for tp in tps]
    print_table(args, COLUMNS, rows)
    return 0
