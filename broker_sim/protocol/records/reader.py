"""Decode the records of RecordBatch v2 batches: what a consumer does with a fetch.

A record set is batches back to back (header layout in :mod:`.batch_header`); each batch
is CRC-checked, its records section decompressed as a whole when ``attributes & 7`` names
a codec, then walked record by record (zig-zag varints, layout in :mod:`.record`). Record
values are made absolute here::

    offset    = base_offset + offsetDelta
    timestamp = base_timestamp + timestampDelta     (CREATE_TIME, attribute bit 3 clear)
              = max_timestamp                      (LOG_APPEND_TIME, bit 3 set)

Worked example, the record bytes ``0e 00 0a 02 02 6b 01 00`` in a batch with
base_offset 100 and base_timestamp 1000 decode to
``Record(offset=101, timestamp=1005, key=b"k", value=None, headers=[])``.

Control batches (attribute bit 5: transaction commit/abort markers) are **skipped** by
:func:`iter_records` unless ``include_control=True``, in which case their records come
back with ``is_control=True``; :func:`decode_batch` always decodes them (flagged).

Malformed record bytes raise :class:`~broker_sim.protocol.errors.CorruptMessage`, never
``IndexError``; a partial batch at the end of a record set (a fetch cut at its size
limit) is ignored by :func:`iter_records`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import CorruptMessage, MalformedFrame
from ..primitives import read_uvarint, read_varint
from .batch_header import HEADER_SIZE, BatchHeader, iter_batches, validate_batch
from .compression import NONE, decompress
from .record import Header, Record


def decode_batch(buf: Any, pos: int = 0) -> tuple[BatchHeader, list[Record]]:
    """Validate the batch at ``pos`` of ``buf`` and decode all of its records.

    Raises CorruptMessage if the batch is truncated, fails its CRC, or its records do not
    parse; UnsupportedCompressionType for codec ids 5-7.
    """
    header = validate_batch(buf, pos)
    return header, decode_records(buf, pos, header)


def iter_records(buf: Any, *, include_control: bool = False) -> Iterator[Record]:
    """Yield every record of every whole batch in ``buf`` (a fetch's record set).

    A trailing partial batch is ignored. Control batches are skipped unless
    ``include_control`` is true (their records then have ``is_control=True``).
    """
    for pos, header in iter_batches(buf):
        if header.is_control and not include_control:
            continue
        yield from decode_records(buf, pos, header)


def decode_records(buf: Any, pos: int, header: BatchHeader) -> list[Record]:
    """The records of the already validated batch ``header`` that starts at ``pos``."""
    count = header.records_count
    if count == 0:
        return []
    start = pos + HEADER_SIZE
    end = pos + header.size
    codec = header.compression
    if codec == NONE:
        data = bytes(memoryview(buf)[start:end])
    else:
        data = decompress(codec, memoryview(buf)[start:end])
    if count > len(data):  # every record takes at least 7 bytes; refuse absurd counts early
        raise CorruptMessage(f"record batch claims {count} records in {len(data)} bytes")
    try:
        return _decode(data, count, header)
    except (IndexError, MalformedFrame, UnicodeDecodeError) as e:
        raise CorruptMessage(f"record batch at offset {header.base_offset} has malformed records: {e}") from e


def _decode(data: bytes, count: int, header: BatchHeader) -> list[Record]:
    # The hot loop. Varints of one and two bytes (values below 64 and 8192: nearly every
    # field of every record; three bytes too for the deltas) are decoded inline on their
    # unsigned raw form ``u``; longer ones go through read_uvarint. Zig-zag: value is
    # (u >> 1) ^ -(u & 1), so for a length an odd ``u`` means negative, ``u == 1`` is -1.
    base_offset = header.base_offset
    base_ts = header.base_timestamp
    log_append = header.timestamp_type == 1
    append_ts = header.max_timestamp
    is_control = header.is_control
    n = len(data)
    records: list[Record] = []
    add = records.append
    pos = 0
    for _ in range(count):
        # length
        u = data[pos]
        if u < 0x80:
            pos += 1
        elif data[pos + 1] < 0x80:
            u = (u & 0x7F) | (data[pos + 1] << 7)
            pos += 2
        else:
            u, pos = read_uvarint(data, pos)
        rec_end = pos + (u >> 1)
        if u & 1 or u < 12 or rec_end > n:
            raise CorruptMessage(f"record length {(u >> 1) ^ -(u & 1)} does not fit the batch")
        # attributes (int8, unused), then timestampDelta
        u = data[pos + 1]
        if u < 0x80:
            pos += 2
        elif data[pos + 2] < 0x80:
            u = (u & 0x7F) | (data[pos + 2] << 7)
            pos += 3
        elif data[pos + 3] < 0x80:  # deltas of 8 s to 17 min
            u = (u & 0x7F) | ((data[pos + 2] & 0x7F) << 7) | (data[pos + 3] << 14)
            pos += 4
        else:
            u, pos = read_uvarint(data, pos + 1)
        timestamp = append_ts if log_append else base_ts + ((u >> 1) ^ -(u & 1))
        # offsetDelta
        u = data[pos]
        if u < 0x80:
            pos += 1
        elif data[pos + 1] < 0x80:
            u = (u & 0x7F) | (data[pos + 1] << 7)
            pos += 2
        elif data[pos + 2] < 0x80:  # offset deltas 8192 .. 1M: batches of many records
            u = (u & 0x7F) | ((data[pos + 1] & 0x7F) << 7) | (data[pos + 2] << 14)
            pos += 3
        else:
            u, pos = read_uvarint(data, pos)
        offset = base_offset + ((u >> 1) ^ -(u & 1))
        # key
        u = data[pos]
        if u < 0x80:
            pos += 1
        elif data[pos + 1] < 0x80:
            u = (u & 0x7F) | (data[pos + 1] << 7)
            pos += 2
        else:
            u, pos = read_uvarint(data, pos)
        if not u & 1:
            key: bytes | None = data[pos : pos + (u >> 1)]
            pos += u >> 1
        elif u == 1:
            key = None
        else:
            raise CorruptMessage(f"negative key length {(u >> 1) ^ -1}")
        # value
        u = data[pos]
        if u < 0x80:
            pos += 1
        elif data[pos + 1] < 0x80:
            u = (u & 0x7F) | (data[pos + 1] << 7)
            pos += 2
        else:
            u, pos = read_uvarint(data, pos)
        if not u & 1:
            value: bytes | None = data[pos : pos + (u >> 1)]
            pos += u >> 1
        elif u == 1:
            value = None
        else:
            raise CorruptMessage(f"negative value length {(u >> 1) ^ -1}")
        # headers
        if data[pos] == 0:  # none, the usual case
            pos += 1
            headers: list[Any] = []
        else:
            headers, pos = _decode_headers(data, pos, rec_end)
        if pos != rec_end:
            raise CorruptMessage("record length does not match its fields")
        add(Record(offset, timestamp, key, value, headers, is_control))
    if pos != n:
        raise CorruptMessage(f"{n - pos} bytes left over after the batch's {count} records")
    return records


def _decode_headers(data: bytes, pos: int, rec_end: int) -> tuple[list[Any], int]:
    count, pos = read_varint(data, pos)
    if count < 0 or 2 * count > rec_end - pos:  # each header takes at least 2 bytes
        raise CorruptMessage(f"record header count {count} does not fit the record")
    headers = []
    for _ in range(count):
        klen, pos = read_varint(data, pos)
        if klen < 0:
            raise CorruptMessage(f"negative header key length {klen}")
        end = pos + klen
        if end > rec_end:
            raise CorruptMessage("header key runs past the end of the record")
        hkey = data[pos:end].decode("utf-8")
        vlen, pos = read_varint(data, end)
        if vlen >= 0:
            end = pos + vlen
            if end > rec_end:
                raise CorruptMessage("header value runs past the end of the record")
            hvalue: bytes | None = data[pos:end]
            pos = end
        elif vlen == -1:
            hvalue = None
        else:
            raise CorruptMessage(f"negative header value length {vlen}")
        headers.append(Header(hkey, hvalue))
    return headers, pos


def records_section(buf: Any, pos: int, header: BatchHeader) -> bytes:
    """The (decompressed) records section of the batch at ``pos``."""
    body = memoryview(buf)[pos + HEADER_SIZE:pos + header.size]
    return bytes(body) if header.compression == NONE else decompress(header.compression, body)


class RecordIndex:
    """Where each record of a records section is, its offset and key — without building
    a :class:`Record` per record (the log cleaner and the compacted-topic key check read
    millions of them). ``ends[i]`` is where record ``i`` ends; ``starts`` are implied
    (``0`` then the previous end). Keys are ``bytes`` or None; ``tombstones[i]``: a null
    value."""

    __slots__ = ("ends", "offsets", "keys", "tombstones")

    def __init__(self, data: bytes, header: BatchHeader) -> None:
        ends: list[int] = []
        offsets: list[int] = []
        keys: list[bytes | None] = []
        tombstones: list[bool] = []
        base = header.base_offset
        n = len(data)
        pos = 0
        try:
            for _ in range(header.records_count):
                u = data[pos]  # length (one and two byte varints inline, as in _decode)
                if u < 0x80:
                    pos += 1
                elif data[pos + 1] < 0x80:
                    u = (u & 0x7F) | (data[pos + 1] << 7)
                    pos += 2
                else:
                    u, pos = read_uvarint(data, pos)
                end = pos + (u >> 1)
                if u & 1 or end > n:
                    raise CorruptMessage(f"a record of batch {base} runs past its batch")
                pos += 1  # attributes
                while data[pos] & 0x80:  # timestampDelta: skipped
                    pos += 1
                u = data[pos + 1]  # offsetDelta
                if u < 0x80:
                    pos += 2
                else:
                    u, pos = read_uvarint(data, pos + 1)
                offsets.append(base + ((u >> 1) ^ -(u & 1)))
                u = data[pos]  # keyLength
                if u < 0x80:
                    pos += 1
                else:
                    u, pos = read_uvarint(data, pos)
                if u & 1:
                    keys.append(None)
                else:
                    keys.append(data[pos:pos + (u >> 1)])
                    pos += u >> 1
                tombstones.append(data[pos] == 1)  # valueLength -1 (zig-zag 1)
                ends.append(end)
                pos = end
        except IndexError as e:
            raise CorruptMessage(f"a record of batch {base} is truncated") from e
        if pos != n:
            raise CorruptMessage(f"{n - pos} bytes left over after batch {base}'s records")
        self.ends, self.offsets, self.keys, self.tombstones = ends, offsets, keys, tombstones
