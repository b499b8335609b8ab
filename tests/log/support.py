"""Helpers the log tests share."""

from __future__ import annotations

from broker_sim.log.file_records import FileRecords


def copied(records: bytes | FileRecords) -> bytes:
    """``FetchDataInfo.records`` of a copying read (``zero_copy`` off): bytes, not a file range."""
    assert isinstance(records, bytes), f"a copying read returned {type(records).__name__}"
    return records
