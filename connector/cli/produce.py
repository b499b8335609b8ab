"""``pyq produce TOPIC``: every line of stdin (or of ``-l FILE``) becomes one record.

A line that contains the key separator (a TAB unless ``--key-separator`` / ``-K`` says
otherwise) is split at its first occurrence into key and value; a line without it is a
value with no key. Lines are bytes: nothing is decoded, and only the line ending is
removed. With ``-Z`` (kcat's), an empty value or key is sent as null: an empty line is a
record with a null value, ``KEY<TAB>`` a tombstone for KEY.

>>> split_line(b"user-1\\tclicked\\tbuy\\n", b"\\t")
(b'user-1', b'clicked\\tbuy')
>>> split_line(b"no key here\\r\\n", b"\\t")
(None, b'no key here')
>>> split_line(b"a\\tb\\n", None)                       # --no-key
(None, b'a\\tb')
>>> split_line(b"user-1\\t\\n", b"\\t", empty_as_null=True)   # -Z: a tombstone
(b'user-1', None)

``-H NAME=VALUE`` (repeatable, kcat's) adds a header to every record; ``-H NAME`` without
``=`` adds one with a null value. Records go out through :class:`connector.client.Producer`
(``acks=all`` unless ``--acks``); at the end of input the command waits for every
acknowledgement and prints a summary on stderr. If any record failed, it says how many and
the first error, and exits with 1.

With ``--value-schema FILE`` (``--key-schema``) and ``-r/--schema-registry URL`` each value
(key) is a JSON text, sent as the Confluent-framed Avro of that schema, registered first
under ``TOPIC-value`` (``TOPIC-key``; a schema the subject's compatibility level refuses is
an error before anything is sent). A line that is not JSON or does not match the schema
ends the command with an error naming its line number; the lines before it were sent.
kcat's ``-s value=avro`` is accepted (with ``--value-schema``).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import textwrap
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .args import at_least, client_options, client_parent, name_value
from .avro_codec import AvroEncoder, add_format_options, formats, registry_of
from .errors import EXIT_USAGE, CommandError

if TYPE_CHECKING:
    from connector.client import Producer, RecordMetadata

_SEPARATOR_NAMES = {"TAB": "\t", "\\t": "\t", "SPACE": " ", "COMMA": ","}


EXAMPLES = r"""examples:
  printf 'k1\tv1\nk2\tv2\n' | pyq produce clicks            keys k1, k2 (TAB separated)
  pyq produce clicks -l events.txt -K : -H source=import      KEY:VALUE lines of a file, a header
  printf 'user-7\t\n' | pyq produce users -Z                  a tombstone (null value) for user-7"""


def register(commands: Any) -> None:
    produce = commands.add_parser(
        "produce", parents=[client_parent()], help="send stdin lines as records",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES,
        description=textwrap.fill("Send each line of stdin (or of -l FILE) as a record to TOPIC. A line "
                    "'KEY<TAB>VALUE' becomes a record with that key (see --key-separator); "
                    "other lines have no key. Prints how many records were sent on stderr.", 88))
    produce.add_argument("topic", metavar="TOPIC")
    produce.add_argument("--key-separator", type=separator, default="\t", metavar="SEP",
                         help="split a line into key and value at the first SEP; TAB, "
                              "SPACE, COMMA, \\t, \\xHH (a byte in hexadecimal) or any "
                              "string (default TAB)")
    produce.add_argument("-K", dest="key_separator", type=separator, metavar="SEP",
                         default=argparse.SUPPRESS, help="kcat's name for --key-separator")
    produce.add_argument("--no-key", action="store_true",
                         help="never split lines: every line is a value without a key")
    produce.add_argument("-H", "--header", dest="headers", type=header, action="append",
                         default=[], metavar="NAME=VALUE",
                         help="add this header to every record (repeatable); NAME alone: "
                              "a header with a null value")
    produce.add_argument("-Z", "--null", action="store_true",
                         help="send an empty value or key as null (an empty line: a record "
                              "with a null value; KEY<TAB>: a tombstone)")
    produce.add_argument("-l", "--file", metavar="FILE",
                         help="read the lines from FILE instead of stdin")
    produce.add_argument("--partition", type=at_least(0), metavar="P",
                         help="send every record to partition P (default: by key, or sticky)")
    produce.add_argument("-p", dest="partition", type=at_least(0), metavar="P",
                         default=argparse.SUPPRESS, help="kcat's name for --partition")
    produce.add_argument("--acks", choices=["0", "1", "all"], default="all",
                         help="acknowledgements the leader waits for (default all)")
    produce.add_argument("--compression-type", default="none",
                         choices=["none", "gzip", "snappy", "lz4", "zstd"],
                         help="compression of record batches (default none)")
    produce.add_argument("--producer-property", type=name_value, action="append", default=[],
                         metavar="NAME=VALUE",
                         help="any producer option, e.g. linger.ms=50 (repeatable)")
    add_format_options(produce, "encode")
    produce.set_defaults(run=produce_lines)


def header(text: str) -> tuple[str, bytes | None]:
    """An option type: ``NAME=VALUE`` -> (NAME, VALUE as UTF-8); ``NAME`` -> (NAME, None)."""
    name, sep, value = text.partition("=")
    if not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE or NAME: the name is empty")
    return name, value.encode() if sep else None


def separator(text: str) -> str:
    """An option type: a non-empty separator, with names for the awkward ones."""
    if not text:
        raise argparse.ArgumentTypeError("'' is not allowed: must be a non-empty string")
    named = _SEPARATOR_NAMES.get(text.upper() if text.isalpha() else text)
    if named is not None:
        return named
    return re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), text)


def split_line(line: bytes, sep: bytes | None, empty_as_null: bool = False
               ) -> tuple[bytes | None, bytes | None]:
    """(key, value) of one input line, its line ending removed (see the module doc)."""
    if line.endswith(b"\n"):
        line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
    key: bytes | None = None
    value: bytes | None = line
    if sep is not None:
        before, found, after = line.partition(sep)
        if found:
            key, value = before, after
    if empty_as_null:
        key, value = key or None, value or None
    return key, value


class DeliveryReport:
    """Counts acknowledgements and failures; callbacks run on the producer's sender thread,
    so the counters are guarded by a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.acknowledged = 0
        self.failed = 0
        self.first_error: BaseException | None = None

    def __call__(self, metadata: RecordMetadata | None, error: BaseException | None) -> None:
        with self._lock:
            if error is None:
                self.acknowledged += 1
            else:
                self.failed += 1
                if self.first_error is None:
                    self.first_error = error


Encode = Callable[[bytes | None, bytes | None, int], tuple[bytes | None, bytes | None]]


def send_lines(producer: Producer, topic: str, lines: Iterable[bytes], sep: bytes | None,
               partition: int | None, report: DeliveryReport,
               headers: Sequence[tuple[str, bytes | None]] = (),
               empty_as_null: bool = False, encode: Encode | None = None) -> int:
    """Send every line; returns how many were handed to the producer. ``encode`` makes
    the record's key and value of the line's (``--value-schema``), given the line number."""
    sent = 0
    for number, line in enumerate(lines, 1):
        key, value = split_line(line, sep, empty_as_null)
        if encode is not None:
            key, value = encode(key, value, number)
        producer.send(topic, value, key=key, partition=partition, headers=headers or None,
                      callback=report)
        sent += 1
    return sent


def encoder(args: argparse.Namespace) -> Encode | None:
    """What ``--value-schema FILE`` (``--key-schema``, ``--value-format avro``) makes of a
    line's key and value: the Confluent-framed Avro of their JSON, the schema registered
    under TOPIC-value (TOPIC-key) first (:mod:`connector.cli.avro_codec`)."""
    chosen = formats(args)
    if all(fmt == "binary" for fmt in chosen.values()):
        return None
    client = registry_of(args)
    encoders: dict[str, AvroEncoder] = {}
    for field, fmt in chosen.items():
        if fmt != "avro":
            continue
        path = getattr(args, f"{field}_schema")
        if path is None:
            raise CommandError(f"{field} format avro needs the schema: --{field}-schema FILE",
                               EXIT_USAGE)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise CommandError(f"--{field}-schema {path}: {e.strerror or e}", EXIT_USAGE) from None
        encoders[field] = AvroEncoder(client, f"{args.topic}-{field}", text)

    def encode(key: bytes | None, value: bytes | None, line: int
               ) -> tuple[bytes | None, bytes | None]:
        if "key" in encoders:
            key = encoders["key"].encode(key, f"line {line}: the key")
        if "value" in encoders:
            value = encoders["value"].encode(value, f"line {line}: the value")
        return key, value

    return encode


def produce_lines(args: argparse.Namespace) -> int:
    from connector.client import Producer

    options = {**client_options(args), "acks": args.acks,
               "compression.type": args.compression_type,
               "max.block.ms": args.api_timeout_ms, **dict(args.producer_property)}
    sep = None if args.no_key else args.key_separator.encode()
    report = DeliveryReport()
    encode = encoder(args)
    with contextlib.ExitStack() as stack:
        if args.file is None:
            lines: Iterable[bytes] = sys.stdin.buffer
        else:
            try:
                lines = stack.enter_context(open(args.file, "rb"))
            except OSError as e:
                raise CommandError(f"-l {args.file}: {e.strerror or e}") from None
        producer = Producer(options)
        try:
            sent = send_lines(producer, args.topic, lines, sep, args.partition, report,
                              args.headers, args.null, encode)
            producer.flush(timeout=args.api_timeout_ms / 1000.0)
        finally:
            producer.close(timeout=args.api_timeout_ms / 1000.0)
    if report.failed:
        raise CommandError(f"{report.failed} of {sent} records to {args.topic!r} failed; "
                           f"the first: {type(report.first_error).__name__}: "
                           f"{report.first_error}")
    print(f"sent {report.acknowledged} records to {args.topic}", file=sys.stderr)
    return 0
