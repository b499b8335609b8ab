"""``pyq consume TOPIC [TOPIC ...] | --regex PATTERN``: print the records of topics'
partitions as they arrive, until interrupted (kcat ``-C``, ``rpk topic consume``).

It follows the topics until Ctrl-C (SIGINT) or SIGTERM, unless ``-e`` (exit once every
partition is read to its end), ``-c/--max N`` (after N records) or ``--timeout-ms MS``
(after MS without a record) ends it first. Either way it prints ``consumed N records`` on
stderr and exits 0, as kcat does on a signal; a second Ctrl-C interrupts at once. Several
topics may be named, or ``--regex`` matches topic names (the whole name, Python's ``re``;
internal ``__`` topics never match), once, at the start.

Without ``--group``, records are read without a consumer group, the way a Spark source's
executor reads (:class:`connector.client.Fetcher`), by :class:`TopicReader` rounds:

1. ask each partition's leader for its high watermark (one ListOffsets per leader);
2. for each partition with records at or past its position, fetch
   ``[position, high watermark)`` — records that exist, so the fetch does not wait — and
   move the position past them.

:func:`consume` repeats rounds until ``--max`` records have been printed, every partition
is read to its end (``-e``), it is interrupted, or no record has arrived for
``--timeout-ms`` (if given), pausing ``poll_interval_ms`` after a round that found nothing. It takes the clock and the pause as arguments, so tests drive the idle timeout
without sleeping. Worked example, ``--timeout-ms 5000``: records arrive at t=0 and
t=4000, then nothing; rounds at t=4100, 4200, ... find none, and the round at t=9000
(5000 ms after the last record) ends the command.

Positions start where ``-o`` says (kcat's offsets, per partition: ``beginning``, ``end``,
an offset ``N`` — below the partition's first offset it starts there, past its end at the
end —, ``-N`` for N records before the end (at most back to the first), ``s@MS`` for the
first record whose timestamp is at or after MS, the end if there is none), at the earliest
offsets with ``--from-beginning``, else at the latest (only new records are printed).
With ``-e`` (kcat's exit-at-end) a partition is done once its position reaches the end a
round listed for it, and the command ends when every partition is done; records appended
to a finished partition afterwards are not read. Within a round, partitions are read in order, so records
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

* ``-o`` moves each partition the first time this process is assigned it (through
  :meth:`Consumer.seek` in the assignment callback), whatever the group committed; a later
  rebalance does not move it again. ``-o stored`` is the default: the committed offset;
* ``-e`` ends the command after a poll that found nothing while every assigned partition's
  position is at its high watermark.

How each record is printed (the default lines, ``-f``, ``-J``) is
:mod:`connector.cli.record_output`. With ``--value-format avro`` (``--key-format``; kcat's
``-s value=avro``, ``-s avro`` for both) and ``-r/--schema-registry URL``, a
Confluent-framed Avro value (key) is printed as the JSON of its datum, each schema id
fetched once from the registry (:mod:`connector.cli.avro_codec`); a record that is not
framed Avro, or does not decode, ends the command with an error naming it
(``the value of clicks-0@17 is not Confluent-framed Avro: no magic byte 0``).

``--partition`` with ``--group`` is refused, as kafka-console-consumer refuses it: the group
decides the partitions; with several topics it is refused too (whose partition?). ``--timeout-ms`` counts the time to join the group, as it counts
the time before the first record.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import signal
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .args import at_least, client_options, client_parent
from .avro_codec import AvroDecoder, add_format_options, formats, registry_of
from .errors import EXIT_USAGE, CommandError
from .readers import (
    GROUP_POLL_MS,
    GroupReader,
    StartOffset,
    TopicReader,
    resolve_start,
    start_offset,
)
from .record_output import Message, parse_format, printer
from .topics import describe

if TYPE_CHECKING:
    from broker_sim.common import Clock
    from connector.client import Admin

POLL_INTERVAL_MS = 100.0

EXAMPLES = r"""examples:
  pyq consume clicks                                  follow new records until Ctrl-C
  pyq consume clicks views --regex 'audit-.*' -e -o beginning   (several topics)
  pyq consume clicks -o beginning -e                  every record there is now, then exit
  pyq consume clicks -o -10 -e -f '%p:%o %k=%s\n'     the last 10 of each partition
  pyq consume clicks -o s@1700000000000 -J            from a time on, as JSON lines
  pyq consume clicks -p 2 -o 1500 -c 1 -f '%h\n'      the headers of record 1500 of partition 2
  pyq consume clicks --group audit --from-beginning   as a member of consumer group audit

-f tokens (kcat's): %t topic  %p partition  %o offset  %k key  %s value  %K/%S key/value
  length (-1: null)  %R value length as a 4-byte big-endian integer  %T timestamp (ms)
  %h headers (name=value,...; a null value is NULL)  %% a %; escapes \n \r \t \xHH.
  Nothing is added: end FORMAT with \n for lines. A null key or value prints nothing
  (NULL with -Z).
-J (kcat's envelope), one object per line: topic, partition, offset, tstype
  (create|logappend), ts, broker, headers ([name, value, ...], only if the record has
  any), key, payload. Bytes that are not valid UTF-8 (key, payload, header value) are
  {"base64": "<standard base64>"} instead of a string; null stays null."""


def topic_pattern(text: str) -> re.Pattern[str]:
    """An option type: a regular expression (Python's ``re``)."""
    try:
        return re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError(f"{text!r} is not a regular expression: {e}") from None


def register(commands: Any) -> None:
    consume = commands.add_parser(
        "consume", parents=[client_parent()], help="print records as lines",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES,
        description=textwrap.fill("Print the records of each TOPIC (or of the topics "
                    "--regex matches). By default each value on a line (UTF-8, "
                    "invalid bytes replaced), as kafka-console-consumer; -f FORMAT or -J as "
                    "kcat. Starts at the latest offsets unless -o or --from-beginning; follows "
                    "the topics until Ctrl-C (then prints the count on stderr and exits 0, as "
                    "kcat), or stops after --max records, at the end of every partition with "
                    "-e, or when no record arrives for --timeout-ms. With --group, the group "
                    "assigns the partitions, reading starts at its committed offsets, and what "
                    "was printed is committed.", 88))
    consume.add_argument("topics", metavar="TOPIC", nargs="*",
                         help="a topic to read (several may be given)")
    consume.add_argument("--regex", metavar="PATTERN", type=topic_pattern,
                         help="also read every topic whose whole name matches PATTERN "
                              "(Python's re; matched once, at the start; internal __ topics "
                              "never match)")
    start = consume.add_mutually_exclusive_group()
    start.add_argument("-o", "--offset", type=start_offset, metavar="OFFSET",
                       help="where every partition starts (kcat's -o): beginning, end, N (the "
                            "offset N; outside the partition's offsets: its first or its end), "
                            "-N (N records before the end), s@MS (the first record with a "
                            "timestamp at or after MS ms since the epoch; the end if none), "
                            "stored (the group's committed offset; --group only). With "
                            "--group it overrides the committed offsets, once per partition")
    start.add_argument("--from-beginning", action="store_true",
                       help="start at the earliest offsets (default: the latest); with "
                            "--group, only partitions the group has no committed offset for")
    consume.add_argument("-e", "--exit-at-end", "--exit", dest="exit_at_end", action="store_true",
                         help="exit once every partition is read to its end (kcat's -e): "
                              "records appended after a partition's end was reached are "
                              "not read")
    consume.add_argument("--group", metavar="G",
                         help="consume as a member of consumer group G: partitions shared with "
                              "its other members, starting at its committed offsets, "
                              "committing what was printed")
    consume.add_argument("--max", type=at_least(1), metavar="N",
                         help="stop after N records (default: no limit)")
    consume.add_argument("-c", "--max-messages", dest="max", type=at_least(1), metavar="N",
                         default=argparse.SUPPRESS,
                         help="kcat's and kafka-console-consumer's names for --max")
    consume.add_argument("--partition", type=at_least(0), metavar="P",
                         help="read only partition P (default: every partition; not with "
                              "--group)")
    consume.add_argument("-p", dest="partition", type=at_least(0), metavar="P",
                         default=argparse.SUPPRESS, help="kcat's name for --partition")
    output = consume.add_argument_group("output")
    style = output.add_mutually_exclusive_group()
    style.add_argument("-f", "--format", type=parse_format, metavar="FORMAT",
                       help="print each record as FORMAT, kcat's tokens (listed below)")
    style.add_argument("-J", "--json", action="store_true",
                       help="print each record as a JSON object on its own line, kcat's field "
                            "names (listed below)")
    output.add_argument("--print-key", action="store_true",
                        help="print KEY<TAB>VALUE ('null' for a record without a key)")
    output.add_argument("--print-headers", action="store_true",
                        help="print the headers first, NAME:VALUE joined by ',' (NO_HEADERS "
                             "if none), then a TAB")
    output.add_argument("-Z", "--null", action="store_true",
                        help="with -f, print a null key or value as NULL instead of nothing")
    consume.add_argument("--timeout-ms", type=at_least(0), metavar="MS",
                         help="stop when no record arrives for this long (default: follow "
                              "until interrupted)")
    add_format_options(consume, "decode")
    consume.set_defaults(run=consume_records)


def check_output_options(args: argparse.Namespace) -> None:
    """--print-key / --print-headers shape the default output, -Z the -f output."""
    if args.format is not None or args.json:
        chosen = "-f" if args.format is not None else "-J"
        for flag in ("print_key", "print_headers"):
            if getattr(args, flag):
                name = "--" + flag.replace("_", "-")
                raise CommandError(f"{name} cannot be used with {chosen}, which says what to "
                                   f"print itself (-f: %k key, %h headers)", EXIT_USAGE)
    if args.null and args.format is None:
        raise CommandError("-Z changes what -f prints for a null key or value: give -f FORMAT "
                           "(-J prints null, the default output 'null')", EXIT_USAGE)


def consume(poll: Callable[[], Iterator[Any]], emit: Callable[[Any], None],
            max_records: int | None, idle_timeout_ms: float | None, clock: Clock,
            sleep_ms: Callable[[float], None],
            poll_interval_ms: float = POLL_INTERVAL_MS,
            finished: Callable[[], bool] = lambda: False) -> int:
    """Emit records from ``poll()`` rounds until ``max_records``, ``finished()`` after a
    round, or ``idle_timeout_ms`` without a record (None: never); returns the number
    emitted."""
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
        if finished():
            break
        now = clock.monotonic_ms()
        if found:
            last_record = now
            continue
        if idle_timeout_ms is None:
            sleep_ms(poll_interval_ms)
            continue
        idle = now - last_record
        if idle >= idle_timeout_ms:
            break
        sleep_ms(min(poll_interval_ms, idle_timeout_ms - idle))
    return count


def decoder(args: argparse.Namespace) -> Callable[[Message], Message]:
    """What ``--key-format``/``--value-format avro`` (``-s``) make of a record: its key and
    value as the JSON of their Avro datum (:mod:`connector.cli.avro_codec`)."""
    chosen = formats(args)
    if all(fmt == "binary" for fmt in chosen.values()):
        return lambda message: message
    avro = AvroDecoder(registry_of(args))

    def decode(message: Message) -> Message:
        where = f"{message.topic}-{message.partition}@{message.offset}"
        key, value = message.key, message.value
        if chosen["key"] == "avro":
            key = avro.decode(key, f"the key of {where}")
        if chosen["value"] == "avro":
            value = avro.decode(value, f"the value of {where}")
        return message._replace(key=key, value=value)

    return decode


def writer(args: argparse.Namespace) -> Callable[[Message], None]:
    """Print one record on stdout, flushed at once (a consumer followed live, or piped,
    shows each record as it comes): bytes as rendered, or text where stdout has no bytes
    underneath (a test's captured stream)."""
    render = printer(args).render
    out = sys.stdout
    binary = getattr(out, "buffer", None)
    decode = decoder(args)

    def write(message: Message) -> None:
        data = render(decode(message))
        if binary is not None:
            binary.write(data)
            binary.flush()
        else:
            out.write(data.decode("utf-8", "replace"))
            out.flush()

    return write


def consume_records(args: argparse.Namespace) -> int:
    check_output_options(args)
    if not args.topics and args.regex is None:
        raise CommandError("name a TOPIC (or several), or give --regex PATTERN", EXIT_USAGE)
    if args.group is not None:
        return consume_group(args)
    from broker_sim.common import SYSTEM_CLOCK
    from connector.client import Admin, AdminConfig, Fetcher

    if args.offset is not None and args.offset.kind == "stored":
        raise CommandError("-o stored needs --group: the committed offsets are a group's",
                           EXIT_USAGE)
    write = writer(args)
    options = client_options(args)
    # The fetcher checks every option; the admin client takes the ones it has (no fetch.*).
    admin_config = AdminConfig.from_options(options, ignore_unknown=True)
    with Admin(admin_config) as admin, Fetcher(options) as fetcher:
        topics = chosen_topics(admin, args)
        if args.partition is not None and len(topics) > 1:
            raise CommandError(f"--partition {args.partition} needs a single topic (reading "
                               f"{', '.join(topics)})", EXIT_USAGE)
        start = args.offset or StartOffset("beginning" if args.from_beginning else "end")
        readers = []
        for topic in topics:
            described = describe(admin, topic)[topic].partitions
            leaders = {p.partition: p.leader for p in described}
            partitions = sorted(leaders)
            if args.partition is not None:
                if args.partition not in partitions:
                    raise CommandError(f"--partition {args.partition}: topic {topic!r} has "
                                       f"partitions 0..{len(partitions) - 1}")
                partitions = [args.partition]
            readers.append(TopicReader(admin, fetcher, topic,
                                       resolve_start(admin, topic, partitions, start), leaders,
                                       exit_at_end=args.exit_at_end))

        def poll() -> Iterator[Message]:
            for reader in readers:
                yield from reader.poll()

        with until_interrupted() as interrupted:
            count = consume(poll, write, args.max, args.timeout_ms, SYSTEM_CLOCK,
                            lambda ms: time.sleep(ms / 1000.0),
                            finished=lambda: all(r.finished for r in readers) or interrupted())
    print(f"consumed {count} records", file=sys.stderr)
    return 0


def chosen_topics(admin: Admin, args: argparse.Namespace) -> list[str]:
    """The TOPIC arguments, then the topics ``--regex`` matches (each once, in order)."""
    topics = list(dict.fromkeys(args.topics))
    if args.regex is not None:
        matched = sorted(t for t in admin.list_topics()
                         if args.regex.fullmatch(t) and not t.startswith("__"))
        if not matched:
            raise CommandError(f"--regex {args.regex.pattern!r} matches no topic")
        topics += [t for t in matched if t not in topics]
    return topics


@contextlib.contextmanager
def until_interrupted() -> Iterator[Callable[[], bool]]:
    """Ctrl-C (SIGINT) and SIGTERM end the current round, not whatever the client is in the
    middle of (a KeyboardInterrupt inside its network I/O could leave a half-read response
    behind, and a group's commit and LeaveGroup after it waiting out their timeouts); a
    second one interrupts at once. Yields "was it interrupted?". The handler takes no lock
    (a threading.Event would): Python may run the second signal's handler inside the
    first's. Main thread only (elsewhere nothing is installed)."""
    interrupted: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        if interrupted:
            raise KeyboardInterrupt
        interrupted.append(signum)

    previous = {sig: _install(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield lambda: bool(interrupted)
    finally:
        for sig, handler in previous.items():
            _install(sig, handler)


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
    from connector.client import Admin, AdminConfig, Consumer, TopicPartition

    if args.partition is not None:
        raise CommandError(f"--partition cannot be used with --group: the group {args.group!r} "
                           "assigns the partitions (leave out --partition, or --group to read "
                           "one partition without a group)")
    write = writer(args)
    options = group_options(args)
    with Admin(AdminConfig.from_options(options, ignore_unknown=True)) as admin, \
            Consumer(options, include_headers=True) as consumer:
        topics = chosen_topics(admin, args)
        # a missing topic is an error, not an endless wait
        leaders = {TopicPartition(topic, p.partition): p.leader for topic in topics
                   for p in describe(admin, topic)[topic].partitions}
        poll_ms = GROUP_POLL_MS if args.timeout_ms is None else min(GROUP_POLL_MS,
                                                                    max(1, args.timeout_ms))
        reader = GroupReader(consumer, topics, poll_ms, admin=admin, start=args.offset,
                             leaders=leaders, exit_at_end=args.exit_at_end)

        def emit(record: Message) -> None:
            write(record)
            reader.printed(record)

        with until_interrupted() as interrupted:
            try:
                # consumer.poll waits for records itself: no pause between rounds
                count = consume(reader.poll, emit, args.max, args.timeout_ms, SYSTEM_CLOCK,
                                lambda ms: None,
                                finished=lambda: reader.finished or interrupted())
            except BaseException:
                # a second Ctrl-C or a closed pipe: still commit what was printed, if the
                # group lets us
                with contextlib.suppress(Exception):
                    reader.commit()
                raise
        reader.commit()
    print(f"consumed {count} records", file=sys.stderr)
    return 0


def _install(signum: int, handler: Any) -> Any:
    """Set a signal's handler (main thread only); the previous one, to put back."""
    if handler is None or threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signum, handler)
