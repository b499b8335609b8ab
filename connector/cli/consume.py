"""``pyq consume TOPIC``: print the records of a topic's partitions as they arrive.

Without ``--group``, records are read without a consumer group, the way a Spark source's
executor reads (:class:`connector.client.Fetcher`), by :class:`TopicReader` rounds:

1. ask each partition's leader for its high watermark (one ListOffsets per leader);
2. for each partition with records at or past its position, fetch
   ``[position, high watermark)`` — records that exist, so the fetch does not wait — and
   move the position past them.

:func:`consume` repeats rounds until ``--max`` records have been printed or no record has
arrived for ``--timeout-ms``, pausing ``poll_interval_ms`` after a round that found
nothing. It takes the clock and the pause as arguments, so tests drive the idle timeout
without sleeping. Worked example, ``--timeout-ms 5000``: records arrive at t=0 and
t=4000, then nothing; rounds at t=4100, 4200, ... find none, and the round at t=9000
(5000 ms after the last record) ends the command.

Positions start at the earliest offsets with ``--from-beginning``, else at the latest
(only new records are printed). Within a round, partitions are read in order, so records
of one partition are in offset order but partitions interleave by round. A position that
retention deleted meanwhile (OFFSET_OUT_OF_RANGE below the log start) moves to the log
start, with a warning on stderr. ``--partition P`` reads only partition P.

With ``--group G`` (kafka-console-consumer's ``--group``), a round is one poll of the group
consumer :class:`connector.client.Consumer` (:class:`GroupReader`), which long-polls
instead of pausing:

* the group assigns the partitions: several ``pyq consume --group G`` processes share the
  topic's partitions, and a rebalance moves them between the processes;
* each partition starts at the group's committed offset; one without a commit starts at
  the earliest offset with ``--from-beginning``, else at the latest (``auto.offset.reset``),
  so ``--from-beginning`` does not re-read what the group already committed;
* what was *printed* is committed (the offset after each partition's last printed record):
  after each poll's records, before giving partitions up in a rebalance, and on exit —
  ``--max`` stopping in the middle of a poll commits only the records it printed, and so
  does Ctrl-C. A rerun with the same group resumes after them;
* on exit the consumer leaves the group (LeaveGroup), so its partitions move to the other
  members at once, not after the session timeout.

``--partition`` with ``--group`` is refused, as kafka-console-consumer refuses it: the group
decides the partitions. ``--timeout-ms`` counts the time to join the group, as it counts
the time before the first record.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from .args import at_least, client_options, client_parent
from .errors import CommandError
from .topics import describe

if TYPE_CHECKING:
    from broker_sim.common import Clock
    from broker_sim.protocol.records import Record
    from connector.client import Admin, Consumer, Fetcher, TopicPartition

POLL_INTERVAL_MS = 100.0
GROUP_POLL_MS = 500.0  # the longest a --group poll waits for records (a fetch's long poll)


def register(commands: Any) -> None:
    consume = commands.add_parser(
        "consume", parents=[client_parent()], help="print records as lines",
        description="Print the value of each record of TOPIC, one per line (UTF-8, invalid "
                    "bytes replaced). Starts at the latest offsets unless --from-beginning; "
                    "stops after --max records, or when no record arrives for --timeout-ms. "
                    "With --group, the group assigns the partitions, reading starts at its "
                    "committed offsets, and what was printed is committed.")
    consume.add_argument("topic", metavar="TOPIC")
    consume.add_argument("--from-beginning", action="store_true",
                         help="start at the earliest offsets (default: the latest); with "
                              "--group, only partitions the group has no committed offset for")
    consume.add_argument("--group", metavar="G",
                         help="consume as a member of consumer group G: partitions shared with "
                              "its other members, starting at its committed offsets, "
                              "committing what was printed")
    consume.add_argument("--max", type=at_least(1), metavar="N",
                         help="stop after N records (default: no limit)")
    consume.add_argument("--partition", type=at_least(0), metavar="P",
                         help="read only partition P (default: every partition; not with "
                              "--group)")
    consume.add_argument("--print-key", action="store_true",
                         help="print KEY<TAB>VALUE ('null' for a record without a key)")
    consume.add_argument("--timeout-ms", type=at_least(0), default=5000, metavar="MS",
                         help="stop when no record arrives for this long (default 5000)")
    consume.set_defaults(run=consume_records)


class TopicReader:
    """Positions in some partitions of a topic, and one read round (see the module doc).

    Owned by one thread (its admin client and fetcher are single-threaded).
    """

    def __init__(self, admin: Admin, fetcher: Fetcher, topic: str,
                 positions: Mapping[int, int]) -> None:
        self.admin = admin
        self.fetcher = fetcher
        self.topic = topic
        self.positions = dict(positions)

    def poll(self) -> Iterator[Record]:
        """The records between each position and its partition's high watermark."""
        from connector.client import TopicPartition

        latest = self.admin.list_offsets(
            {TopicPartition(self.topic, p): "latest" for p in self.positions})
        for partition, position in sorted(self.positions.items()):
            end = latest[TopicPartition(self.topic, partition)].offset
            if position < end:
                yield from self._read(partition, position, end)

    def _read(self, partition: int, start: int, end: int) -> Iterator[Record]:
        from connector.client import OffsetOutOfRangeError

        try:
            for record in self.fetcher.iter_records(self.topic, partition, start, end):
                self.positions[partition] = record.offset + 1
                yield record
        except OffsetOutOfRangeError as e:
            if not 0 <= e.offset < e.log_start_offset:
                raise
            print(f"pyq consume: warning: {self.topic}-{partition}: offsets {e.offset} to "
                  f"{e.log_start_offset - 1} were deleted; continuing at {e.log_start_offset}",
                  file=sys.stderr)
            self.positions[partition] = e.log_start_offset


class GroupRecord(NamedTuple):
    """A record :class:`GroupReader` hands out (a row of the consumer's Arrow table)."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


class GroupReader:
    """Rounds of a group consumer subscribed to ``topic``, and the commits of what was
    printed (see the module doc).

    :meth:`printed` is told of each record once it is out; :meth:`commit` commits the
    offset after the last printed record of each partition that moved since the last
    commit. Owned by one thread (the consumer's).
    """

    def __init__(self, consumer: Consumer, topic: str, poll_ms: float = GROUP_POLL_MS) -> None:
        self.consumer = consumer
        self.topic = topic
        self.poll_ms = poll_ms
        self.next_offsets: dict[int, int] = {}  # partition -> offset after its last printed
        self.committed: dict[int, int] = {}
        consumer.subscribe([topic], on_revoke=self._revoked)

    def poll(self) -> Iterator[GroupRecord]:
        """The records of one poll; once all of them are printed, they are committed."""
        table = self.consumer.poll(self.poll_ms)
        if not table.num_rows:
            return
        columns = [table.column(name).to_pylist() for name in ("partition", "offset", "key", "value")]
        for partition, offset, key, value in zip(*columns, strict=True):
            yield GroupRecord(partition, offset, key, value)
        self.commit()

    def printed(self, record: GroupRecord) -> None:
        self.next_offsets[record.partition] = record.offset + 1

    def commit(self) -> None:
        """Commit what was printed and not yet committed (CommitFailedError: the group
        rebalanced and the partitions may have moved; a warning, and consuming goes on)."""
        from connector.client import CommitFailedError, TopicPartition

        pending = {p: o for p, o in self.next_offsets.items() if self.committed.get(p) != o}
        if not pending:
            return
        try:
            self.consumer.commit({TopicPartition(self.topic, p): o for p, o in pending.items()})
        except CommitFailedError as e:
            print(f"pyq consume: warning: could not commit offsets {pending} of "
                  f"{self.topic}: {e}", file=sys.stderr)
        else:
            self.committed.update(pending)

    def _revoked(self, partitions: list[TopicPartition]) -> None:
        """The group takes the partitions back: commit what was printed of them first."""
        self.commit()
        for tp in partitions:
            self.next_offsets.pop(tp.partition, None)
            self.committed.pop(tp.partition, None)


def consume(poll: Callable[[], Iterator[Any]], emit: Callable[[Any], None],
            max_records: int | None, idle_timeout_ms: float, clock: Clock,
            sleep_ms: Callable[[float], None],
            poll_interval_ms: float = POLL_INTERVAL_MS) -> int:
    """Emit records from ``poll()`` rounds until ``max_records`` or ``idle_timeout_ms``
    without a record; returns the number emitted."""
    count = 0
    last_record = clock.monotonic_ms()
    while max_records is None or count < max_records:
        found = False
        for record in poll():
            emit(record)
            count += 1
            found = True
            if max_records is not None and count >= max_records:
                return count
        now = clock.monotonic_ms()
        if found:
            last_record = now
            continue
        idle = now - last_record
        if idle >= idle_timeout_ms:
            break
        sleep_ms(min(poll_interval_ms, idle_timeout_ms - idle))
    return count


def record_line(record: Record | GroupRecord, print_key: bool) -> str:
    value = "null" if record.value is None else bytes(record.value).decode("utf-8", "replace")
    if not print_key:
        return value + "\n"
    key = "null" if record.key is None else bytes(record.key).decode("utf-8", "replace")
    return f"{key}\t{value}\n"


def consume_records(args: argparse.Namespace) -> int:
    if args.group is not None:
        return consume_group(args)
    from broker_sim.common import SYSTEM_CLOCK
    from connector.client import Admin, AdminConfig, Fetcher, TopicPartition

    out = sys.stdout
    options = client_options(args)
    # The fetcher checks every option; the admin client takes the ones it has (no fetch.*).
    admin_config = AdminConfig.from_options(options, ignore_unknown=True)
    with Admin(admin_config) as admin, Fetcher(options) as fetcher:
        partitions = [p.partition for p in describe(admin, args.topic)[args.topic].partitions]
        if args.partition is not None:
            if args.partition not in partitions:
                raise CommandError(f"--partition {args.partition}: topic {args.topic!r} has "
                                   f"partitions 0..{len(partitions) - 1}")
            partitions = [args.partition]
        start = "earliest" if args.from_beginning else "latest"
        offsets = admin.list_offsets({TopicPartition(args.topic, p): start for p in partitions})
        reader = TopicReader(admin, fetcher, args.topic,
                             {tp.partition: o.offset for tp, o in offsets.items()})

        def emit(record: Record) -> None:
            out.write(record_line(record, args.print_key))
            out.flush()  # a consumer followed live, or piped, shows each record at once

        count = consume(reader.poll, emit, args.max, args.timeout_ms, SYSTEM_CLOCK,
                        lambda ms: time.sleep(ms / 1000.0))
    print(f"consumed {count} records", file=sys.stderr)
    return 0


def group_options(args: argparse.Namespace) -> dict[str, Any]:
    """The group consumer's options: the connection options, the group, the reset policy
    (``--from-beginning`` is ``auto.offset.reset=earliest``) and manual commits."""
    options = client_options(args)
    given = options.get("group.id")
    if given is not None and str(given) != args.group:
        raise CommandError(f"--group {args.group!r} conflicts with the client option "
                           f"group.id={given!r}: give the group once")
    reset = options.get("auto.offset.reset", "latest")  # the consumer checks the value
    if args.from_beginning:
        if "auto.offset.reset" in options and str(reset) != "earliest":
            raise CommandError(f"--from-beginning conflicts with the client option "
                               f"auto.offset.reset={reset!r}")
        reset = "earliest"
    return {**options, "group.id": args.group, "auto.offset.reset": reset,
            "enable.auto.commit": False}


def consume_group(args: argparse.Namespace) -> int:
    from broker_sim.common import SYSTEM_CLOCK
    from connector.client import Admin, AdminConfig, Consumer

    if args.partition is not None:
        raise CommandError(f"--partition cannot be used with --group: the group {args.group!r} "
                           "assigns the partitions (leave out --partition, or --group to read "
                           "one partition without a group)")
    out = sys.stdout
    options = group_options(args)
    with Admin(AdminConfig.from_options(options, ignore_unknown=True)) as admin:
        describe(admin, args.topic)  # a missing topic is an error, not an endless wait
    with Consumer(options) as consumer:
        reader = GroupReader(consumer, args.topic, min(GROUP_POLL_MS, max(1, args.timeout_ms)))

        def emit(record: GroupRecord) -> None:
            out.write(record_line(record, args.print_key))
            out.flush()
            reader.printed(record)

        try:
            # consumer.poll waits for records itself: no pause between rounds
            count = consume(reader.poll, emit, args.max, args.timeout_ms, SYSTEM_CLOCK,
                            lambda ms: None)
        except BaseException:
            # Ctrl-C or a closed pipe: still commit what was printed, if the group lets us
            with contextlib.suppress(Exception):
                reader.commit()
            raise
        reader.commit()
    print(f"consumed {count} records", file=sys.stderr)
    return 0
