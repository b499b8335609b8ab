"""Transaction markers: the control batches that end a transaction in a partition.

A marker is a batch with the *control* and *transactional* attribute bits set, the
producer id and epoch of the transaction it ends, no sequence (-1), and one record whose
key is ``version int16 (0), type int16`` — 0 ABORT, 1 COMMIT — and whose value is
``version int16 (0), coordinator_epoch int32``. The transaction coordinator asks each
partition leader to write one (WriteTxnMarkers); readers never hand control records to
applications.
"""

from __future__ import annotations

import struct
from typing import Any

from .batch_header import HEADER_SIZE, BatchHeader
from .builder import RecordBatchBuilder
from .reader import decode_records

ABORT, COMMIT = 0, 1
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


def marker_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                 timestamp_ms: int) -> bytes:
    """One control batch ending ``producer_id``'s transaction (offsets assigned on append)."""
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=producer_epoch,
                                 base_sequence=-1, is_transactional=True, is_control=True)
    builder.append(timestamp_ms, _KEY.pack(0, COMMIT if commit else ABORT),
                   _VALUE.pack(0, coordinator_epoch))
    return builder.build()


def marker_type(buf: Any, pos: int, header: BatchHeader) -> int | None:
    """COMMIT or ABORT for the control batch at ``pos`` (None: not a transaction marker)."""
    if not header.is_control or header.records_count < 1:
        return None
    key = decode_records(buf, pos, header)[0].key
    if key is None or len(key) < _KEY.size:
        return None
    version, kind = _KEY.unpack_from(key)
    return kind if version == 0 and kind in (ABORT, COMMIT) else None


#: bytes of a marker batch beyond its header: enough to read its one small record.
MARKER_RECORD_BYTES = 64
def marker_coordinator_epoch(buf: Any, pos: int, header: BatchHeader) -> int:
    """The coordinator epoch a transaction marker carries (-1 if it has none)."""
    value = decode_records(buf, pos, header)[0].value
    if value is None or len(value) < _VALUE.size:
        return -1
    version, epoch = _VALUE.unpack_from(value)
    return epoch if version == 0 else -1


__all__ = ["ABORT", "COMMIT", "HEADER_SIZE", "MARKER_RECORD_BYTES", "marker_batch",
           "marker_coordinator_epoch", "marker_type"]
