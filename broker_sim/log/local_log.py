"""The segments of one partition's log in its directory (Kafka's ``LocalLog``).

:class:`LocalLog` is what :class:`~broker_sim.log.log.Log` is built on: the segment list,
the log end offset, the recovery point, and the operations that change which bytes are on
disk — appending and rolling, truncating, dropping a prefix of segments, swapping cleaned
segments in, flushing. It knows nothing of what the bytes mean (high watermark, producers,
leader epochs, transactions): that is ``Log``'s, which calls these operations and then
updates its own state. Which segments retention or DeleteRecords may drop is decided in
:mod:`.log_retention`.

Deleting data always goes in two steps: a new :class:`~.log_view.LogView` without the
segments is *published* first, their files are deleted after, so a lock-free reader
holding the old view gets SegmentGone, takes the new view and sees the new log start
offset.
"""

from __future__ import annotations

import shutil
import threading
from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..common import Clock
from ..protocol.errors import KafkaStorageError
from .batch_scanner import INT32_MAX
from .config import LogConfig
from .log_view import LogView
from .segment import LogSegment


class LocalLog:
    """The segments of one log directory, its log end offset and its recovery point.

    Invariants: segments are sorted by base offset and never overlap; only the last one
    (the active segment) is appended to; there is always at least one segment; the log
    start offset (held in the view) is at least the first segment's base offset and at most
    the log end offset; ``recovery_point <= leo``; a segment is never left empty behind a
    newer one (a roll replaces an empty active segment).

    Threading: every change runs under ``lock``, an ``RLock`` that :class:`~.log.Log`
    shares for its own state. ``view`` and ``leo`` are read without it: ``view`` is an
    immutable snapshot replaced by one assignment, and a segment publishes its new size
    only after its bytes are written, so a reader that takes ``leo`` and then ``view``
    never sees a batch half written.
    """

    def __init__(self, dir: Path, config: LogConfig, clock: Clock,
                 segments: list[LogSegment], log_start_offset: int, log_end_offset: int,
                 recovery_point: int) -> None:
        self.dir = dir
        self.config = config
        self.clock = clock
        self.lock = threading.RLock()
        self.view = LogView.of(segments, log_start_offset)
        #: the log end offset: the offset the next appended record gets.
        self.leo = log_end_offset
        #: the log end offset at the last flush: everything below it is on disk.
        self.recovery_point = recovery_point
        self.closed = False

    @property
    def name(self) -> str:
        return self.dir.name

    def check_open(self) -> None:
        if self.closed:
            raise KafkaStorageError(f"log {self.dir} is closed")

    def update_config(self, config: LogConfig) -> None:
        with self.lock:
            self.config = config
            for seg in self.view.segments:
                seg.index_interval_bytes = config.index_interval_bytes

    # -------------------------------------------------------------- appends

    def append(self, buf: Any, first: int, last: int, max_timestamp: int) -> None:
        """Append ``buf`` (offsets ``first``..``last``, its largest timestamp
        ``max_timestamp``), first rolling a new segment when the active one is full, would
        hold offsets too far apart for its index, or spans ``segment.ms``: as Kafka counts it,
        from the first batch's timestamp to the new records' (so records stamped a day apart
        do not share a segment, and retention by time can delete the older), or by the wall
        clock since the segment was created when its first batch has no timestamp.
        Under the lock."""
        active = self.view.segments[-1]
        config = self.config
        now = self.clock.wall_ms()
        size = active.size
        try:
            if size > 0:
                rolling_from = active.rolling_timestamp
                waited = (max_timestamp - rolling_from if rolling_from >= 0
                          else now - active.created_ms)
                if (
                    size + len(buf) > config.segment_bytes
                    or waited > config.segment_ms
                    or last - active.base_offset > INT32_MAX
                ):
                    active = self._roll(first, now)
            elif last - active.base_offset > INT32_MAX:
                active = self._roll(first, now)  # an empty segment whose base does not fit
            active.append(last, buf)
        except OSError as e:
            raise KafkaStorageError(f"append to {self.dir} failed: {e}") from e
        self.leo = last + 1

    def _roll(self, base_offset: int, now: int) -> LogSegment:
        """Start a new active segment at ``base_offset`` (the next offset to append)."""
        view = self.view
        segments = list(view.segments)
        if segments[-1].size == 0:
            segments.pop().delete()  # never leave an empty segment behind
        new = LogSegment(self.dir, base_offset, self.config.index_interval_bytes, now)
        segments.append(new)
        log_start = view.log_start_offset if len(segments) > 1 else base_offset
        self.view = LogView.of(segments, max(log_start, segments[0].base_offset))
        return new

    # ------------------------------------------------------------- removing

    def truncate_to(self, offset: int) -> bool:
        """Remove every batch whose last offset is >= ``offset`` (``offset`` below the log
        end offset), at batch boundaries: the batch holding ``offset`` goes as a whole.

        False, changing nothing, if no segment would be left (``offset`` at or below the
        first segment's base offset, or below the log start offset): the caller restarts
        the log with :meth:`truncate_fully_and_start_at`. Under the lock; raises OSError.
        """
        view = self.view
        if offset < view.log_start_offset:
            return False
        keep = [s for s in view.segments if s.base_offset < offset]
        if not keep:
            return False
        removed = view.segments[len(keep) :]
        self.view = LogView.of(keep, view.log_start_offset)
        for seg in removed:
            seg.delete(truncated=True)
        keep[-1].truncate_to(offset)
        self.leo = keep[-1].next_offset
        if self.view.log_start_offset > self.leo:
            self.view = LogView(self.view.bases, self.view.segments, self.leo)
        self.recovery_point = min(self.recovery_point, self.leo)
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and restart empty at ``offset`` (log start = LEO =
        recovery point). Under the lock; raises OSError."""
        for seg in self.view.segments:
            seg.delete(truncated=True)
        new = LogSegment(self.dir, offset, self.config.index_interval_bytes, self.clock.wall_ms())
        self.view = LogView((offset,), (new,), offset)
        self.leo = offset
        self.recovery_point = offset

    def advance_log_start(self, offset: int) -> None:
        """Move the log start offset up to ``offset`` (DeleteRecords); no file changes."""
        view = self.view
        if offset > view.log_start_offset:
            self.view = LogView(view.bases, view.segments, offset)

    def drop_prefix(self, n: int) -> tuple[tuple[LogSegment, ...], int]:
        """Publish the log without its first ``n`` segments (never the active one): the
        removed segments, whose files the caller deletes with :meth:`delete_segments` once
        the new log start offset (returned) is checkpointed."""
        view = self.view
        removed, keep = view.segments[:n], view.segments[n:]
        log_start = max(view.log_start_offset, keep[0].base_offset)
        self.view = LogView.of(keep, log_start)
        return removed, log_start

    @staticmethod
    def delete_segments(removed: tuple[LogSegment, ...]) -> None:
        for seg in removed:
            seg.delete()

    def replace_segments(self, old: list[LogSegment], commit: Callable[[], None]) -> bool:
        """Swap cleaned data in for the consecutive segments ``old`` (the log cleaner).

        Under the lock: if ``old`` is still part of the log, close it (readers in flight
        finish, new ones get SegmentGone and wait for the new view), run ``commit`` (which
        puts the cleaned segment's files in place of ``old``'s, see the cleaner's swap),
        open the cleaned segment and publish it. Returns False, doing nothing, if
        retention or truncation changed those segments meanwhile.
        """
        with self.lock:
            self.check_open()
            segments = list(self.view.segments)
            try:
                i = next(k for k, s in enumerate(segments) if s is old[0])
            except StopIteration:
                return False
            if segments[i:i + len(old)] != old or i + len(old) >= len(segments):
                return False
            for seg in old:
                seg.deleted = True
                seg.index.close_without_writing()
                seg._close_fd()
            try:
                commit()
                new = LogSegment(self.dir, old[0].base_offset, self.config.index_interval_bytes,
                                 old[0].created_ms)
            except OSError as e:
                raise KafkaStorageError(f"swapping cleaned segments into {self.dir} failed: {e}") from e
            segments[i:i + len(old)] = [new]
            self.view = LogView.of(segments, self.view.log_start_offset)
            return True

    # ------------------------------------------------------------- lifecycle

    def flush_segments(self) -> int:
        """fsync every segment written since the last flush; the log end offset they hold,
        which the caller makes the recovery point once it has checkpointed the rest. Under
        the lock; raises OSError."""
        view = self.view
        leo = self.leo
        first = max(0, bisect_right(view.bases, self.recovery_point) - 1)
        for seg in view.segments[first:]:
            seg.flush()
        return leo

    def close_segments(self) -> None:
        self.closed = True
        for seg in self.view.segments:
            seg.close()

    def delete(self) -> None:
        """Close without flushing and remove the directory."""
        with self.lock:
            self.closed = True
            for seg in self.view.segments:
                seg.delete()
            shutil.rmtree(self.dir, ignore_errors=True)
