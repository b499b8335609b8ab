"""One record of a RecordBatch v2, as the reader yields it and the builder accepts it.

On the wire a record is a run of zig-zag varints (see ``primitives.write_varint``), all
relative to its batch header::

    length          varint   bytes of the record after this field
    attributes      int8     unused, always 0
    timestampDelta  varlong  timestamp - batch base_timestamp
    offsetDelta     varint   offset - batch base_offset
    keyLength       varint   -1 for a null key
    key             bytes
    valueLength     varint   -1 for a null value
    value           bytes
    headersCount    varint
    headers         headersCount x (keyLength varint, key UTF-8, valueLength varint, value)

Worked example: offset delta 1, timestamp delta 5, key ``b"k"``, value null, no headers::

    0e            length 7        (zig-zag: 7 -> 14 = 0x0e)
    00            attributes
    0a            timestampDelta 5
    02            offsetDelta 1
    02 6b         keyLength 1, "k"
    01            valueLength -1 (null)
    00            headersCount 0

:class:`Record` carries absolute values: ``offset = base_offset + offsetDelta`` and
``timestamp = base_timestamp + timestampDelta`` (or the batch's ``max_timestamp`` for every
record when the batch uses LOG_APPEND_TIME).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class Header(NamedTuple):
    """A record header: a UTF-8 string key and nullable bytes. Equal to a plain tuple."""

    key: str
    value: bytes | None


@dataclass(slots=True)
class Record:
    """A decoded record with absolute offset and timestamp (epoch milliseconds).

    ``is_control`` is True for the records of a control batch (transaction markers),
    which :func:`~broker_sim.protocol.records.reader.iter_records` yields only on request.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    is_control: bool = False
