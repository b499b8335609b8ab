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

The log is split along its seams: the segments themselves — appending and rolling,
truncating, dropping and swapping segments, flushing — in :mod:`.local_log`
(:class:`~.local_log.LocalLog`, which :class:`Log` is built on), opening and recovery in
:mod:`.log_loader`, the checks on appended batches in :mod:`.append_validation`, which
segments retention and DeleteRecords remove in :mod:`.log_retention`, ListOffsets by time
in :mod:`.timestamp_lookup`, the walk over batches in :mod:`.batch_scanner`. This module
keeps what the bytes mean — the high watermark, producer state, leader epochs,
transactions —, lock-free reads, and the invariants that tie them to the segments.

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
from .local_log import LocalLog
from .log_loader import load_log, write_log_state
from .log_retention import prefix_below, retention_prefix
from .log_view import LogView
from .producer_state import ActiveProducer, ProducerStateManager
from .segment import LogSegment, SegmentChanged, SegmentGone
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


class Log:
    """Append-only log of one partition, made of segments; see the module docstring.

    Invariants: those of its :class:`~.local_log.LocalLog` (sorted, non-overlapping
    segments, one active, log start offset within the segments and at most the log end
    offset), and ``log_start_offset <= high_watermark <= log_end_offset``; every batch in
    the log has passed ``validate_batch``; offsets are consecutive for leader appends; the
    producer state, leader epochs and transactions describe exactly the batches below the
    log end offset (rebuilt or cut after a truncation or a swap).

    Threading: one ``RLock`` (the local log's) serializes appends, truncation, retention,
    flush and close.
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
        self.clock = clock
        config = config if config is not None else LogConfig()
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._load(config)
        except OSError as e:
            raise KafkaStorageError(f"cannot open log {self.dir}: {e}") from e

    # --------------------------------------------------------------- loading

    def _load(self, config: LogConfig) -> None:
        loaded = load_log(self.dir, config, self.clock.wall_ms())
        self._local = LocalLog(self.dir, config, self.clock, loaded.segments,
                               loaded.log_start_offset, loaded.log_end_offset,
                               loaded.recovery_point)
        self._lock = self._local.lock
        self._hw = loaded.high_watermark
        self.epochs = LeaderEpochCache(self.dir)
        self.epochs.truncate_from_end(self._local.leo)  # recovery may have cut the tail
        self.producers = ProducerStateManager()
        for seg in loaded.segments[-2:]:  # idempotent producers' recent batches (see producer_state)
            for _pos, header in seg.headers():
                self.producers.update(header)
        self.txns = TransactionState()
        self._rebuild_transactions()

    def _rebuild_transactions(self) -> None:
        """Open and aborted transactions from every batch header (see transactions)."""
        self.txns.clear()
        for seg in self._local.view.segments:
            for pos, header in seg.headers():
                if not header.is_transactional:
                    continue
                if header.is_control:  # a marker: its one record says commit or abort
                    self.txns.apply(seg.read_at(pos, header.size), 0, header, seg.base_offset,
                                    self._hw)
                else:
                    self.txns.apply(b"", 0, header, seg.base_offset, self._hw)

    def _write_state(self) -> None:
        write_log_state(self.dir, self._local.view.log_start_offset, self._hw,
                        self._local.recovery_point)

    # ------------------------------------------------------------ properties

    @property
    def name(self) -> str:
        return self.dir.name

    @property
    def config(self) -> LogConfig:
        return self._local.config

    @property
    def log_start_offset(self) -> int:
        return self._local.view.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._local.leo

    @property
    def high_watermark(self) -> int:
        return self._hw

    @high_watermark.setter
    def high_watermark(self, value: int) -> None:
        with self._lock:
            self._hw = min(max(value, self._local.view.log_start_offset), self._local.leo)

    @property
    def last_stable_offset(self) -> int:
        """What read_committed consumers may read below: the high watermark, or the first
        offset of the oldest transaction still open if that is lower."""
        hw = self._hw
        first = self.txns.first_unstable_offset()
        return hw if first is None or first >= hw else max(first, self._local.view.log_start_offset)

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
        return self._local.recovery_point

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        """A snapshot of the segments, oldest first (the last one is active)."""
        return self._local.view.segments

    @property
    def active_segment(self) -> LogSegment:
        return self._local.view.segments[-1]

    @property
    def closed(self) -> bool:
        return self._local.closed

    def _check_open(self) -> None:
        self._local.check_open()

    def update_config(self, config: LogConfig) -> None:
        """Swap in a new configuration (takes effect for the next append/retention run)."""
        self._local.update_config(config)

    def replace_segments(self, old: list[LogSegment], commit: Callable[[], None]) -> bool:
        """Swap cleaned data in for the consecutive segments ``old`` (the log cleaner; see
        :meth:`.local_log.LocalLog.replace_segments`), then rebuild the transactions."""
        with self._lock:
            if not self._local.replace_segments(old, commit):
                return False
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
                                          self.log_start_offset)
                    raise DuplicateSequenceNumber(
                        f"append to {self.name}: a batch of producer {header.producer_id} was "
                        "already written")
            first = self._local.leo
            offset = first
            for pos, header in batches:
                assign_offsets(buf, pos, offset, leader_epoch)
                offset += header.last_offset_delta + 1
            self._local.append(buf, first, offset - 1, max_ts)
            self.epochs.assign(leader_epoch, first)
            base = self._local.view.segments[-1].base_offset
            for pos, _header in batches:
                header = BatchHeader.parse(buf, pos)
                self.producers.update(header, marker_coordinator_epoch(buf, pos, header)
                                      if header.is_control else -1)
                self.txns.apply(buf, pos, header, base, self._hw)
            return AppendInfo(first, offset - 1, num_records, max_ts, -1, self.log_start_offset)

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> AppendInfo:
        """Append batches whose offsets were assigned by the leader (first one >= LEO).

        Batches are CRC-checked; a trailing partial batch is ignored. Raises
        UnexpectedAppendOffset when the offsets start below the LEO or do not increase.
        """
        batches, used = self._validate(records, leader=False)
        if not batches:
            return AppendInfo(-1, -1, 0, -1, -1, self.log_start_offset)
        num_records = sum(h.records_count for _, h in batches)
        max_ts = max(h.max_timestamp for _, h in batches)
        with self._lock:
            self._check_open()
            expected = self._local.leo
            for _pos, header in batches:
                if header.base_offset < expected:
                    raise UnexpectedAppendOffset(
                        f"append to {self.name}: batch base offset {header.base_offset} is below "
                        f"the expected offset {expected} (log end offset {self._local.leo})"
                    )
                expected = header.next_offset
            first = batches[0][1].base_offset
            last = batches[-1][1].last_offset
            data = records if used == len(records) else memoryview(records)[:used]
            self._local.append(data, first, last, max_ts)
            base = self._local.view.segments[-1].base_offset
            for pos, header in batches:
                self.epochs.assign(header.partition_leader_epoch, header.base_offset)
                self.producers.update(header, marker_coordinator_epoch(records, pos, header)
                                      if header.is_control else -1)
                self.txns.apply(records, pos, header, base, self._hw)
            return AppendInfo(first, last, num_records, max_ts, -1, self.log_start_offset)

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
            if self._local.closed:
                raise KafkaStorageError(f"log {self.dir} is closed")
            leo = self._local.leo
            hw = self._hw
            previous, view = view, self._local.view
            if previous is view:
                # The last attempt raced a truncation or deletion that has not published a
                # new segment list yet. Every such mutation runs under the log's lock, so
                # taking it once waits exactly until that writer is done.
                with self._lock:
                    view = self._local.view
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
                return find_offset_for_timestamp(self._local.view, self._local.leo, timestamp, max_offset)
            except (SegmentGone, SegmentChanged):
                with self._lock:  # wait for the racing truncation/deletion (see read)
                    continue
            except OSError as e:
                raise KafkaStorageError(f"read from {self.dir} failed: {e}") from e
        raise KafkaStorageError(f"timestamp lookup in {self.dir} kept racing truncation")

    # ------------------------------------------- truncation, retention, DeleteRecords
    # Each publishes the new segment list before deleting files (see local_log).

    def truncate_to(self, offset: int) -> bool:
        """Remove every batch whose last offset is >= ``offset`` (follower divergence).

        Truncation is at batch boundaries: the batch holding ``offset`` goes as a whole.
        Truncating below the log start offset empties the log and restarts it at
        ``offset``. Returns False if nothing was removed (``offset >= log_end_offset``).
        """
        with self._lock:
            self._check_open()
            if offset >= self._local.leo:
                return False
            try:
                cut = self._local.truncate_to(offset)
            except OSError as e:
                raise KafkaStorageError(f"truncation of {self.dir} failed: {e}") from e
            if not cut:
                self.truncate_fully_and_start_at(offset)
                return True
            leo = self._local.leo
            self._hw = min(self._hw, leo)
            self.epochs.truncate_from_end(leo)
            self.producers.truncate_from(leo)
            self._rebuild_transactions()  # a cut-off marker reopens its transaction
            return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and restart the log empty at ``offset`` (LEO = start = HW)."""
        if offset < 0:
            raise ValueError(f"cannot start a log at negative offset {offset}")
        with self._lock:
            self._check_open()
            try:
                self._local.truncate_fully_and_start_at(offset)
                self._hw = offset
                self.epochs.clear()
                self.producers.clear()
                self.txns.clear()
                self._write_state()
            except OSError as e:
                raise KafkaStorageError(f"truncation of {self.dir} failed: {e}") from e

    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """Apply retention (:func:`.log_retention.retention_prefix`); return the number of
        segments deleted. Moves the log start offset to the first remaining segment."""
        with self._lock:
            self._check_open()
            now = self.clock.wall_ms() if now_ms is None else now_ms
            try:
                n = retention_prefix(self._local.view, self._hw, self.config, now)
            except (OSError, SegmentGone) as e:
                raise KafkaStorageError(f"retention on {self.dir} failed: {e}") from e
            if n:
                self._delete_prefix(n)
            return n

    def _delete_prefix(self, n: int) -> None:
        removed, log_start = self._local.drop_prefix(n)
        self.txns.forget_segments_below(log_start)
        if self._hw < log_start:
            self._hw = log_start
        try:
            self._write_state()
            self._local.delete_segments(removed)
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
            if offset > self._local.view.log_start_offset:
                self._local.advance_log_start(offset)
                self.txns.forget_segments_below(offset)
                try:
                    self._write_state()
                except OSError as e:
                    raise KafkaStorageError(f"checkpoint of {self.dir} failed: {e}") from e
                n = prefix_below(self._local.view.segments, offset)
                if n:
                    self._delete_prefix(n)
            return self._local.view.log_start_offset

    # ------------------------------------------------------------- lifecycle

    def flush(self) -> None:
        """fsync every segment written since the last flush, then checkpoint the offsets."""
        with self._lock:
            self._check_open()
            try:
                leo = self._local.flush_segments()
                self.epochs.flush()
                self._local.recovery_point = leo
                self._write_state()
            except OSError as e:
                raise KafkaStorageError(f"flush of {self.dir} failed: {e}") from e

    def close(self) -> None:
        """Flush and close every file (idempotent). Later calls raise KafkaStorageError."""
        with self._lock:
            if self._local.closed:
                return
            try:
                self.flush()
            finally:
                self._local.close_segments()

    def delete(self) -> None:
        """Close the log without flushing and remove its directory."""
        self._local.delete()

    def __repr__(self) -> str:
        return (
            f"Log({str(self.dir)!r}, log_start_offset={self.log_start_offset}, "
            f"high_watermark={self._hw}, log_end_offset={self._local.leo}, segments={len(self._local.view.segments)})"
        )
