"""The log of one topic-partition: an ordered list of segments in one directory.

Directory layout (Kafka's, plus one small JSON checkpoint)::

    orders-0/
        00000000000000000000.log      segment with offsets [0, 1200)
        00000000000000000000.index
        00000000000000001200.log      the active segment: appends go here
        00000000000000001200.index
        log-state.json                {"high_watermark": 1250, "log_start_offset": 0,
                                       "recovery_point": 1200, "version": 1}

``log-state.json`` is rewritten atomically (write a temporary file, fsync, rename, fsync
the directory) by :meth:`Log.flush`, :meth:`Log.close` and whenever the log start offset
moves. ``recovery_point`` is the log end offset at the last flush: everything below it is
known to be on disk. On open, the segments from the one holding the recovery point to the
end are recovered (every batch re-read and CRC-checked, the index rebuilt, a torn or
corrupt tail cut off), and the active (last) segment is always recovered. Kafka recovers
from the recovery point the same way; it skips even the active segment after a clean
shutdown, while this log always pays for re-reading it, so a tail damaged while the
broker was down is still found. Segments before the recovery point keep their index and
are only sanity-checked (a missing or inconsistent index is rebuilt).

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

import json
import os
import shutil
import threading
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ..common import SYSTEM_CLOCK, Clock
from ..protocol.errors import (
    CorruptMessage,
    DuplicateSequenceNumber,
    InvalidRecord,
    KafkaError,
    KafkaStorageError,
    MalformedFrame,
    MessageTooLarge,
    OffsetOutOfRange,
    RecordListTooLarge,
)
from ..protocol.primitives import read_varint
from ..protocol.records.batch_header import (
    HEADER_SIZE,
    MAGIC,
    BatchHeader,
    assign_offsets,
    peek_batch_size,
    validate_batch,
)
from ..protocol.records.compression import decompress
from .config import LogConfig
from .leader_epoch_cache import LeaderEpochCache
from .offset_index import INDEX_SUFFIX
from .producer_state import ProducerStateManager
from .segment import INT32_MAX, LOG_SUFFIX, LogSegment, SegmentChanged, SegmentGone

STATE_FILE = "log-state.json"
STATE_VERSION = 1

# Special timestamps of ListOffsets.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3

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

    records: bytes
    first_offset: int
    log_start_offset: int = 0
    log_end_offset: int = 0
    high_watermark: int = 0


@dataclass(frozen=True)
class _View:
    """An immutable snapshot of the segment list, for lock-free readers."""

    bases: tuple[int, ...]
    segments: tuple[LogSegment, ...]
    log_start_offset: int


class Log:
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
        state = self._read_state()
        for p in self.dir.iterdir():
            name = p.name
            if name.endswith(".tmp") or name.endswith(".deleted"):
                p.unlink(missing_ok=True)
            elif name.endswith(INDEX_SUFFIX) and not (self.dir / (p.stem + LOG_SUFFIX)).exists():
                p.unlink(missing_ok=True)  # a deletion interrupted between the two files
        bases = sorted(
            int(p.stem) for p in self.dir.glob("*" + LOG_SUFFIX) if len(p.stem) == 20 and p.stem.isdigit()
        )
        now = self.clock.wall_ms()
        interval = self.config.index_interval_bytes
        segments: list[LogSegment] = []
        try:
            for base in bases:
                segments.append(LogSegment(self.dir, base, interval, now))
            if not segments:
                segments.append(LogSegment(self.dir, max(0, state["log_start_offset"]), interval, now))
            recovery_point = state["recovery_point"]
            first_dirty = max(0, bisect_right(bases, recovery_point) - 1)
            i = 0
            while i < len(segments):
                seg = segments[i]
                last = i == len(segments) - 1
                if (i >= first_dirty or last or not seg.load_index()) and seg.recover() and not last:
                    # Data inside the log was lost: what follows cannot be trusted to
                    # continue it (Kafka deletes the later segments the same way).
                    for later in segments[i + 1 :]:
                        later.delete()
                    del segments[i + 1 :]
                i += 1
        except BaseException:
            for seg in segments:
                seg.close()
            raise
        leo = segments[-1].next_offset
        log_start = min(max(state["log_start_offset"], segments[0].base_offset), leo)
        # Segments wholly below the log start offset (a deletion interrupted by a crash).
        while len(segments) > 1 and segments[1].base_offset <= log_start:
            segments.pop(0).delete()
        self._view = _View(tuple(s.base_offset for s in segments), tuple(segments), log_start)
        self._leo = leo
        self._hw = min(max(state["high_watermark"], log_start), leo)
        self._recovery_point = min(recovery_point, leo)
        self.epochs = LeaderEpochCache(self.dir)
        self.epochs.truncate_from_end(leo)  # recovery may have cut the tail
        self.producers = ProducerStateManager()
        for seg in segments[-2:]:  # idempotent producers' recent batches (see producer_state)
            for _pos, header in seg.headers():
                self.producers.update(header)

    def _read_state(self) -> dict[str, int]:
        state = {"log_start_offset": 0, "high_watermark": 0, "recovery_point": 0}
        try:
            raw = json.loads((self.dir / STATE_FILE).read_text())
            for key in state:
                value = raw[key]
                if isinstance(value, int) and value >= 0:
                    state[key] = value
        except (OSError, ValueError, KeyError, TypeError):
            pass  # missing or damaged: recover everything, start from the first segment
        return state

    def _write_state(self) -> None:
        data = json.dumps(
            {
                "version": STATE_VERSION,
                "log_start_offset": self._view.log_start_offset,
                "high_watermark": self._hw,
                "recovery_point": self._recovery_point,
            },
            sort_keys=True,
        ).encode()
        tmp = self.dir / (STATE_FILE + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.dir / STATE_FILE)
        self._fsync_dir()

    def _fsync_dir(self) -> None:
        fd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    # ------------------------------------------------------------ properties

    @property
    def name(self) -> str:
        return self.dir.name

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

    # -------------------------------------------------------------- appends

    def _validate(self, buf: Any, *, leader: bool) -> tuple[list[tuple[int, BatchHeader]], int]:
        """Check every batch of ``buf``; return ``[(position, header)]`` and the bytes used.

        A leader append must be whole batches; a follower append may end with a partial
        batch (as a fetch response may), which is dropped.
        """
        n = len(buf)
        max_size = self.config.max_message_bytes
        batches: list[tuple[int, BatchHeader]] = []
        pos = 0
        while pos < n:
            size = peek_batch_size(buf, pos)
            if size is None or pos + size > n:
                if not leader:
                    break
                raise CorruptMessage(
                    f"append to {self.name}: the records end with a partial batch at byte {pos} of {n}"
                )
            if pos + _MAGIC_AT < n and buf[pos + _MAGIC_AT] != MAGIC:
                raise InvalidRecord(
                    f"append to {self.name}: record batch magic {buf[pos + _MAGIC_AT]} is not "
                    "supported: only magic version 2 record batches are accepted"
                )
            if leader and size > max_size:
                raise MessageTooLarge(
                    f"append to {self.name}: record batch of {size} bytes is larger than the "
                    f"maximum allowed {max_size} (max.message.bytes)"
                )
            header = validate_batch(buf, pos)
            if leader:
                if header.base_offset != 0:
                    raise InvalidRecord(
                        f"append to {self.name}: the base offset of a produced record batch must be 0, "
                        f"not {header.base_offset}"
                    )
                if header.records_count <= 0:
                    raise InvalidRecord(f"append to {self.name}: record batch has no records")
                if header.records_count != header.last_offset_delta + 1:
                    raise InvalidRecord(
                        f"append to {self.name}: record batch count {header.records_count} does not "
                        f"match its last offset delta {header.last_offset_delta}"
                    )
            batches.append((pos, header))
            pos += size
        if leader and not batches:
            raise InvalidRecord(f"append to {self.name}: produce request has no record batches")
        if pos > self.config.segment_bytes:
            raise RecordListTooLarge(
                f"append to {self.name}: {pos} bytes of record batches exceed the segment size "
                f"{self.config.segment_bytes} (segment.bytes)"
            )
        return batches, pos

    def append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int) -> AppendInfo:
        """Validate produced batches, assign consecutive offsets from the LEO, append.

        Offsets and the leader epoch are patched into each batch's header (the CRC does
        not cover them); the records themselves are stored exactly as received.
        Raises InvalidRecord (not magic 2, no records, base offset not 0, empty),
        CorruptMessage (CRC/length), MessageTooLarge (a batch over max.message.bytes),
        RecordListTooLarge (more than segment.bytes), KafkaStorageError (I/O failure).
        """
        buf = bytearray(records)
        batches, _ = self._validate(buf, leader=True)
        num_records = 0
        max_ts = -1
        for _pos, header in batches:
            num_records += header.records_count
            if header.max_timestamp > max_ts:
                max_ts = header.max_timestamp
        with self._lock:
            self._check_open()
            for _pos, header in batches:
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
            self._append_locked(buf, first, offset - 1)
            self.epochs.assign(leader_epoch, first)
            for pos, _header in batches:
                self.producers.update(BatchHeader.parse(buf, pos))
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
            self._append_locked(data, first, last)
            for _pos, header in batches:
                self.epochs.assign(header.partition_leader_epoch, header.base_offset)
                self.producers.update(header)
            return AppendInfo(first, last, num_records, max_ts, -1, self._view.log_start_offset)

    def _append_locked(self, buf: Any, first: int, last: int) -> None:
        active = self._view.segments[-1]
        config = self.config
        now = self.clock.wall_ms()
        size = active.size
        try:
            if size > 0:
                if (
                    size + len(buf) > config.segment_bytes
                    or now - active.created_ms > config.segment_ms
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
        self._view = _View(tuple(s.base_offset for s in segments), tuple(segments), max(log_start, segments[0].base_offset))
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
    ) -> FetchDataInfo:
        """Whole batches from the one holding ``start_offset``, at most ``max_bytes`` of them.

        With ``min_one_batch`` the first batch is returned even if larger than
        ``max_bytes`` (so a consumer always makes progress). Only batches whose last
        offset is below ``max_offset`` are returned (consumers: pass the high watermark).
        ``start_offset == log_end_offset`` returns no records; below the log start offset
        or above the log end offset raises OffsetOutOfRange. Reads at most one segment.
        """
        view: _View | None = None
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
                    data, first = seg.read_batches(
                        start_offset, max_bytes, max_offset=max_offset, min_one_batch=min_one_batch
                    )
                    if first >= 0:
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
            leo = self._leo
            view = self._view
            log_start = view.log_start_offset
            if timestamp == EARLIEST_TIMESTAMP:
                return log_start, -1
            if timestamp == LATEST_TIMESTAMP:
                return (leo if max_offset is None else min(leo, max_offset)), -1
            try:
                if timestamp == MAX_TIMESTAMP:
                    return self._max_timestamp_offset(view, max_offset)
                if timestamp < 0:
                    raise KafkaError(f"unsupported ListOffsets timestamp {timestamp}")
                for seg in view.segments:
                    if seg.next_offset <= log_start and seg is not view.segments[-1]:
                        continue
                    if seg.max_timestamp < timestamp:
                        continue
                    found = seg.find_timestamp(timestamp, max_offset, log_start)
                    if found is None:
                        if max_offset is not None and seg.next_offset >= max_offset:
                            return None
                        continue
                    pos, header = found
                    batch = seg.read_at(pos, header.size)
                    return _locate_record(batch, header, timestamp, log_start)
                return None
            except (SegmentGone, SegmentChanged):
                with self._lock:  # wait for the racing truncation/deletion (see read)
                    continue
            except OSError as e:
                raise KafkaStorageError(f"read from {self.dir} failed: {e}") from e
        raise KafkaStorageError(f"timestamp lookup in {self.dir} kept racing truncation")

    def _max_timestamp_offset(self, view: _View, max_offset: int | None) -> tuple[int, int] | None:
        best: LogSegment | None = None
        for seg in view.segments:
            if best is None or seg.max_timestamp > best.max_timestamp:
                best = seg
        if best is None or best.max_timestamp < 0:
            return None
        header_pos = best.max_timestamp_position
        raw = best.read_at(header_pos, HEADER_SIZE)
        header = BatchHeader.parse(raw)
        if max_offset is not None and header.last_offset >= max_offset:
            return None
        batch = best.read_at(header_pos, header.size)
        return _locate_record(batch, header, header.max_timestamp, view.log_start_offset)

    # ----------------------------------------------------- truncation, retention

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
                self._view = _View(tuple(s.base_offset for s in keep), tuple(keep), view.log_start_offset)
                for seg in removed:
                    seg.delete()
                keep[-1].truncate_to(offset)
                self._leo = keep[-1].next_offset
            except OSError as e:
                raise KafkaStorageError(f"truncation of {self.dir} failed: {e}") from e
            if self._view.log_start_offset > self._leo:
                self._view = _View(self._view.bases, self._view.segments, self._leo)
            self._hw = min(self._hw, self._leo)
            self._recovery_point = min(self._recovery_point, self._leo)
            self.epochs.truncate_from_end(self._leo)
            self.producers.truncate_from(self._leo)
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
                    seg.delete()
                new = LogSegment(self.dir, offset, self.config.index_interval_bytes, self.clock.wall_ms())
                self._view = _View((offset,), (new,), offset)
                self._leo = offset
                self._hw = offset
                self.epochs.clear()
                self.producers.clear()
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
        remaining segment.
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
                if cfg.retention_ms >= 0:
                    while deletable(n):
                        seg = segments[n]
                        ts = seg.max_timestamp
                        if ts < 0:
                            ts = seg.last_modified
                        if now - ts <= cfg.retention_ms:
                            break
                        n += 1
                if cfg.retention_bytes >= 0:
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
        self._view = _View(tuple(s.base_offset for s in keep), keep, log_start)
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
                self._view = _View(view.bases, view.segments, offset)
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


def _locate_record(batch: bytes, header: BatchHeader, timestamp: int, min_offset: int) -> tuple[int, int]:
    """``(offset, timestamp)`` of the first record of ``batch`` with timestamp >= ``timestamp``
    and offset >= ``min_offset``; the batch's ``(base offset, max timestamp)`` if undecodable."""
    fallback = (max(header.base_offset, min_offset), header.max_timestamp)
    if header.timestamp_type == 1:  # LogAppendTime: every record has the batch's max timestamp
        return fallback
    try:
        records: Sequence[int] = decompress(header.compression, memoryview(batch)[HEADER_SIZE:])
        p = 0
        for _ in range(header.records_count):
            length, p = read_varint(records, p)
            end = p + length
            _ts_delta, q = read_varint(records, p + 1)  # skip the attributes byte
            offset_delta, _ = read_varint(records, q)
            ts = header.base_timestamp + _ts_delta
            offset = header.base_offset + offset_delta
            if ts >= timestamp and offset >= min_offset:
                return offset, ts
            p = end
    except (KafkaError, MalformedFrame, IndexError):
        pass
    return fallback
