"""Which segments may leave a log: retention by time and size, and DeleteRecords.

Pure decisions over a :class:`~.log_view.LogView` snapshot: they answer how many leading
segments may go, and :class:`~broker_sim.log.log.Log` drops them through its
:class:`~.local_log.LocalLog` (new view published first, files deleted after). Follower
truncation is not a choice of segments but a cut at an offset: ``LocalLog.truncate_to``.

* **Retention** (:func:`retention_prefix`) deletes a prefix of whole segments, never the
  active one and never one holding offsets at or above the high watermark.
* **DeleteRecords** (:func:`prefix_below`) moves the log start offset up; the whole
  segments below it go.
"""

from __future__ import annotations

from .config import LogConfig
from .log_view import LogView
from .segment import LogSegment


def retention_prefix(view: LogView, high_watermark: int, config: LogConfig, now_ms: int) -> int:
    """How many leading segments retention deletes now.

    Never the active one and never one holding offsets at or above the high watermark
    (data not yet committed): first segments wholly below the log start offset, then those
    older than ``retention.ms`` (by their largest record timestamp, or the file's
    modification time if they have none), then the oldest while the log would still hold
    at least ``retention.bytes`` without them. Retention by time and size applies only
    when ``cleanup.policy`` includes ``delete`` (a ``compact``-only log keeps its segments
    for the cleaner). Raises OSError or SegmentGone if a segment cannot be looked at.
    """
    segments = view.segments
    hw = high_watermark
    log_start = view.log_start_offset

    def deletable(i: int) -> bool:
        return i < len(segments) - 1 and segments[i + 1].base_offset <= hw

    n = 0
    while deletable(n) and segments[n + 1].base_offset <= log_start:
        n += 1
    if config.retention_ms >= 0 and config.deletes:
        while deletable(n):
            seg = segments[n]
            ts = seg.max_timestamp
            if ts < 0:
                ts = seg.last_modified
            if now_ms - ts <= config.retention_ms:
                break
            n += 1
    if config.retention_bytes >= 0 and config.deletes:
        excess = sum(s.size for s in segments[n:]) - config.retention_bytes
        while deletable(n) and excess - segments[n].size >= 0:
            excess -= segments[n].size
            n += 1
    return n


def prefix_below(segments: tuple[LogSegment, ...], offset: int) -> int:
    """How many leading segments hold only offsets below ``offset`` (never the active one)."""
    n = 0
    while n < len(segments) - 1 and segments[n + 1].base_offset <= offset:
        n += 1
    return n
