"""Build one RecordBatch v2 (magic 2) from records, as a producer or the broker does.

A batch is the 61-byte header of :mod:`.batch_header` followed by the records, each a
run of zig-zag varints relative to the header (layout in :mod:`.record`). With a codec
the records section is compressed as one payload; the header stays in the clear and its
CRC-32C covers ``attributes`` through the last byte of the (compressed) records.

Worked example: one record, timestamp 1000, key null, value ``b"v"``, no headers::

    header (61 bytes): base_offset 0, batch_length 58, leader epoch -1, magic 2, crc,
                       attributes 0, last_offset_delta 0, base/max timestamp 1000,
                       producer id -1, epoch -1, base sequence -1, records_count 1
    record (8 bytes):  0e 00 00 00 01 02 76 00
                       len=7 attr ts+0 off+0 key=null value=(1, "v") headers=0

>>> b = RecordBatchBuilder()
>>> b.append(1000, None, b"v")
0
>>> batch = b.build()
>>> len(batch), batch[-8:].hex(" ")
(69, '0e 00 00 00 01 02 76 00')

Encoding appends straight into one ``bytearray``; the varint encodings of small
non-negative values come from a precomputed table so the common record costs only a
handful of ``+=`` operations.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import UnsupportedCompressionType
from ..primitives import write_varint
from .batch_header import (
    _HEADER,
    CONTROL_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    seal_crc,
)
from .compression import CODEC_NAMES, NONE, compress


def _varint_bytes(value: int) -> bytearray:
    out = bytearray()
    write_varint(out, value)
    return out


# _ZZ[v] is the zig-zag varint of v for 0 <= v < 8192: every 1- and 2-byte encoding of a
# non-negative value (lengths, offset deltas, timestamp deltas of a few seconds).
_TABLE_SIZE = 8192
_ZZ: list[bytes] = [bytes(_varint_bytes(v)) for v in range(_TABLE_SIZE)]
# _LEN_ATTR[n]: the record length varint followed by the record attributes byte (0).
_LEN_ATTR: list[bytes] = [z + b"\x00" for z in _ZZ]
_NULL = b"\x01"  # varint -1: a null key, value or header value
_NO_HEADERS = b"\x00"  # varint 0: headers count


def _encode_headers(headers: Iterable[tuple[str | bytes, Any]]) -> bytearray:
    headers = list(headers)
    out = bytearray()
    write_varint(out, len(headers))
    for hkey, hvalue in headers:
        if isinstance(hkey, str):
            kb = hkey.encode("utf-8")
        elif isinstance(hkey, (bytes, bytearray)):
            kb = bytes(hkey)  # taken as already UTF-8
        else:
            raise TypeError(f"header keys must be str, not {type(hkey).__name__}")
        write_varint(out, len(kb))
        out += kb
        if hvalue is None:
            out += _NULL
        else:
            write_varint(out, len(hvalue))
            out += hvalue
    return out


class RecordBatchBuilder:
    """Accumulates records and produces one complete, CRC-valid v2 batch.

    ``append`` returns the record's offset delta (0, 1, 2, ...). The batch's base
    timestamp is the first record's timestamp; later records may be older (the delta is
    a signed varlong). ``build`` with no records appended returns ``b""`` (an empty record
    set, as the Java client's MemoryRecordsBuilder does), never a batch without records.

    ``timestamp_type=1`` (LOG_APPEND_TIME) only sets attribute bit 3: readers then report
    ``max_timestamp`` as every record's timestamp. ``is_control`` marks a control batch
    (transaction markers written by the broker).
    """

    __slots__ = (
        "_buf", "_count", "_base_ts", "_max_ts", "compression", "base_offset", "producer_id",
        "producer_epoch", "base_sequence", "timestamp_type", "is_transactional",
        "partition_leader_epoch", "is_control", "compression_level",
    )

    def __init__(
        self,
        compression: int = NONE,
        base_offset: int = 0,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        timestamp_type: int = 0,
        is_transactional: bool = False,
        partition_leader_epoch: int = -1,
        *,
        is_control: bool = False,
        compression_level: int | None = None,
    ) -> None:
        if compression not in CODEC_NAMES:
            raise UnsupportedCompressionType(f"unknown compression codec id {compression}")
        if timestamp_type not in (0, 1):
            raise ValueError(f"timestamp_type must be 0 (CREATE_TIME) or 1 (LOG_APPEND_TIME), not {timestamp_type!r}")
        self.compression = compression
        self.compression_level = compression_level
        self.base_offset = base_offset
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.timestamp_type = timestamp_type
        self.is_transactional = is_transactional
        self.partition_leader_epoch = partition_leader_epoch
        self.is_control = is_control
        self._buf = bytearray(HEADER_SIZE)  # header space, filled in by build()
        self._count = 0
        self._base_ts = -1
        self._max_ts = -1

    @property
    def record_count(self) -> int:
        return self._count

    def estimated_size(self) -> int:
        """Bytes of the batch if built now without compression (an upper bound, nearly)."""
        return len(self._buf)

    def append(
        self,
        timestamp_ms: int,
        key: bytes | None,
        value: bytes | None,
        headers: Iterable[tuple[str, bytes | None]] = (),
    ) -> int:
        """Add a record; return its offset delta. Keys, values: bytes-like or None."""
        zz = _ZZ
        delta = self._count
        if delta:
            ts_delta = timestamp_ms - self._base_ts
            tsd = zz[ts_delta] if 0 <= ts_delta < _TABLE_SIZE else _varint_bytes(ts_delta)
        elif isinstance(timestamp_ms, int):
            tsd = b"\x00"
        else:
            raise TypeError(f"timestamp_ms must be an int, not {type(timestamp_ms).__name__}")
        od = zz[delta] if delta < _TABLE_SIZE else _varint_bytes(delta)
        kl: bytes | bytearray
        vl: bytes | bytearray
        if key is None:
            kl = _NULL
            klen = 0
        else:
            klen = len(key)
            kl = zz[klen] if klen < _TABLE_SIZE else _varint_bytes(klen)
        if value is None:
            vl = _NULL
            vlen = 0
        else:
            vlen = len(value)
            vl = zz[vlen] if vlen < _TABLE_SIZE else _varint_bytes(vlen)
        hb = _encode_headers(headers) if headers else _NO_HEADERS
        size = 1 + len(tsd) + len(od) + len(kl) + klen + len(vl) + vlen + len(hb)
        prefix = _LEN_ATTR[size] if size < _TABLE_SIZE else _varint_bytes(size) + b"\x00"
        buf = self._buf
        start = len(buf)
        try:
            buf += prefix
            buf += tsd
            buf += od
            buf += kl
            if key is not None:
                buf += key
            buf += vl
            if value is not None:
                buf += value
            buf += hb
            if len(buf) - start != len(prefix) - 1 + size:
                raise TypeError("keys, values and header values must be bytes-like with 1-byte items")
        except BaseException:
            del buf[start:]  # leave the batch as it was before this record
            raise
        if delta == 0:
            self._base_ts = self._max_ts = timestamp_ms
        elif timestamp_ms > self._max_ts:
            self._max_ts = timestamp_ms
        self._count = delta + 1
        return delta

    def build(self) -> bytes:
        """The complete batch: header, CRC and (compressed) records. ``b""`` if empty."""
        count = self._count
        if count == 0:
            return b""
        attributes = TIMESTAMP_TYPE_MASK if self.timestamp_type else 0
        if self.is_transactional:
            attributes |= TRANSACTIONAL_MASK
        if self.is_control:
            attributes |= CONTROL_MASK
        buf = self._buf
        if self.compression != NONE:
            attributes |= self.compression
            records = compress(self.compression, memoryview(buf)[HEADER_SIZE:], self.compression_level)
        else:
            records = bytes(memoryview(buf)[HEADER_SIZE:])
        header = bytearray(HEADER_SIZE)
        _HEADER.pack_into(
            header, 0,
            self.base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(records),
            self.partition_leader_epoch,
            MAGIC,
            0,  # crc, below
            attributes,
            count - 1,  # last_offset_delta
            self._base_ts,
            self._max_ts,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            count,
        )
        seal_crc(header, records)
        return bytes(header) + records
