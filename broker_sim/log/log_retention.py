"""Taking data out of a log: follower truncation, retention, DeleteRecords.

:class:`LogTruncation` is the half of :class:`~broker_sim.log.log.Log` that removes
data; ``Log`` inherits it. Every method runs under the log's lock and publishes a new
:class:`~.log_view.LogView` *before* deleting files, so a lock-free reader holding the old
view gets SegmentGone, takes the new view and sees the new log start offset.

* **Truncation** (:meth:`LogTruncation.truncate_to`) is at batch boundaries, for a
  follower whose log diverged from its leader's; below the log start offset it empties the
  log and restarts it at the requested offset.
* **Retention** (:meth:`LogTruncation.delete_old_segments`) deletes a prefix of whole
  segments, never the active one and never one holding offsets at or above the high
  watermark.
* **DeleteRecords** (:meth:`LogTruncation.delete_records_before`) moves the log start
  offset up, deleting the whole segments below it.
"""

from __future__ import annotations

import threading
from pathlib import Path

from ..common import Clock
from ..protocol.errors import KafkaStorageError, OffsetOutOfRange
from .config import LogConfig
from .leader_epoch_cache import LeaderEpochCache
from .log_view import LogView
from .producer_state import ProducerStateManager
from .segment import LogSegment, SegmentGone
from .transactions import TransactionState


class LogTruncation:
    """Truncation, retention and DeleteRecords over the log's state (see the module docstring).

    The attributes below belong to :class:`~broker_sim.log.log.Log` (declared here for the
    type checker); their invariants and threading rules are in its docstring.
    """

    dir: Path
    config: LogConfig
    clock: Clock
    epochs: LeaderEpochCache
    producers: ProducerStateManager
    txns: TransactionState
    _lock: threading.RLock
    _view: LogView
    _leo: int
    _hw: int
    _recovery_point: int

    @property
    def name(self) -> str:
        return self.dir.name

    def _check_open(self) -> None:
        raise NotImplementedError

    def _write_state(self) -> None:
        raise NotImplementedError

    def _rebuild_transactions(self) -> None:
        raise NotImplementedError

    def truncate_to(self, offset: int) -> bool:
        """Remove every batch whose last offset is >= ``offset`` (follower divergence).

        Truncation is at batch boundaries: the batch holding ``offset`` goes as a whole.
        Truncating below the log start offset empties the log and restarts it at
        ``offset``. Returns False if nothing was removed (``offset >= log_end_offset``).
        """
        with self._lock:
            self._check_open()
            if offset >= self._leo:
                return False
            view = self._view
            if offset < view.log_start_offset:
                self.truncate_fully_and_start_at(offset)
                return True
            keep = [s for s in view.segments if s.base_offset < offset]
            if not keep:
                self.truncate_fully_and_start_at(offset)
                return True
            removed = view.segments[len(keep) :]
            try:
                self._view = LogView.of(keep, view.log_start_offset)
                for seg in removed:
                    seg.delete(truncated=True)
                keep[-1].truncate_to(offset)
                self._leo = keep[-1].next_offset
            except OSError as e:
                raise KafkaStorageError(f"truncation of {self.dir} failed: {e}") from e
            if self._view.log_start_offset > self._leo:
                self._view = LogView(self._view.bases, self._view.segments, self._leo)
            self._hw = min(self._hw, self._leo)
            self._recovery_point = min(self._recovery_point, self._leo)
            self.epochs.truncate_from_end(self._leo)
            self.producers.truncate_from(self._leo)
            self._rebuild_transactions()  # a cut-off marker reopens its transaction
            return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and restart the log empty at ``offset`` (LEO = start = HW)."""
        if offset < 0:
            raise ValueError(f"cannot start a log at negative offset {offset}")
        with self._lock:
            self._check_open()
            try:
                old = self._view.segments
                for seg in old:
                    seg.delete(truncated=True)
                new = LogSegment(self.dir, offset, self.config.index_interval_bytes, self.clock.wall_ms())
                self._view = LogView((offset,), (new,), offset)
                self._leo = offset
                self._hw = offset
                self.epochs.clear()
                self.producers.clear()
                self.txns.clear()
                self._recovery_point = offset
                self._write_state()
            except OSError as e:
                raise KafkaStorageError(f"truncation of {self.dir} failed: {e}") from e

    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """Apply retention; return the number of segments deleted.

        Deletes a prefix of whole segments, never the active one and never one holding
        offsets at or above the high watermark (data not yet committed): first segments
        wholly below the log start offset, then those older than ``retention.ms`` (by
        their largest record timestamp, or the file's modification time if they have
        none), then the oldest while the log would still hold at least
        ``retention.bytes`` without them. Moves the log start offset to the first
        remaining segment. Retention by time and size applies only when ``cleanup.policy``
        includes ``delete`` (a ``compact``-only log keeps its segments for the cleaner).
        """
        with self._lock:
            self._check_open()
            now = self.clock.wall_ms() if now_ms is None else now_ms
            cfg = self.config
            view = self._view
            segments = view.segments
            hw = self._hw
            log_start = view.log_start_offset

            def deletable(i: int) -> bool:
                return i < len(segments) - 1 and segments[i + 1].base_offset <= hw

            n = 0
            try:
                while deletable(n) and segments[n + 1].base_offset <= log_start:
                    n += 1
                if cfg.retention_ms >= 0 and cfg.deletes:
                    while deletable(n):
                        seg = segments[n]
                        ts = seg.max_timestamp
                        if ts < 0:
                            ts = seg.last_modified
                        if now - ts <= cfg.retention_ms:
                            break
                        n += 1
                if cfg.retention_bytes >= 0 and cfg.deletes:
                    excess = sum(s.size for s in segments[n:]) - cfg.retention_bytes
                    while deletable(n) and excess - segments[n].size >= 0:
                        excess -= segments[n].size
                        n += 1
            except (OSError, SegmentGone) as e:
                raise KafkaStorageError(f"retention on {self.dir} failed: {e}") from e
            if n:
                self._delete_prefix(n)
            return n

    def _delete_prefix(self, n: int) -> None:
        view = self._view
        removed, keep = view.segments[:n], view.segments[n:]
        log_start = max(view.log_start_offset, keep[0].base_offset)
        # Publish first: readers that still hold the old list get SegmentGone, re-snapshot,
        # and see the new log start offset.
        self._view = LogView.of(keep, log_start)
        self.txns.forget_segments_below(log_start)
        if self._hw < log_start:
            self._hw = log_start
        try:
            self._write_state()
            for seg in removed:
                seg.delete()
        except OSError as e:
            raise KafkaStorageError(f"deleting segments of {self.dir} failed: {e}") from e

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset`` (-1: the high watermark).

        Whole segments below the new start are deleted now; returns the new log start
        offset. Raises OffsetOutOfRange if ``offset`` is above the high watermark.
        """
        with self._lock:
            self._check_open()
            if offset == -1:
                offset = self._hw
            if offset < 0 or offset > self._hw:
                raise OffsetOutOfRange(
                    f"cannot delete records of {self.name} before offset {offset}: it is above the "
                    f"high watermark {self._hw}"
                )
            view = self._view
            if offset > view.log_start_offset:
                self._view = LogView(view.bases, view.segments, offset)
                self.txns.forget_segments_below(offset)
                try:
                    self._write_state()
                except OSError as e:
                    raise KafkaStorageError(f"checkpoint of {self.dir} failed: {e}") from e
                segments = self._view.segments
                n = 0
                while n < len(segments) - 1 and segments[n + 1].base_offset <= offset:
                    n += 1
                if n:
                    self._delete_prefix(n)
            return self._view.log_start_offset
