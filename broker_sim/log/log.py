"""The log of one topic-partition: an ordered list of segments in one directory.

Directory layout (Kafka's, plus one small JSON checkpoint)::

    orders-0/
        00000000000000000000.log      segment with offsets [0, 1200)
        00000000000000000000.index
        00000000000000001200.log      the active segment: appends go here
        00000000000000001200.index
        log-state.json                {"high_watermark": 1250, "log_start_offset": 0,
                                       "recovery_point": 1200, "version": 1}

``log-state.json`` is rewritten by :meth:`Log.flush`, :meth:`Log.close` and whenever the
log start offset moves. ``recovery_point`` is the log end offset at the last flush:
everything below it is known to be on disk. On open, the segments from the one holding
the recovery point to the end are recovered, and the active (last) segment always is.
Kafka recovers from the recovery point the same way; it skips even the active segment
after a clean shutdown, while this log always pays for re-reading it, so a tail damaged
while the broker was down is still found.

The log is split along its seams: opening and recovery in :mod:`.log_loader`, the checks
on appended batches in :mod:`.append_validation`, ListOffsets by time in
:mod:`.timestamp_lookup`, truncation and retention in :mod:`.log_retention` (inherited by
:class:`Log`), the walk over batches in :mod:`.batch_scanner`. This module keeps appends,
reads, rolling, flushing and the invariants that tie them together.

Rolling: a new active segment starts when an append would push the active one past
``segment.bytes``, when the active one is older than ``segment.ms`` (counted from when
the segment was created or, after a restart, loaded; Kafka counts from the first
batch's timestamp), or when relative offsets would overflow the index's int32.

Offsets: ``log_start_offset <= high_watermark <= log_end_offset``. The log end offset
(LEO) is the offset the next appended record gets. The high watermark (HW) is set by the
owner (the partition, once followers have the data) and bounds what consumers read: pass
it as ``max_offset`` to :meth:`Log.read`.
"""

from __future__ import annotations

import shutil
import threading
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from ..common import SYSTEM_CLOCK, Clock
from ..protocol.errors import (
    DuplicateSequenceNumber,
    InvalidRecord,
    KafkaStorageError,
    OffsetOutOfRange,
)
from ..protocol.records.batch_header import (
    BatchHeader,
    assign_offsets,
)
from ..protocol.records.control import marker_coordinator_epoch
from .append_validation import validate_append
from .config import LogConfig
from .file_records import FileRecords
from .leader_epoch_cache import LeaderEpochCache
from .log_loader import load_log, write_log_state
from .log_retention import LogTruncation
from .log_view import LogView
from .producer_state import ActiveProducer, ProducerStateManager
from .segment import INT32_MAX, LogSegment, SegmentChanged, SegmentGone
from .timestamp_lookup import (  # noqa: F401 - the special timestamps are part of the log's API
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    find_offset_for_timestamp,
)
from .transactions import AbortedTxn, TransactionState

_READ_ATTEMPTS = 32
_MAGIC_AT = 16


class UnexpectedAppendOffset(InvalidRecord):
    """A follower append whose first offset is below the log end offset (or out of order)."""


class AppendInfo(NamedTuple):
    """What an append wrote: offsets ``first_offset..last_offset`` (inclusive).

    (A NamedTuple rather than a frozen dataclass: one is built per produce request and a
    frozen dataclass costs several microseconds to construct.) ``log_append_time`` is -1 (CreateTime topics; LogAppendTime is not implemented).
    ``num_records == 0`` (offsets -1) for a follower append of nothing.
    """

    first_offset: int
    last_offset: int
    num_records: int
    max_timestamp: int
    log_append_time: int = -1
    log_start_offset: int = 0


class FetchDataInfo(NamedTuple):
    """Whole record batches read from the log, and the log's offsets at that moment.

    ``first_offset`` is the base offset of the first batch returned (it may be below
    the fetch offset: the batch holding the fetch offset is returned whole), or the fetch
    offset when ``records`` is empty.
    """

    records: bytes | FileRecords
    first_offset: int
    log_start_offset: int = 0
    log_end_offset: int = 0
    high_watermark: int = 0


class Log(LogTruncation):
    """Append-only log of one partition, made of segments; see the module docstring.

    Invariants: segments are sorted by base offset and never overlap; only the last one
    (the active segment) is appended to; there is always at least one segment;
    ``log_start_offset`` lies in ``[first segment base offset, log_end_offset]``;
    ``log_start_offset <= high_watermark <= log_end_offset``; every batch in the log has
    passed ``validate_batch``; offsets are consecutive for leader appends.

    Threading: one ``RLock`` serializes appends, truncation, retention, flush and close.
    Reads (:meth:`read`, :meth:`offset_for_timestamp`) take no lock: they take a snapshot
    of the log end offset and then of the immutable segment list (a new list is
    published after each roll/deletion) and may run concurrently with appends, since a
    segment publishes its new size only after the bytes are written. A read that hits a
    segment deleted by retention or truncation in the meantime retries with a fresh
    snapshot; if the offset it wants is then below the log start offset it raises
    OffsetOutOfRange, and it never returns a partial batch.
    """

    def __init__(self, dir: Path, config: LogConfig | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.dir = Path(dir)
        self.config = config if config is not None else LogConfig()
        self.clock = clock
        self._lock = threading.RLock()
        self._closed = False
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._load()
        except OSError as e:
            raise KafkaStorageError(f"cannot open log {self.dir}: {e}") from e

    # --------------------------------------------------------------- loading

    def _load(self) -> None:
        loaded = load_log(self.dir, self.config, self.clock.wall_ms())
        self._view = LogView.of(loaded.segments, loaded.log_start_offset)
        self._leo = loaded.log_end_offset
        self._hw = loaded.high_watermark
        self._recovery_point = loaded.recovery_point
        self.epochs = LeaderEpochCache(self.dir)
        self.epochs.truncate_from_end(self._leo)  # recovery may have cut the tail
        self.producers = ProducerStateManager()
        for seg in loaded.segments[-2:]:  # idempotent producers' recent batches (see producer_state)
            for _pos, header in seg.headers():
                self.producers.update(header)
        self.txns = TransactionState()
        self._rebuild_transactions()

    def _rebuild_transactions(self) -> None:
        """Open and aborted transactions from every batch header (see transactions)."""
        self.txns.clear()
        for seg in self._view.segments:
            for pos, header in seg.headers():
                if not header.is_transactional:
                    continue
                if header.is_control:  # a marker: its one record says commit or abort
                    self.txns.apply(seg.read_at(pos, header.size), 0, header, seg.base_offset,
                                    self._hw)
                else:
                    self.txns.apply(b"", 0, header, seg.base_offset, self._hw)

    def _write_state(self) -> None:
        write_log_state(self.dir, self._view.log_start_offset, self._hw, self._recovery_point)

    # ------------------------------------------------------------ properties

    @property
    def log_start_offset(self) -> int:
        return self._view.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._leo

    @property
    def high_watermark(self) -> int:
        return self._hw

    @high_watermark.setter
    def high_watermark(self, value: int) -> None:
        with self._lock:
            self._hw = min(max(value, self._view.log_start_offset), self._leo)

    @property
    def last_stable_offset(self) -> int:
        """What read_committed consumers may read below: the high watermark, or the first
        offset of the oldest transaction still open if that is lower."""
        hw = self._hw
        first = self.txns.first_unstable_offset()
        return hw if first is None or first >= hw else max(first, self._view.log_start_offset)

    def active_producers(self) -> list[ActiveProducer]:
        """The producers this log keeps state for, each with the first offset of its
        transaction still open here (-1 if none); a producer whose transaction is open but
        whose batches are older than the state kept (see :mod:`.producer_state`) is listed
        with that offset alone (epoch, sequence and timestamp -1)."""
        with self._lock:
            open_txns = self.txns.open_transactions()
            known = [replace(p, current_txn_start_offset=open_txns.pop(p.producer_id, -1))
                     for p in self.producers.active()]
            known += [ActiveProducer(pid, -1, -1, -1, -1, first) for pid, first in open_txns.items()]
            return sorted(known, key=lambda p: p.producer_id)

    def last_producer_records(self) -> dict[int, tuple[int | None, int]]:
        """See :meth:`ProducerStateManager.last_records` (for the cleaner)."""
        with self._lock:
            return self.producers.last_records()

    def aborted_transactions(self, start_offset: int, end_offset: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping ``[start_offset, end_offset)``."""
        return self.txns.aborted_between(start_offset, end_offset)

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        """A snapshot of the segments, oldest first (the last one is active)."""
        return self._view.segments

    @property
    def active_segment(self) -> LogSegment:
        return self._view.segments[-1]

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError(f"log {self.dir} is closed")

    def update_config(self, config: LogConfig) -> None:
        """Swap in a new configuration (takes effect for the next append/retention run)."""
        with self._lock:
            self.config = config
            for seg in self._view.segments:
                seg.index_interval_bytes = config.index_interval_bytes

    def replace_segments(self, old: list[LogSegment], commit: Callable[[], None]) -> bool:
        """Swap cleaned data in for the consecutive segments ``old`` (the log cleaner).

        Under the lock: if ``old`` is still part of the log, close it (readers in flight
        finish, new ones get SegmentGone and wait for the new view), run ``commit`` (which
        puts the cleaned segment's files in place of ``old``'s, see the cleaner's swap),
        open the cleaned segment and publish it. Returns False, doing nothing, if
        retention or truncation changed those segments meanwhile.
        """
        with self._lock:
            self._check_open()
            segments = list(self._view.segments)
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
            self._view = LogView.of(segments, self._view.log_start_offset)
            self._rebuild_transactions()
            return True

    # -------------------------------------------------------------- appends

    def _validate(self, buf: Any, *, leader: bool) -> tuple[list[tuple[int, BatchHeader]], int]:
        return validate_append(buf, self.name, self.config, leader=leader)

    def append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int, *,
                         markers: bool = False, in_place: bool = False) -> AppendInfo:
        """Validate produced batches, assign consecutive offsets from the LEO, append.

        Offsets and the leader epoch are patched into each batch's header (the CRC does
        not cover them); the records themselves are stored exactly as received.
        Raises InvalidRecord (not magic 2, no records, base offset not 0, empty),
        CorruptMessage (CRC/length), MessageTooLarge (a batch over max.message.bytes),
        RecordListTooLarge (more than segment.bytes), KafkaStorageError (I/O failure).
        Control batches (transaction markers) only with ``markers``: producers may not
        write them (InvalidRecord).

        With ``in_place`` and writable ``records`` (a produce request's view into its own
        frame buffer) offsets are patched into the caller's bytes and those very bytes are
        written: one ``pwrite`` of the validated request buffer, no copy. Otherwise the
        records are copied first and the caller's bytes are left alone.
        """
        buf: bytearray | memoryview
        if in_place and isinstance(records, memoryview) and not records.readonly:
            buf = records
        else:
            buf = bytearray(records)
        batches, _ = self._validate(buf, leader=True)
        if not markers and any(h.is_control for _, h in batches):
            raise InvalidRecord(f"append to {self.name}: a producer may not write control "
                                "batches (transaction markers come from the coordinator)")
        num_records = 0
        max_ts = -1
        for _pos, header in batches:
            num_records += header.records_count
            if header.max_timestamp > max_ts:
                max_ts = header.max_timestamp
        with self._lock:
            self._check_open()
            for _pos, header in batches:
                if header.is_control:
                    self.producers.check_marker(header, self.name,
                                                marker_coordinator_epoch(buf, _pos, header))
                    continue
                duplicate = self.producers.check(header, self.name)
                if duplicate is not None:
                    if len(batches) == 1:  # a retried batch: already written, answer its offsets
                        return AppendInfo(duplicate[0], duplicate[1], num_records, max_ts, -1,
                                          self._view.log_start_offset)
                    raise DuplicateSequenceNumber(
                        f"append to {self.name}: a batch of producer {header.producer_id} was "
                        "already written")
            first = self._leo
            offset = first
            for pos, header in batches:
                assign_offsets(buf, pos, offset, leader_epoch)
                offset += header.last_offset_delta + 1
            self._append_locked(buf, first, offset - 1, max_ts)
            self.epochs.assign(leader_epoch, first)
            base = self._view.segments[-1].base_offset
            for pos, _header in batches:
                header = BatchHeader.parse(buf, pos)
                self.producers.update(header, marker_coordinator_epoch(buf, pos, header)
                                      if header.is_control else -1)
                self.txns.apply(buf, pos, header, base, self._hw)
            return AppendInfo(first, offset - 1, num_records, max_ts, -1, self._view.log_start_offset)

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> AppendInfo:
        """Append batches whose offsets were assigned by the leader (first one >= LEO).

        Batches are CRC-checked; a trailing partial batch is ignored. Raises
        UnexpectedAppendOffset when the offsets start below the LEO or do not increase.
        """
        batches, used = self._validate(records, leader=False)
        if not batches:
            return AppendInfo(-1, -1, 0, -1, -1, self._view.log_start_offset)
        num_records = sum(h.records_count for _, h in batches)
        max_ts = max(h.max_timestamp for _, h in batches)
        with self._lock:
            self._check_open()
            expected = self._leo
            for _pos, header in batches:
                if header.base_offset < expected:
                    raise UnexpectedAppendOffset(
                        f"append to {self.name}: batch base offset {header.base_offset} is below "
                        f"the expected offset {expected} (log end offset {self._leo})"
                    )
                expected = header.next_offset
            first = batches[0][1].base_offset
            last = batches[-1][1].last_offset
            data = records if used == len(records) else memoryview(records)[:used]
            self._append_locked(data, first, last, max_ts)
            base = self._view.segments[-1].base_offset
            for pos, header in batches:
                self.epochs.assign(header.partition_leader_epoch, header.base_offset)
                self.producers.update(header, marker_coordinator_epoch(records, pos, header)
                                      if header.is_control else -1)
                self.txns.apply(records, pos, header, base, self._hw)
            return AppendInfo(first, last, num_records, max_ts, -1, self._view.log_start_offset)

    def _append_locked(self, buf: Any, first: int, last: int, max_timestamp: int) -> None:
        """Append ``buf`` (offsets ``first``..``last``, its largest timestamp
        ``max_timestamp``), first rolling a new segment when the active one is full, would
        hold offsets too far apart for its index, or spans ``segment.ms``: as Kafka counts it,
        from the first batch's timestamp to the new records' (so records stamped a day apart
        do not share a segment, and retention by time can delete the older), or by the wall
        clock since the segment was created when its first batch has no timestamp."""
        active = self._view.segments[-1]
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
        self._leo = last + 1

    def _roll(self, base_offset: int, now: int) -> LogSegment:
        """Start a new active segment at ``base_offset`` (the next offset to append)."""
        view = self._view
        segments = list(view.segments)
        if segments[-1].size == 0:
            segments.pop().delete()  # never leave an empty segment behind
        new = LogSegment(self.dir, base_offset, self.config.index_interval_bytes, now)
        segments.append(new)
        log_start = view.log_start_offset if len(segments) > 1 else base_offset
        self._view = LogView.of(segments, max(log_start, segments[0].base_offset))
        return new

    # ----------------------------------------------------------------- reads

    def _out_of_range(self, offset: int, log_start: int, leo: int) -> OffsetOutOfRange:
        return OffsetOutOfRange(
            f"offset {offset} is out of range for {self.name}: log start offset {log_start}, "
            f"log end offset {leo}"
        )

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
        *,
        zero_copy: bool = False,
    ) -> FetchDataInfo:
        """Whole batches from the one holding ``start_offset``, at most ``max_bytes`` of them.

        With ``min_one_batch`` the first batch is returned even if larger than
        ``max_bytes`` (so a consumer always makes progress). Only batches whose last
        offset is below ``max_offset`` are returned (consumers: pass the high watermark).
        ``start_offset == log_end_offset`` returns no records; below the log start offset
        or above the log end offset raises OffsetOutOfRange. Reads at most one segment.

        With ``zero_copy`` the records are not read: ``records`` is a
        :class:`~.file_records.FileRecords` range of the segment file holding exactly the
        bytes a copying read returns (or ``b""``), pinned until the caller releases it.
        """
        view: LogView | None = None
        for _ in range(_READ_ATTEMPTS):
            if self._closed:
                raise KafkaStorageError(f"log {self.dir} is closed")
            leo = self._leo
            hw = self._hw
            previous, view = view, self._view
            if previous is view:
                # The last attempt raced a truncation or deletion that has not published a
                # new segment list yet. Every such mutation runs under the log's lock, so
                # taking it once waits exactly until that writer is done.
                with self._lock:
                    view = self._view
            log_start = view.log_start_offset
            if start_offset < log_start or start_offset > leo:
                raise self._out_of_range(start_offset, log_start, leo)
            if start_offset == leo or (max_offset is not None and start_offset >= max_offset):
                return FetchDataInfo(b"", start_offset, log_start, leo, hw)
            i = max(0, bisect_right(view.bases, start_offset) - 1)
            try:
                for seg in view.segments[i:]:
                    data: bytes | FileRecords | None
                    if zero_copy:
                        data, first = seg.read_region(
                            start_offset, max_bytes, max_offset=max_offset,
                            min_one_batch=min_one_batch)
                    else:
                        data, first = seg.read_batches(
                            start_offset, max_bytes, max_offset=max_offset,
                            min_one_batch=min_one_batch)
                    if first >= 0:
                        if data is None:
                            return FetchDataInfo(b"", start_offset, log_start, leo, hw)
                        return FetchDataInfo(data, first if data else start_offset, log_start, leo, hw)
                return FetchDataInfo(b"", start_offset, log_start, leo, hw)
            except (SegmentGone, SegmentChanged):
                continue
            except OSError as e:
                raise KafkaStorageError(f"read from {self.dir} failed: {e}") from e
        raise KafkaStorageError(f"read from {self.dir} at offset {start_offset} kept racing truncation")

    def offset_for_timestamp(self, timestamp: int, max_offset: int | None = None) -> tuple[int, int] | None:
        """ListOffsets: ``(offset, timestamp)`` of the first record with timestamp >= ``timestamp``.

        Special values: -2 (earliest) answers ``(log_start_offset, -1)``, -1 (latest)
        ``(log_end_offset, -1)`` (or ``max_offset`` if given and lower), -3 the record with
        the largest timestamp. Returns None when no record qualifies. Batches ending at or
        after ``max_offset`` are not considered (consumers: pass the high watermark).

        There is no time index: segments whose largest timestamp is below the target are
        skipped (each segment's largest timestamp is computed once, by a scan of its
        batch headers, then maintained by appends), the first candidate segment is scanned
        batch header by batch header to the first batch with ``max_timestamp >= timestamp``,
        and that one batch is decoded (decompressed if need be) to find the exact record.
        If the batch cannot be decoded the batch's base offset is answered (imprecise
        like Kafka's older index-granularity answers, but never past the record).
        """
        for _ in range(_READ_ATTEMPTS):
            self._check_open()
            try:
                return find_offset_for_timestamp(self._view, self._leo, timestamp, max_offset)
            except (SegmentGone, SegmentChanged):
                with self._lock:  # wait for the racing truncation/deletion (see read)
                    continue
            except OSError as e:
                raise KafkaStorageError(f"read from {self.dir} failed: {e}") from e
        raise KafkaStorageError(f"timestamp lookup in {self.dir} kept racing truncation")

    # ------------------------------------------------------------- lifecycle

    def flush(self) -> None:
        """fsync every segment written since the last flush, then checkpoint the offsets."""
        with self._lock:
            self._check_open()
            try:
                view = self._view
                leo = self._leo
                first = max(0, bisect_right(view.bases, self._recovery_point) - 1)
                for seg in view.segments[first:]:
                    seg.flush()
                self.epochs.flush()
                self._recovery_point = leo
                self._write_state()
            except OSError as e:
                raise KafkaStorageError(f"flush of {self.dir} failed: {e}") from e

    def close(self) -> None:
        """Flush and close every file (idempotent). Later calls raise KafkaStorageError."""
        with self._lock:
            if self._closed:
                return
            try:
                self.flush()
            finally:
                self._closed = True
                for seg in self._view.segments:
                    seg.close()

    def delete(self) -> None:
        """Close the log without flushing and remove its directory."""
        with self._lock:
            self._closed = True
            for seg in self._view.segments:
                seg.delete()
            shutil.rmtree(self.dir, ignore_errors=True)

    def __repr__(self) -> str:
        return (
            f"Log({str(self.dir)!r}, log_start_offset={self.log_start_offset}, "
            f"high_watermark={self._hw}, log_end_offset={self._leo}, segments={len(self._view.segments)})"
        )
