"""Request and response headers, and which header version each (API, version) uses.

Request header (big-endian)::

    v0: api_key int16, api_version int16, correlation_id int32
    v1: v0 + client_id nullable string (always the classic int16-length form)
    v2: v1 + tagged fields                (used by flexible request versions)

Response header::

    v0: correlation_id int32
    v1: v0 + tagged fields                (flexible versions, except ApiVersions)

ApiVersions responses always use header v0, so that a client that sent a version the
broker does not know can still read the error code (KIP-511).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from .errors import MalformedFrame
from .primitives import NullableString, read_uvarint, write_uvarint

_REQ_FIXED = struct.Struct(">hhi")
_I32 = struct.Struct(">i")

API_VERSIONS_KEY = 18


@dataclass(frozen=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None


def request_header_version(flexible: bool) -> int:
    return 2 if flexible else 1


def response_header_version(api_key: int, flexible: bool) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if flexible else 0


def peek_request_header(buf: Any) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) without knowing the header version yet."""
    if len(buf) < _REQ_FIXED.size:
        raise MalformedFrame("frame is shorter than a request header")
    return _REQ_FIXED.unpack_from(buf, 0)


def read_request_header(buf: Any, header_version: int) -> tuple[RequestHeader, int]:
    api_key, api_version, correlation_id = peek_request_header(buf)
    pos = _REQ_FIXED.size
    client_id = None
    if header_version >= 1:
        client_id, pos = NullableString.read(buf, pos, False)
    if header_version >= 2:
        pos = skip_tagged_fields(buf, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def write_request_header(out: bytearray, header: RequestHeader, header_version: int) -> None:
    out += _REQ_FIXED.pack(header.api_key, header.api_version, header.correlation_id)
    if header_version >= 1:
        NullableString.write(out, header.client_id, False)
    if header_version >= 2:
        write_uvarint(out, 0)


def write_response_header(out: bytearray, correlation_id: int, header_version: int) -> None:
    out += _I32.pack(correlation_id)
    if header_version >= 1:
        write_uvarint(out, 0)


def read_response_header(buf: Any, header_version: int) -> tuple[int, int]:
    if len(buf) < 4:
        raise MalformedFrame("frame is shorter than a response header")
    correlation_id = _I32.unpack_from(buf, 0)[0]
    pos = 4
    if header_version >= 1:
        pos = skip_tagged_fields(buf, pos)
    return correlation_id, pos


def skip_tagged_fields(buf: Any, pos: int) -> int:
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise MalformedFrame("tagged field runs past the end of the frame")
    return pos
