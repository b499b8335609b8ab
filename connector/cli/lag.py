"""``pyq lag --group G [--topic T]``: how far a group's committed offsets trail the logs.

One row per partition: the offset the group committed (the next one it will read), the
partition's latest offset (high watermark), and the lag between them. A reader that
keeps counters in the commit's metadata string as a JSON object — the pyq Spark source
stores ``{"query": ..., "skipped": n, "lost": n, "retried": n, "dead_lettered": n}`` —
gets each of its fields as an extra column (nested objects flattened with dots)::

    TOPIC   PARTITION  COMMITTED  LATEST  LAG  QUERY  SKIPPED  LOST  RETRIED  DEAD_LETTERED
    events  0          1200       1250    50   q1     0        0     3        1
    events  1          -          980     -    -      -        -     -        -

``-`` means unknown: no committed offset, no leader, or no such field. With ``--topic``
every partition of that topic is listed; without it, every partition the group has
committed an offset for.

>>> metadata_fields('{"query": "q1", "skipped": 2, "sink": {"rows": 7}}')
{'query': 'q1', 'skipped': 2, 'sink.rows': 7}
>>> metadata_fields("batch 7")      # not JSON: no extra columns
{}
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .args import client_options, client_parent
from .errors import CommandError
from .table import format_table
from .topics import describe

if TYPE_CHECKING:
    from connector.client import OffsetAndMetadata, TopicPartition

COLUMNS = ["TOPIC", "PARTITION", "COMMITTED", "LATEST", "LAG"]


def register(commands: Any) -> None:
    lag = commands.add_parser(
        "lag", parents=[client_parent()], help="a group's committed offsets and lag",
        description="For each partition: the group's committed offset, the latest offset and "
                    "the lag; counters a reader stored as JSON in the commit metadata "
                    "become extra columns.")
    lag.add_argument("--group", required=True, metavar="G", help="the group (e.g. a query id)")
    lag.add_argument("--topic", metavar="T", help="only this topic, every partition of it")
    lag.set_defaults(run=show_lag)


def metadata_fields(metadata: str) -> dict[str, Any]:
    """Scalar fields of a JSON object in commit metadata ({} if it is not one)."""
    try:
        data = json.loads(metadata) if metadata else None
    except ValueError:
        return {}
    return dict(_flatten(data, "")) if isinstance(data, dict) else {}


def _flatten(data: Mapping[str, Any], prefix: str) -> Iterable[tuple[str, Any]]:
    for name, value in data.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{name}.")
        elif not isinstance(value, list):
            yield f"{prefix}{name}", value


def lag_table(partitions: Iterable[TopicPartition],
              committed: Mapping[TopicPartition, OffsetAndMetadata],
              latest: Mapping[TopicPartition, int]) -> tuple[list[str], list[list[object]]]:
    """Columns and rows: offsets and lag, then the metadata fields in first-seen order."""
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
        rows.append([tp.topic, tp.partition, offset, end, lag,
                     *(values.get(name) for name in extra)])
    return COLUMNS + [name.upper() for name in extra], rows


def show_lag(args: argparse.Namespace) -> int:
    from connector.client import Admin, TopicPartition

    with Admin(client_options(args)) as admin:
        committed = admin.fetch_offsets(args.group)
        if args.topic is not None:
            committed = {tp: om for tp, om in committed.items() if tp.topic == args.topic}
            infos = describe(admin, args.topic)[args.topic].partitions
            partitions = {TopicPartition(p.topic, p.partition) for p in infos} | set(committed)
        elif not committed:
            raise CommandError(f"group {args.group!r} has no committed offsets")
        else:
            partitions = set(committed)
            infos = [p for d in admin.describe_topics().values() for p in d.partitions]
        led = [tp for tp in (TopicPartition(p.topic, p.partition) for p in infos if p.leader >= 0)
               if tp in partitions]
        offsets = admin.list_offsets(dict.fromkeys(led, "latest")) if led else {}
    columns, rows = lag_table(partitions, committed, {tp: o.offset for tp, o in offsets.items()})
    print(format_table(columns, rows))
    return 0
