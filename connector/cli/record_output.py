r"""How ``pyq consume`` prints a record: the default lines, kcat's ``-f`` format, ``-J`` JSON.

Every reader hands out :class:`Message`; a printer turns one into the bytes written to
stdout, so what is printed does not depend on how the record was read (with or without a
consumer group).

**Default** (kafka-console-consumer's): the value, UTF-8 with invalid bytes replaced, one
per line. ``--print-headers`` puts the headers first (``name:value`` joined by ``,``,
``NO_HEADERS`` for none), ``--print-key`` the key, each followed by a TAB; a null key,
value or header value prints as ``null``::

    >>> m = Message("t", 0, 7, 1700000000000, 0, b"k", b"v", (("h", b"1"), ("n", None)), 0)
    >>> DefaultPrinter(print_key=True, print_headers=True).render(m)
    b'h:1,n:null\tk\tv\n'

**-f FORMAT** (kcat's): the text of FORMAT with these tokens replaced, nothing added (a
line needs its ``\n``). ``%t`` topic, ``%p`` partition, ``%o`` offset, ``%k`` key, ``%s``
value (raw bytes; a null key or value prints nothing, or ``NULL`` with ``-Z``), ``%K`` /
``%S`` key / value length in bytes (-1 for null), ``%R`` the value length as a 4-byte
big-endian signed integer, ``%T`` timestamp (ms since the epoch), ``%h`` headers
(``name=value`` joined by ``,``; a null header value prints ``NULL``), ``%%`` a ``%``.
Escapes: ``\n``, ``\r``, ``\t``, ``\xHH`` (the byte HH, hexadecimal), ``\\``; a backslash
before any other character stands for that character::

    >>> FormatPrinter(parse_format(r"%t [%p] @%o %K:%k %S:%s %h\n")).render(m)
    b't [0] @7 1:k 1:v h=1,n=NULL\n'

**-J** (kcat's JSON envelope), one object per line, kcat's field names in kcat's order:
``topic``, ``partition``, ``offset``, ``tstype`` (``create`` or ``logappend``), ``ts``
(ms), ``broker`` (the partition's leader when the command started, -1 if unknown),
``headers`` (only when the record has some: a flat array ``[name, value, name, value,
...]``, a null value as ``null``), ``key``, ``payload`` (null for a null key or value).
Bytes that are valid UTF-8 are a JSON string; any other bytes (a key, a value or a header
value) are an object ``{"base64": "<standard base64 of the bytes>"}`` in the string's
place, so every line is valid JSON and the bytes are recoverable::

    >>> JsonPrinter().render(m._replace(value=b"\xff\x00", headers=()))
    b'{"topic":"t","partition":0,"offset":7,"tstype":"create","ts":1700000000000,"broker":0,"key":"k","payload":{"base64":"/wA="}}\n'
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import struct
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

CREATE_TIME, LOG_APPEND_TIME = 0, 1


class Message(NamedTuple):
    """One consumed record, as every printer sees it."""

    topic: str
    partition: int
    offset: int
    timestamp: int  # ms since the epoch
    timestamp_type: int  # CREATE_TIME, LOG_APPEND_TIME, or -1 if unknown
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes | None]]
    broker: int  # the partition's leader as known when the command started; -1 unknown


class Printer:
    def render(self, message: Message) -> bytes:
        raise NotImplementedError


def _text(data: bytes | None) -> str:
    return "null" if data is None else bytes(data).decode("utf-8", "replace")


class DefaultPrinter(Printer):
    """kafka-console-consumer's layout (see the module doc)."""

    def __init__(self, print_key: bool = False, print_headers: bool = False) -> None:
        self.print_key = print_key
        self.print_headers = print_headers

    def render(self, message: Message) -> bytes:
        parts = []
        if self.print_headers:
            parts.append(",".join(f"{name}:{_text(value)}" for name, value in message.headers)
                         or "NO_HEADERS")
        if self.print_key:
            parts.append(_text(message.key))
        parts.append(_text(message.value))
        return ("\t".join(parts) + "\n").encode()


# ---- kcat's -f format ------------------------------------------------------------------

Token = Callable[[Message, bytes], bytes]  # (message, null string) -> bytes

_ESCAPES = {"n": b"\n", "r": b"\r", "t": b"\t"}


def _unescape(text: str) -> bytes:
    r"""Literal text of a format: ``\n``, ``\r``, ``\t``, ``\xHH``, ``\<c>`` -> bytes."""
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 == len(text):
            out += c.encode()
            i += 1
            continue
        nxt = text[i + 1]
        if nxt in _ESCAPES:
            out += _ESCAPES[nxt]
            i += 2
        elif nxt == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", text[i + 2:i + 4]):
            out.append(int(text[i + 2:i + 4], 16))
            i += 4
        else:
            out += nxt.encode()
            i += 2
    return bytes(out)


def _bytes_or_null(data: bytes | None, null: bytes) -> bytes:
    return null if data is None else bytes(data)


def _length(data: bytes | None) -> bytes:
    return str(-1 if data is None else len(data)).encode()


def _headers_csv(message: Message) -> bytes:
    return b",".join(name.encode() + b"=" + (b"NULL" if value is None else bytes(value))
                     for name, value in message.headers)


TOKENS: dict[str, Token] = {
    "t": lambda m, null: m.topic.encode(),
    "p": lambda m, null: str(m.partition).encode(),
    "o": lambda m, null: str(m.offset).encode(),
    "k": lambda m, null: _bytes_or_null(m.key, null),
    "s": lambda m, null: _bytes_or_null(m.value, null),
    "K": lambda m, null: _length(m.key),
    "S": lambda m, null: _length(m.value),
    "R": lambda m, null: struct.pack(">i", -1 if m.value is None else len(m.value)),
    "T": lambda m, null: str(m.timestamp).encode(),
    "h": lambda m, null: _headers_csv(m),
}


def parse_format(text: str) -> list[bytes | Token]:
    """An option type: a ``-f`` format -> literal byte strings and token functions."""
    parts: list[bytes | Token] = []
    literal: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):  # keep escapes whole: "\%" is not a token
            literal.append(text[i:i + 2])
            i += 2
            continue
        if c != "%":
            literal.append(c)
            i += 1
            continue
        if i + 1 == len(text):
            raise argparse.ArgumentTypeError(f"{text!r} ends with a lone '%' (write %% for a %)")
        token = text[i + 1]
        i += 2
        if token == "%":
            literal.append("%")
            continue
        if token not in TOKENS:
            raise argparse.ArgumentTypeError(
                f"%{token} in {text!r} is not a format token: allowed are "
                + " ".join(f"%{t}" for t in TOKENS) + " and %%")
        if literal:
            parts.append(_unescape("".join(literal)))
            literal = []
        parts.append(TOKENS[token])
    if literal:
        parts.append(_unescape("".join(literal)))
    return parts


class FormatPrinter(Printer):
    """kcat's ``-f`` (see the module doc); ``null`` is what a null key or value prints."""

    def __init__(self, parts: list[bytes | Token], null: bytes = b"") -> None:
        self.parts = parts
        self.null = null

    def render(self, message: Message) -> bytes:
        return b"".join(p if isinstance(p, bytes) else p(message, self.null) for p in self.parts)


# ---- kcat's -J JSON envelope -----------------------------------------------------------

def json_bytes(data: bytes | None) -> Any:
    """A key, value or header value for JSON: null, a string, or ``{"base64": ...}``."""
    if data is None:
        return None
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(bytes(data)).decode("ascii")}


_TSTYPES = {CREATE_TIME: "create", LOG_APPEND_TIME: "logappend"}


class JsonPrinter(Printer):
    """kcat's ``-J`` (see the module doc)."""

    def render(self, message: Message) -> bytes:
        envelope: dict[str, Any] = {"topic": message.topic, "partition": message.partition,
                                    "offset": message.offset}
        if message.timestamp_type in _TSTYPES:
            envelope["tstype"] = _TSTYPES[message.timestamp_type]
            envelope["ts"] = message.timestamp
        envelope["broker"] = message.broker
        if message.headers:
            envelope["headers"] = [item for name, value in message.headers
                                   for item in (name, json_bytes(value))]
        envelope["key"] = json_bytes(message.key)
        envelope["payload"] = json_bytes(message.value)
        return (json.dumps(envelope, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def printer(args: argparse.Namespace) -> Printer:
    """The printer ``pyq consume``'s options ask for."""
    if args.json:
        return JsonPrinter()
    if args.format is not None:
        return FormatPrinter(args.format, b"NULL" if args.null else b"")
    return DefaultPrinter(args.print_key, args.print_headers)
