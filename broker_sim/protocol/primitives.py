"""Typed wire primitives of the Kafka protocol.

Each primitive knows how to write a Python value into a ``bytearray`` and read one back
from a buffer at a position; ``flexible`` selects the compact encodings that flexible
message versions use (KIP-482): lengths become unsigned varints holding ``length + 1``,
with 0 meaning null.

Worked example, the string ``"ab"``::

    String, non-flexible:  00 02 61 62      (int16 length, then UTF-8)
    String, flexible:      03 61 62         (uvarint length + 1, then UTF-8)
    null String, flexible: 00

Decoding raises :class:`~broker_sim.protocol.errors.MalformedFrame` on any short or
inconsistent buffer, never ``IndexError``/``struct.error``: a bad frame is the peer's
fault and must close only that connection.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from .errors import MalformedFrame

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")


def write_uvarint(out: bytearray, value: int) -> None:
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def read_uvarint(buf: Any, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    try:
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result, pos
            shift += 7
            if shift > 63:
                raise MalformedFrame("varint is too long")
    except IndexError as e:
        raise MalformedFrame("truncated varint") from e


def write_varint(out: bytearray, value: int) -> None:
    """Zig-zag signed varint (as used inside records)."""
    write_uvarint(out, (value << 1) ^ (value >> 63))


def read_varint(buf: Any, pos: int) -> tuple[int, int]:
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


class Type:
    """A wire type: ``write(out, value, flexible)`` and ``read(buf, pos, flexible)``."""

    default: Any = None

    def write(self, out: bytearray, value: Any, flexible: bool) -> None:
        raise NotImplementedError

    def read(self, buf: Any, pos: int, flexible: bool) -> tuple[Any, int]:
        raise NotImplementedError


class _Fixed(Type):
    def __init__(self, st: struct.Struct, default: Any = 0) -> None:
        self._st = st
        self._size = st.size
        self.default = default

    def write(self, out: bytearray, value: Any, flexible: bool) -> None:
        out += self._st.pack(value)

    def read(self, buf: Any, pos: int, flexible: bool) -> tuple[Any, int]:
        end = pos + self._size
        if end > len(buf):
            raise MalformedFrame("truncated fixed-size field")
        return self._st.unpack_from(buf, pos)[0], end


class _Boolean(Type):
    default = False

    def write(self, out: bytearray, value: Any, flexible: bool) -> None:
        out.append(1 if value else 0)

    def read(self, buf: Any, pos: int, flexible: bool) -> tuple[Any, int]:
        if pos >= len(buf):
            raise MalformedFrame("truncated boolean")
        return buf[pos] != 0, pos + 1


class _Uuid(Type):
    default = uuid.UUID(int=0)

    def write(self, out: bytearray, value: Any, flexible: bool) -> None:
        out += (value or self.default).bytes

    def read(self, buf: Any, pos: int, flexible: bool) -> tuple[Any, int]:
        if pos + 16 > len(buf):
            raise MalformedFrame("truncated uuid")
        return uuid.UUID(bytes=bytes(buf[pos : pos + 16])), pos + 16


def _write_len(out: bytearray, n: int | None, flexible: bool, wide: bool) -> None:
    if flexible:
        write_uvarint(out, 0 if n is None else n + 1)
    elif wide:
        out += _I32.pack(-1 if n is None else n)
    else:
        out += _I16.pack(-1 if n is None else n)


def _read_len(buf: Any, pos: int, flexible: bool, wide: bool) -> tuple[int, int]:
    """Returns (length or -1 for null, new position)."""
    if flexible:
        n, pos = read_uvarint(buf, pos)
        return n - 1, pos
    st = _I32 if wide else _I16
    if pos + st.size > len(buf):
        raise MalformedFrame("truncated length")
    return st.unpack_from(buf, pos)[0], pos + st.size


class _String(Type):
    def __init__(self, nullable: bool) -> None:
        self.nullable = nullable
        self.default = None if nullable else ""

    def write(self, out: bytearray, value: Any, flexible: bool) -> None:
        if value is None:
            if not self.nullable:
                raise ValueError("null given for a non-nullable string")
            _write_len(out, None, flexible, wide=False)
            return
        data = value.encode("utf-8")
        _write_len(out, len(data), flexible, wide=False)
        out += data

    def read(self, buf: Any, pos: int, flexible: bool) -> tuple[Any, int]:
        n, pos = _read_len(buf, pos, flexible, wide=False)
        if n < 0:
            if not self.nullable:
                raise MalformedFrame("null in a non-nullable string")
            return None, pos
        end = pos + n
        if end > len(buf):
            raise MalformedFrame("string runs past the end of the frame")
        try:
            return bytes(buf[pos:end]).decode("utf-8"), end
        except UnicodeDecodeError as e:
            raise MalformedFrame("string is not UTF-8") from e


class ExternalBytesChanged(Exception):
    """The bytes of an :class:`ExternalBytes` changed (or went) before all were sent."""


class ExternalBytes:
    """Bytes that live outside the process's memory (a region of a file), for a zero-copy
    response: the encoder writes their length and leaves a *splice point* where the
    transport writes them itself (``broker_sim.network.file_send`` sends
    :meth:`file_region`), or copies them in with :meth:`read`.

    The protocol layer knows nothing of files and does no I/O: a subclass (the log's
    ``FileRecords``) says how long the bytes are, where they are and how to read them.
    """

    __slots__ = ()

    def __len__(self) -> int:
        raise NotImplementedError

    def read(self) -> bytes:
        """The bytes themselves (the copying path)."""
        raise NotImplementedError

    def file_region(self) -> tuple[int, int, int] | None:
        """``(file descriptor, position, size)`` to ``sendfile`` from, or None: then the
        transport copies :meth:`read` instead."""
        return None

    @property
    def changed(self) -> bool:
        """True once the bytes at :meth:`file_region` may no longer be the ones meant."""
        return False

    def release(self) -> None:
        """Called once the bytes are sent or will never be (idempotent)."""


class SplicedBuffer(bytearray):
    """An encoder's output with splice points: ``splices`` lists ``(position, ExternalBytes)``,
    each standing for ``len(value)`` bytes that belong at ``position`` of the frame but are
    not in this buffer. Encoding into a plain ``bytearray`` copies such values in instead."""

    splices: list[tuple[int, ExternalBytes]]

    def __init__(self, initial: bytes = b"") -> None:
        super().__init__(initial)
        self.splices = []


class _Bytes(Type):
    """Length-prefixed bytes; ``Records`` is the same on the wire (int32 length)."""

    def __init__(self, nullable: bool) -> None:
        self.nullable = nullable
        self.default = None if nullable else b""

    def write(self, out: bytearray, value: Any, flexible: bool) -> None:
        if value is None:
            if not self.nullable:
                raise ValueError("null given for non-nullable bytes")
            _write_len(out, None, flexible, wide=True)
            return
        _write_len(out, len(value), flexible, wide=True)
        if isinstance(value, ExternalBytes):
            if isinstance(out, SplicedBuffer):
                out.splices.append((len(out), value))
            else:
                out += value.read()
            return
        out += value

    def read(self, buf: Any, pos: int, flexible: bool) -> tuple[Any, int]:
        n, pos = _read_len(buf, pos, flexible, wide=True)
        if n < 0:
            if not self.nullable:
                raise MalformedFrame("null in non-nullable bytes")
            return None, pos
        end = pos + n
        if end > len(buf):
            raise MalformedFrame("bytes run past the end of the frame")
        # A memoryview slice, not a copy: record sets can be megabytes.
        return buf[pos:end], end


class Array(Type):
    """An array of ``inner``; int32 count, or uvarint count + 1 when flexible."""

    def __init__(self, inner: Type, nullable: bool = False) -> None:
        self.inner = inner
        self.nullable = nullable
        self.default = None if nullable else ()

    def write(self, out: bytearray, value: Any, flexible: bool) -> None:
        if value is None:
            if not self.nullable:
                raise ValueError("null given for a non-nullable array")
            _write_len(out, None, flexible, wide=True)
            return
        _write_len(out, len(value), flexible, wide=True)
        inner = self.inner
        for item in value:
            inner.write(out, item, flexible)

    def read(self, buf: Any, pos: int, flexible: bool) -> tuple[Any, int]:
        n, pos = _read_len(buf, pos, flexible, wide=True)
        if n < 0:
            if not self.nullable:
                raise MalformedFrame("null in a non-nullable array")
            return None, pos
        if n > len(buf) - pos:  # each element takes at least one byte
            raise MalformedFrame("array count exceeds the frame")
        inner = self.inner
        items = []
        for _ in range(n):
            item, pos = inner.read(buf, pos, flexible)
            items.append(item)
        return items, pos


Int8 = _Fixed(_I8)
Int16 = _Fixed(_I16)
UInt16 = _Fixed(_U16)
Int32 = _Fixed(_I32)
UInt32 = _Fixed(_U32)
Int64 = _Fixed(_I64)
Float64 = _Fixed(_F64, 0.0)
Boolean = _Boolean()
Uuid = _Uuid()
String = _String(nullable=False)
NullableString = _String(nullable=True)
Bytes = _Bytes(nullable=False)
NullableBytes = _Bytes(nullable=True)
Records = NullableBytes

__all__ = [
    "Array", "Boolean", "Bytes", "ExternalBytes", "Float64", "Int8", "Int16", "Int32", "Int64", "NullableBytes",
    "NullableString", "Records", "SplicedBuffer", "String", "Type", "UInt16", "UInt32", "Uuid", "read_uvarint",
    "read_varint", "write_uvarint", "write_varint",
]
