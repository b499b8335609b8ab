"""``pyq produce TOPIC``: every line of stdin becomes one record.

A line that contains the key separator (a TAB unless ``--key-separator`` says otherwise)
is split at its first occurrence into key and value; a line without it is a value with
no key. Lines are bytes: nothing is decoded, and only the line ending is removed.

>>> split_line(b"user-1\\tclicked\\tbuy\\n", b"\\t")
(b'user-1', b'clicked\\tbuy')
>>> split_line(b"no key here\\r\\n", b"\\t")
(None, b'no key here')
>>> split_line(b"a\\tb\\n", None)                       # --no-key
(None, b'a\\tb')

Records go out through :class:`connector.client.Producer` (``acks=all`` unless ``--acks``);
at the end of input the command waits for every acknowledgement and prints a summary on
stderr. If any record failed, it says how many and the first error, and exits with 1.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .args import at_least, client_options, client_parent, name_value
from .errors import CommandError

if TYPE_CHECKING:
    from connector.client import Producer, RecordMetadata

_SEPARATOR_NAMES = {"TAB": "\t", "\\t": "\t", "SPACE": " ", "COMMA": ","}


def register(commands: Any) -> None:
    produce = commands.add_parser(
        "produce", parents=[client_parent()], help="send stdin lines as records",
        description="Send each line of stdin as a record to TOPIC. A line 'KEY<TAB>VALUE' "
                    "becomes a record with that key (see --key-separator); other lines "
                    "have no key. Prints how many records were sent on stderr.")
    produce.add_argument("topic", metavar="TOPIC")
    produce.add_argument("--key-separator", type=separator, default="\t", metavar="SEP",
                         help="split a line into key and value at the first SEP; TAB, "
                              "SPACE, COMMA or any string (default TAB)")
    produce.add_argument("--no-key", action="store_true",
                         help="never split lines: every line is a value without a key")
    produce.add_argument("--partition", type=at_least(0), metavar="P",
                         help="send every record to partition P (default: by key, or sticky)")
    produce.add_argument("--acks", choices=["0", "1", "all"], default="all",
                         help="acknowledgements the leader waits for (default all)")
    produce.add_argument("--compression-type", default="none",
                         choices=["none", "gzip", "snappy", "lz4", "zstd"],
                         help="compression of record batches (default none)")
    produce.add_argument("--producer-property", type=name_value, action="append", default=[],
                         metavar="NAME=VALUE",
                         help="any producer option, e.g. linger.ms=50 (repeatable)")
    produce.set_defaults(run=produce_lines)


def separator(text: str) -> str:
    """An option type: a non-empty separator, with names for the awkward ones."""
    if not text:
        raise argparse.ArgumentTypeError("'' is not allowed: must be a non-empty string")
    return _SEPARATOR_NAMES.get(text.upper() if text.isalpha() else text, text)


def split_line(line: bytes, sep: bytes | None) -> tuple[bytes | None, bytes]:
    """(key, value) of one input line, its line ending removed (see the module doc)."""
    if line.endswith(b"\n"):
        line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
    if sep is not None:
        key, found, value = line.partition(sep)
        if found:
            return key, value
    return None, line


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


def send_lines(producer: Producer, topic: str, lines: Iterable[bytes], sep: bytes | None,
               partition: int | None, report: DeliveryReport) -> int:
    """Send every line; returns how many were handed to the producer."""
    sent = 0
    for line in lines:
        key, value = split_line(line, sep)
        producer.send(topic, value, key=key, partition=partition, callback=report)
        sent += 1
    return sent


def produce_lines(args: argparse.Namespace) -> int:
    from connector.client import Producer

    options = {**client_options(args), "acks": args.acks,
               "compression.type": args.compression_type,
               "max.block.ms": args.api_timeout_ms, **dict(args.producer_property)}
    sep = None if args.no_key else args.key_separator.encode()
    report = DeliveryReport()
    producer = Producer(options)
    try:
        sent = send_lines(producer, args.topic, sys.stdin.buffer, sep, args.partition, report)
        producer.flush(timeout=args.api_timeout_ms / 1000.0)
    finally:
        producer.close(timeout=args.api_timeout_ms / 1000.0)
    if report.failed:
        raise CommandError(f"{report.failed} of {sent} records to {args.topic!r} failed; "
                           f"the first: {type(report.first_error).__name__}: "
                           f"{report.first_error}")
    print(f"sent {report.acknowledged} records to {args.topic}", file=sys.stderr)
    return 0
