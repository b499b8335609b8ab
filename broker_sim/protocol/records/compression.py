"""Compression codecs of RecordBatch v2: the low three bits of the batch ``attributes``.

A compressed batch keeps its 61-byte header in the clear and compresses the whole
records section (all records, back to back, without a count) as one payload::

    attributes & 0x07   name     payload format written here / also accepted on read
    0                   none     (not compressed)
    1                   gzip     RFC 1952 gzip member(s)
    2                   snappy   raw snappy block / also xerial-framed snappy (below)
    3                   lz4      LZ4 frame: independent 64 KiB blocks, no content size
    4                   zstd     zstd frame(s); content size in the header is optional

*Xerial snappy* is what the Java client (``SnappyOutputStream``) and kafka-python write::

    82 53 4e 41 50 50 59 00   magic: 0x82 "SNAPPY" 0x00
    00 00 00 01 00 00 00 01   version, compatible version (int32 each; ignored on read)
    <int32 n> <n bytes raw snappy> ...   repeated blocks (each one an independent raw block)

Every Kafka reader (Java's xerial ``SnappyInputStream``, librdkafka, kafka-python) accepts
both a raw snappy block and the xerial framing, so we write the simpler raw block.

LZ4 follows the Java client's ``Lz4BlockOutputStream``: the Java reader decompresses each
block on its own, so blocks must be independent (``block_linked=False``).

>>> decompress(GZIP, compress(GZIP, b"hello")) == b"hello"
True
>>> codec_id("zstd"), codec_name(ZSTD)
(4, 'zstd')
"""

from __future__ import annotations

import gzip
import struct
import zlib
from typing import Any

import cramjam
import lz4.frame
import zstandard

from ..errors import CorruptMessage, UnsupportedCompressionType

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

CODEC_NAMES: dict[int, str] = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
CODEC_IDS: dict[str, int] = {name: cid for cid, name in CODEC_NAMES.items()}

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16  # magic (8) + version (4) + compatible version (4)
_I32 = struct.Struct(">i")

# Java's default gzip level (Deflater.DEFAULT_COMPRESSION) is 6; zstd's default is 3.
_GZIP_DEFAULT_LEVEL = 6


def codec_id(name: str) -> int:
    """The codec id for ``name`` (case-insensitive); ValueError naming the allowed values."""
    try:
        return CODEC_IDS[name.strip().lower()]
    except (KeyError, AttributeError):
        allowed = ", ".join(repr(n) for n in CODEC_IDS)
        raise ValueError(f"unknown compression type {name!r}; allowed values are {allowed}") from None


def codec_name(codec: int) -> str:
    """The name of codec id ``codec``; ValueError naming the allowed ids."""
    try:
        return CODEC_NAMES[codec]
    except KeyError:
        allowed = ", ".join(f"{i} ({n})" for i, n in CODEC_NAMES.items())
        raise ValueError(f"unknown compression codec id {codec!r}; allowed values are {allowed}") from None


def compress(codec: int, data: Any, level: int | None = None) -> bytes:
    """Compress ``data`` (bytes-like) as a batch's records section for ``codec``.

    ``level`` is the codec's own level (gzip 1-9, lz4 0-16, zstd 1-22); None is the default.
    """
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return gzip.compress(data, compresslevel=_GZIP_DEFAULT_LEVEL if level is None else level)
    if codec == SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == LZ4:
        return lz4.frame.compress(
            data,
            compression_level=0 if level is None else level,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            store_size=False,
        )
    if codec == ZSTD:
        return zstandard.ZstdCompressor(level=3 if level is None else level).compress(data)
    raise UnsupportedCompressionType(f"unknown compression codec id {codec}")


def decompress(codec: int, data: Any) -> bytes:
    """Decompress a batch's records section; CorruptMessage if ``data`` does not decode."""
    try:
        if codec == NONE:
            return bytes(data)
        if codec == GZIP:
            return _gzip_decompress(data)
        if codec == SNAPPY:
            return _snappy_decompress(data)
        if codec == LZ4:
            return _lz4_decompress(data)
        if codec == ZSTD:
            return _zstd_decompress(data)
    except CorruptMessage:
        raise
    except (
        OSError,  # gzip.BadGzipFile, EOFError's cousins
        EOFError,
        zlib.error,
        RuntimeError,  # lz4.frame
        zstandard.ZstdError,
        cramjam.DecompressionError,
        ValueError,
        struct.error,
    ) as e:
        raise CorruptMessage(f"{CODEC_NAMES[codec]} records do not decompress: {e}") from e
    raise UnsupportedCompressionType(f"unknown compression codec id {codec}")


def _gzip_decompress(data: Any) -> bytes:
    # Handles concatenated members like gzip.decompress, and rejects truncated input.
    out = []
    buf = bytes(data)
    while buf:
        d = zlib.decompressobj(wbits=31)
        out.append(d.decompress(buf))
        if not d.eof:
            raise CorruptMessage("gzip records are truncated")
        buf = d.unused_data.lstrip(b"\x00")  # gzip allows zero padding between members
    return b"".join(out)


def _snappy_decompress(data: Any) -> bytes:
    if bytes(data[:8]) != XERIAL_MAGIC:
        return bytes(cramjam.snappy.decompress_raw(data))
    mv = memoryview(data)
    n = len(mv)
    if n < _XERIAL_HEADER_SIZE:
        raise CorruptMessage("xerial snappy header is truncated")
    pos = _XERIAL_HEADER_SIZE  # version and compat are ignored, as every reader does
    out = []
    while pos < n:
        if pos + 4 > n:
            raise CorruptMessage("xerial snappy block length is truncated")
        (size,) = _I32.unpack_from(mv, pos)
        pos += 4
        if size < 0 or pos + size > n:
            raise CorruptMessage("xerial snappy block runs past the end of the records")
        out.append(bytes(cramjam.snappy.decompress_raw(mv[pos : pos + size])))
        pos += size
    return b"".join(out)


def _lz4_decompress(data: Any) -> bytes:
    out = []
    buf: Any = data
    while buf:
        d = lz4.frame.LZ4FrameDecompressor()
        out.append(d.decompress(buf))
        if not d.eof:
            raise CorruptMessage("lz4 records are truncated")
        buf = d.unused_data
    return out[0] if len(out) == 1 else b"".join(out)


def _zstd_decompress(data: Any) -> bytes:
    # decompressobj needs no content size in the frame header; loop over concatenated
    # frames ourselves so that a truncated last frame is detected (``eof`` stays False).
    dctx = zstandard.ZstdDecompressor()
    out = []
    buf: Any = data
    while buf:
        d = dctx.decompressobj()
        out.append(d.decompress(buf))
        if not d.eof:
            raise CorruptMessage("zstd records are truncated")
        buf = d.unused_data
    return out[0] if len(out) == 1 else b"".join(out)
