"""``pyq lag --group G [--topic T]``: how far a group's committed offsets trail the logs.

First a summary line (the group's type, state, members and coordinator), then one row per
partition: the offset the group committed (the next one it will read), the partition's
latest offset (high watermark), the lag between them and, for a group with members, the
member that owns the partition (CONSUMER, HOST, CLIENT). A reader that
keeps counters in the commit's metadata string as a JSON object — the pyq Spark source
stores ``{"query": ..., "skipped": n, "lost": n, "retried": n, "dead_lettered": n}``, and
``"dead_letter_topic"`` when it has one —
gets each of its fields as an extra column (nested objects flattened with dots)::

    GROUP q1  TYPE simple  STATE Empty  MEMBERS 0  COORDINATOR 1

    TOPIC   PARTITION  COMMITTED  LATEST  LAG  QUERY  SKIPPED  LOST  RETRIED  DEAD_LETTERED
    events  0          1200       1250    50   q1     0        0     3        1
    events  1          -          980     -    -      -        -     -        -

``-`` means unknown: no committed offset, no leader, or no such field. With ``--topic``
every partition of that topic is listed; without it, every partition the group has
committed an offset for or is assigned. The extra columns come from
:func:`connector.client.commit_metadata.metadata_fields`.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from connector.client.commit_metadata import metadata_fields

from .args import client_options, client_parent
from .errors import CommandError
from .group_info import describe_any, owners, summary, summary_line
from .output import add_output_options, print_json, records, wants_json
from .table import format_table
from .topics import describe

if TYPE_CHECKING:
    from connector.client import Admin, OffsetAndMetadata, TopicPartition

COLUMNS = ["TOPIC", "PARTITION", "COMMITTED", "LATEST", "LAG"]
OWNER_COLUMNS = ["CONSUMER", "HOST", "CLIENT"]


def register(commands: Any) -> None:
    lag = commands.add_parser(
        "lag", parents=[client_parent()], help="a group's committed offsets and lag",
        description="For each partition: the group's committed offset, the latest offset and "
                    "the lag; counters a reader stored as JSON in the commit metadata "
                    "become extra columns.")
    lag.add_argument("--group", required=True, metavar="G", help="the group (e.g. a query id)")
    lag.add_argument("--topic", metavar="T", help="only this topic, every partition of it")
    add_output_options(lag)
    lag.set_defaults(run=show_lag)


def lag_table(partitions: Iterable[TopicPartition],
              committed: Mapping[TopicPartition, OffsetAndMetadata],
              latest: Mapping[TopicPartition, int],
              owners: Mapping[TopicPartition, tuple[str, str, str]] | None = None,
              ) -> tuple[list[str], list[list[object]]]:
    """Columns and rows: offsets and lag, the owning member (when the group has members),
    then the metadata fields in first-seen order."""
    fields = {tp: metadata_fields(om.metadata) for tp, om in committed.items()}
    extra: dict[str, None] = {}
    for tp in sorted(fields):
        extra.update(dict.fromkeys(fields[tp]))
    rows: list[list[object]] = []
    for tp in sorted(partitions):
        om, end = committed.get(tp), latest.get(tp)
        offset = om.offset if om is not None else None
        lag = end - offset if offset is not None and end is not None else None
        values = fields.get(tp, {})
        owner = list(owners.get(tp, (None, None, None))) if owners else []
        rows.append([tp.topic, tp.partition, offset, end, lag, *owner,
                     *(values.get(name) for name in extra)])
    columns = COLUMNS + (OWNER_COLUMNS if owners else [])
    return columns + [name.upper() for name in extra], rows


def lag_rows(admin: Admin, group: str, topic: str | None,
             owners: Mapping[TopicPartition, tuple[str, str, str]]) -> tuple[list[str], list[list[object]]]:
    """The lag table of ``group``: every partition it committed or owns (or every partition
    of ``topic``)."""
    from connector.client import TopicPartition

    committed = admin.fetch_offsets(group)
    if topic is not None:
        committed = {tp: om for tp, om in committed.items() if tp.topic == topic}
        owners = {tp: o for tp, o in owners.items() if tp.topic == topic}
        infos = describe(admin, topic)[topic].partitions
        partitions = {TopicPartition(p.topic, p.partition) for p in infos} | set(committed)
    else:
        partitions = set(committed) | set(owners)
        infos = [p for d in admin.describe_topics().values() for p in d.partitions] if partitions else []
    led = [tp for tp in (TopicPartition(p.topic, p.partition) for p in infos if p.leader >= 0)
           if tp in partitions]
    offsets = admin.list_offsets(dict.fromkeys(led, "latest")) if led else {}
    return lag_table(partitions, committed, {tp: o.offset for tp, o in offsets.items()}, owners)


def show_lag(args: argparse.Namespace) -> int:
    from connector.client import Admin

    with Admin(client_options(args)) as admin:
        d = describe_any(admin, [args.group])[args.group]
        columns, rows = lag_rows(admin, args.group, args.topic, owners(d))
    if not rows:
        raise CommandError(f"group {args.group!r} has no committed offsets")
    if wants_json(args):
        print_json({**summary(d), "partitions": records(columns, rows)})
        return 0
    print(summary_line(d) + "\n")
    print(format_table(columns, rows))
    return 0
