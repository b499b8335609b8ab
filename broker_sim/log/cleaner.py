"""Log compaction: a compacted log keeps at least the latest record of every key.

For a log whose ``cleanup.policy`` includes ``compact``, a *clean* rewrites its closed
segments keeping only what a reader still needs, with offsets unchanged (compaction
leaves gaps, which readers skip). Kafka's cleaner, step by step:

1. **The cleanable range.** The log is split at the *first dirty offset* (where the last
   clean stopped, kept in the partition's ``cleaner-offset-checkpoint``): below it the
   *clean* part, above it the *dirty* part up to the *first uncleanable offset* — the
   lowest of the active segment's base, the high watermark, the first offset of a
   transaction still open, and the first segment with a record newer than
   ``min.compaction.lag.ms``. Only whole segments are cleaned. A log is due when its dirty
   share of bytes reaches ``min.cleanable.dirty.ratio``, or when its oldest dirty record
   is older than ``max.compaction.lag.ms``.
2. **The offset map**: key -> offset of its last record, over the dirty part (aborted
   transactional records left out). At most ``log.cleaner.dedupe.buffer.size / 24``
   keys: if the dirty part has more, the clean stops at an earlier segment boundary.
3. **The rewrite**, of every segment below the dirty end, oldest first, grouped so a
   group fits ``segment.bytes``. A record is kept unless: a later record has its key (the
   map says so), it has no key, it belongs to an aborted transaction, or it is a
   tombstone (null value) whose batch's *delete horizon* has passed. The horizon is set
   by the first clean that keeps a tombstone of a batch: the batch is rebuilt with
   attribute bit 6 and its base timestamp set to that clean's time plus
   ``delete.retention.ms`` (record timestamps rewritten relative to it), so readers have
   that long to see the deletion, counted from when the cleaner first saw it, whatever
   the records' own timestamps; a later clean past the horizon drops the tombstones. A
   transaction marker whose transaction has no record kept gets a horizon the same way
   and goes once it has passed. A batch whose records all stay (and needs no horizon) is
   copied as it is; one that loses some is rebuilt from the kept records (same base
   offset, last offset delta, producer fields and compression codec; base timestamp the
   first kept record's or the horizon, max timestamp the newest kept record's; new
   count, length and CRC). A batch that loses every record is dropped, except its empty
   header (records_count 0, base timestamp -1) stays when it is the last batch of the
   cleaned range (the log keeps its last offset) or the last data batch of an idempotent
   producer the partition still tracks (or its last marker): its producer id, epoch and
   sequence stay in the log, for the producer state rebuilt from it.
4. **The swap**, crash-safe: a group's cleaned segment is written in the partition's
   ``cleaning/`` directory with a ``range`` file naming the offsets it replaces, flushed,
   and the directory renamed to ``swap/`` — the commit point. Under the log's lock the
   replaced segments are deleted, the cleaned files moved into place, ``swap/`` removed
   and the new segment published (:mod:`.segment_swap`). When a log opens, a leftover
   ``cleaning/`` is deleted (the clean is simply redone) and a leftover ``swap/`` is
   finished the same way, so a ``kill -9`` at any moment loses nothing and leaves no half
   segment: every offset is either in the old segments or in the cleaned one.

:class:`LogCleaner` runs ``log.cleaner.threads`` threads; each picks the due log with the
highest dirty ratio (a log is cleaned by one thread at a time), cleans it, and otherwise
sleeps ``log.cleaner.backoff.ms``. Stopping it abandons a clean in progress within one
batch's work (:class:`CleanAborted`), so a broker stops promptly however large the log.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..common import ShutdownableThread
from ..common.clock import SYSTEM_CLOCK, Clock
from ..protocol.primitives import read_uvarint, read_varint, write_varint
from ..protocol.records.batch_header import (
    _HEADER,
    COMPRESSION_MASK,
    HEADER_SIZE,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    seal_crc,
)
from ..protocol.records.compression import NONE, compress
from ..protocol.records.reader import RecordIndex, records_section
from .batch_scanner import batch_headers, scan
from .log_dir import fsync_dir
from .segment import LogSegment
from .segment_swap import CLEANING, RANGE, commit_swap

if TYPE_CHECKING:
    from .log import Log

log = logging.getLogger(__name__)

CHECKPOINT = "cleaner-offset-checkpoint"
READ_CHUNK = 8 * 1024 * 1024
ENTRY_BYTES = 24  # Kafka's accounting per offset-map entry (hash + offset)
DELETE_HORIZON_MASK = 0x40  # batch attribute: base_timestamp is the delete horizon
NO_TIMESTAMP = -1
_NO_RECORDS = RecordIndex(b"", BatchHeader(0, 0, 0, 2, 0, 0, -1, 0, 0, -1, -1, -1, 0))


class CleanAborted(Exception):
    """A clean was told to stop (the cleaner is stopping) and abandoned its pass."""


def _never() -> bool:
    return False


@dataclass
class CleanStats:
    """What one clean did (for logs, metrics and the benchmark)."""

    first_dirty: int = 0
    end: int = 0
    segments: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    seconds: float = 0.0


# ---- the checkpoint ----------------------------------------------------------------------
def read_checkpoint(dir: Path) -> int:
    try:
        return int((dir / CHECKPOINT).read_text().strip() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def write_checkpoint(dir: Path, offset: int) -> None:
    tmp = dir / (CHECKPOINT + ".tmp")
    with open(tmp, "w") as f:
        f.write(f"{offset}\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, dir / CHECKPOINT)


# ---- what to clean ---------------------------------------------------------------------
@dataclass(frozen=True)
class Cleanable:
    first_dirty: int
    end: int  # first uncleanable offset (a segment base)
    dirty_ratio: float
    due: bool


def cleanable(log: Log, now_ms: int) -> Cleanable | None:
    """The log's cleanable range and whether it is due (None: nothing to clean)."""
    cfg = log.config
    if not cfg.compacts:
        return None
    segments = log.segments[:-1]  # never the active segment
    if not segments:
        return None
    first_dirty = max(read_checkpoint(log.dir), log.log_start_offset)
    limit = min(log.high_watermark, log.last_stable_offset, log.active_segment.base_offset)
    lag_edge = now_ms - cfg.min_compaction_lag_ms
    end = first_dirty
    clean_bytes = dirty_bytes = 0
    for i, seg in enumerate(segments):
        upper = segments[i + 1].base_offset if i + 1 < len(segments) else log.active_segment.base_offset
        if upper <= first_dirty:
            clean_bytes += seg.size
            continue
        if upper > limit or (cfg.min_compaction_lag_ms > 0 and seg.max_timestamp > lag_edge):
            break
        dirty_bytes += seg.size
        end = upper
    if end <= first_dirty or dirty_bytes == 0:
        return None
    ratio = dirty_bytes / max(1, clean_bytes + dirty_bytes)
    oldest = _first_timestamp(log, first_dirty)
    overdue = oldest >= 0 and now_ms - oldest > cfg.max_compaction_lag_ms
    return Cleanable(first_dirty, end, ratio, ratio >= cfg.min_cleanable_dirty_ratio or overdue)


def _first_timestamp(log: Log, offset: int) -> int:
    """The newest timestamp of the first batch at or after ``offset`` (one header read)."""
    for seg in log.segments:
        if seg.next_offset > offset:
            first = next(batch_headers(seg.read_at, 0, seg.size), None)
            return -1 if first is None else first[1].max_timestamp
    return -1


# ---- reading records without decoding them all -----------------------------------------
@dataclass
class _Batch:
    header: BatchHeader
    raw: memoryview  # the whole batch as stored
    data: bytes  # its records section, decompressed
    index: RecordIndex


def _read(seg: LogSegment, should_stop: Callable[[], bool]) -> list[_Batch]:
    """Every batch of a closed segment, its records indexed (reading in large chunks);
    CleanAborted as soon as ``should_stop()`` (checked before each batch)."""
    out = []
    for _pos, chunk, off, size in scan(seg.read_at, 0, seg.size, HEADER_SIZE, READ_CHUNK,
                                       whole=True):
        if should_stop():
            raise CleanAborted(f"stopped reading segment {seg.base_offset}")
        raw = memoryview(chunk)[off:off + size]
        header = BatchHeader.parse(raw)
        if header.is_control:
            out.append(_Batch(header, raw, b"", _NO_RECORDS))
            continue
        data = records_section(raw, 0, header)
        out.append(_Batch(header, raw, data, RecordIndex(data, header)))
    return out


class _Aborted:
    """Aborted transactions by producer id: is a batch's data aborted?"""

    def __init__(self, log: Log, end: int) -> None:
        self._by_pid: dict[int, list[tuple[int, int]]] = {}
        for a in log.aborted_transactions(log.log_start_offset, end):
            self._by_pid.setdefault(a.producer_id, []).append((a.first_offset, a.last_offset))

    def __contains__(self, header: BatchHeader) -> bool:
        ranges = self._by_pid.get(header.producer_id)
        return ranges is not None and any(a <= header.base_offset <= b for a, b in ranges)


# ---- the clean ---------------------------------------------------------------------------
def build_offset_map(log: Log, first_dirty: int, end: int, max_entries: int, aborted: _Aborted,
                     parsed: dict[int, list[_Batch]],
                     should_stop: Callable[[], bool]) -> tuple[dict[bytes | None, int], int]:
    """Key -> last offset over the dirty segments; returns the map and where it stops
    (``parsed`` keeps each segment read, by base offset, for the rewrite)."""
    offsets: dict[bytes | None, int] = {}
    segments = [s for s in log.segments[:-1] if first_dirty <= s.base_offset < end
                or s.base_offset < first_dirty < s.next_offset]
    for i, seg in enumerate(segments):
        batches = parsed[seg.base_offset] = _read(seg, should_stop)
        before = dict(offsets) if len(offsets) > max_entries // 2 else None
        for b in batches:
            h = b.header
            if h.is_control or h.last_offset < first_dirty or h.base_offset >= end:
                continue
            if h.is_transactional and h in aborted:
                continue
            if h.base_offset >= first_dirty:
                offsets.update(zip(b.index.keys, b.index.offsets, strict=True))  # last one wins
            else:
                offsets.update((k, o) for k, o in zip(b.index.keys, b.index.offsets, strict=True)
                               if o >= first_dirty)
        if len(offsets) > max_entries:
            if i == 0 or before is None:
                raise RuntimeError(f"{log.name}: one segment holds more than {max_entries} keys; "
                                   "raise log.cleaner.dedupe.buffer.size")
            for later in segments[i:]:
                parsed.pop(later.base_offset, None)
            return before, seg.base_offset
    offsets.pop(None, None)  # records without a key: never kept
    return offsets, end


def clean(log: Log, now_ms: int, max_entries: int, range_: Cleanable | None = None,
          should_stop: Callable[[], bool] = _never,
          clock: Clock = SYSTEM_CLOCK) -> CleanStats | None:
    """Clean ``log`` once if it has a cleanable range; the stats of what was done.

    ``should_stop`` is polled before each batch read or rewritten; once it returns True
    the pass is abandoned with CleanAborted: the group being rewritten is dropped with its
    ``cleaning/`` files before its swap (a swap, once committed, is finished), groups
    swapped already stay (each is a whole clean of its segments) and the checkpoint is
    not moved, so the next pass starts where this one did. The stats' ``seconds`` are
    read on ``clock`` (the cleaner's)."""
    t0 = clock.monotonic_ms()
    range_ = range_ or cleanable(log, now_ms)
    if range_ is None:
        return None
    aborted = _Aborted(log, range_.end)
    parsed: dict[int, list[_Batch]] = {}
    offsets, end = build_offset_map(log, range_.first_dirty, range_.end, max_entries, aborted,
                                    parsed, should_stop)
    stats = CleanStats(range_.first_dirty, end)
    rules = _Rules(now_ms, log.config.delete_retention_ms, range_.end, log.last_producer_records())
    groups = _groups(log, end)
    kept_in_txn: dict[int, bool] = {}
    for group in groups:
        if not _clean_group(log, group, offsets, aborted, rules, kept_in_txn, stats, parsed,
                            should_stop):
            break  # the log changed under the clean (retention, truncation): next time
    write_checkpoint(log.dir, end)
    stats.seconds = (clock.monotonic_ms() - t0) / 1000
    return stats


def _groups(log: Log, end: int) -> list[list[LogSegment]]:
    """The segments below ``end``, in groups that fit one segment each."""
    limit = log.config.segment_bytes
    groups: list[list[LogSegment]] = []
    for seg in log.segments[:-1]:
        if seg.next_offset > end:
            break
        last = groups[-1] if groups else None
        if last and sum(s.size for s in last) + seg.size <= limit \
                and seg.next_offset - last[0].base_offset < 2**31 - 1:
            last.append(seg)
        else:
            groups.append([seg])
    return groups


@dataclass(frozen=True)
class _Rules:
    """What a clean decides by, besides the offset map."""

    now_ms: int
    delete_retention_ms: int
    round_end: int  # the first uncleanable offset: the batch ending there keeps its header
    #: producer id -> (offset of its last data batch or None when a marker came after it, epoch)
    producers: dict[int, tuple[int | None, int]]

    def keeps_empty(self, header: BatchHeader) -> bool:
        """Whether ``header``'s batch stays as an empty header when none of its records do."""
        if header.last_offset + 1 == self.round_end:
            return True
        last = self.producers.get(header.producer_id) if header.producer_id >= 0 else None
        if last is None:
            return False
        data_offset, epoch = last
        if data_offset is not None:
            return header.last_offset == data_offset
        return header.is_control and header.producer_epoch == epoch


def _clean_group(log: Log, group: list[LogSegment], offsets: dict[bytes | None, int],
                 aborted: _Aborted, rules: _Rules, kept_in_txn: dict[int, bool], stats: CleanStats,
                 parsed: dict[int, list[_Batch]], should_stop: Callable[[], bool]) -> bool:
    base = group[0].base_offset
    replaced_end = group[-1].next_offset
    work = log.dir / CLEANING
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    cleaned = LogSegment(work, base, log.config.index_interval_bytes, group[0].created_ms)
    try:
        for seg in group:
            out = bytearray()
            last = -1
            batches = parsed.pop(seg.base_offset, None)
            for b in _read(seg, should_stop) if batches is None else batches:
                if should_stop():
                    raise CleanAborted(f"stopped rewriting segment {seg.base_offset}")
                stats.bytes_read += len(b.raw)
                kept = _clean_batch(b, offsets, aborted, rules, kept_in_txn, stats)
                if kept is not None:
                    out += kept
                    last = b.header.last_offset
                if len(out) >= READ_CHUNK:
                    cleaned.append(last, out)
                    stats.bytes_written += len(out)
                    out = bytearray()
            if out:
                cleaned.append(last, out)
                stats.bytes_written += len(out)
            stats.segments += 1
        cleaned.flush()
        cleaned.close()
        (work / RANGE).write_text(f"{base} {replaced_end}\n")
        fsync_dir(work)
        if should_stop():  # the last moment to abandon: the swap below is finished once begun
            raise CleanAborted(f"stopped before swapping in segment {base}")
    except BaseException:
        cleaned.close()
        shutil.rmtree(work, ignore_errors=True)
        raise
    return log.replace_segments(group, lambda: commit_swap(log.dir, base, replaced_end))


def _horizon(header: BatchHeader) -> int | None:
    """The batch's delete horizon, if a clean has set one."""
    return header.base_timestamp if header.attributes & DELETE_HORIZON_MASK else None


def _clean_batch(b: _Batch, offsets: dict[bytes | None, int], aborted: _Aborted, rules: _Rules,
                 kept_in_txn: dict[int, bool], stats: CleanStats) -> bytes | memoryview | None:
    """The batch as it stays after cleaning: itself, rebuilt from its kept records, its
    empty header, or None."""
    header = b.header
    pid = header.producer_id
    horizon = _horizon(header)
    stats.records_read += header.records_count
    if header.is_control:
        if kept_in_txn.pop(pid, False):  # its transaction still has records: kept as it is
            stats.records_kept += header.records_count
            return b.raw
        if horizon is None:  # the first clean to see it alone: readers get delete.retention.ms
            stats.records_kept += header.records_count
            data = records_section(b.raw, 0, header)  # (a marker's records are not indexed on reading)
            return _rebuild(_Batch(header, b.raw, data, RecordIndex(data, header)),
                            list(range(header.records_count)), rules.now_ms + rules.delete_retention_ms)
        if rules.now_ms < horizon:
            stats.records_kept += header.records_count
            return b.raw
        return _empty(header) if rules.keeps_empty(header) else None
    if header.is_transactional and header in aborted:
        kept_in_txn.setdefault(pid, False)
        return _empty(header) if rules.keeps_empty(header) else None
    index = b.index
    latest = offsets.get
    tombstones = index.tombstones
    tombstones_go = horizon is not None and rules.now_ms >= horizon
    keep = [i for i, (key, offset) in enumerate(zip(index.keys, index.offsets, strict=True))
            if key is not None and latest(key, -1) <= offset
            and not (tombstones_go and tombstones[i])]
    stats.records_kept += len(keep)
    if header.is_transactional:
        kept_in_txn[pid] = kept_in_txn.get(pid, False) or bool(keep)
    if not keep:
        return _empty(header) if rules.keeps_empty(header) else None
    if horizon is None and any(tombstones[i] for i in keep):
        horizon = rules.now_ms + rules.delete_retention_ms
    elif len(keep) == header.records_count:
        return b.raw
    return _rebuild(b, keep, horizon)


def _empty(header: BatchHeader) -> bytes:
    """The batch's header alone: no records, its offsets and producer fields (Kafka's
    empty batch: no codec, no base timestamp, the max timestamp kept)."""
    out = bytearray(HEADER_SIZE)
    attributes = header.attributes & ~(COMPRESSION_MASK | DELETE_HORIZON_MASK)
    _HEADER.pack_into(out, 0, header.base_offset, HEADER_SIZE - 12, header.partition_leader_epoch,
                      header.magic, 0, attributes, header.last_offset_delta, NO_TIMESTAMP,
                      header.max_timestamp, header.producer_id, header.producer_epoch,
                      header.base_sequence, 0)
    seal_crc(out)
    return bytes(out)


def _rebuild(b: _Batch, keep: list[int], horizon: int | None) -> bytes:
    """The batch with only the records ``keep`` (same offsets and producer fields; new
    CRC). Its base timestamp is ``horizon`` (bit 6 set) or else the first kept record's,
    each record's timestamp delta rewritten relative to it; its max timestamp the newest
    kept record's (a LogAppendTime batch keeps its own)."""
    header, data, ends = b.header, b.data, b.index.ends
    parts = []  # (timestamp, attributes byte, the record after its timestamp delta)
    for i in keep:
        start = ends[i - 1] if i else 0
        _length, pos = read_uvarint(data, start)
        delta, after = read_varint(data, pos + 1)
        parts.append((header.base_timestamp + delta, data[pos:pos + 1], data[after:ends[i]]))
    base = horizon if horizon is not None else parts[0][0]
    if header.attributes & TIMESTAMP_TYPE_MASK:
        newest = header.max_timestamp
    else:
        newest = max(ts for ts, _, _ in parts)
    records = bytearray()
    for ts, record_attributes, rest in parts:
        body = bytearray(record_attributes)
        write_varint(body, ts - base)
        body += rest
        write_varint(records, len(body))
        records += body
    compression = header.compression
    payload = bytes(records) if compression == NONE else compress(compression, bytes(records))
    attributes = header.attributes & ~DELETE_HORIZON_MASK
    if horizon is not None:
        attributes |= DELETE_HORIZON_MASK
    out = bytearray(HEADER_SIZE + len(payload))
    _HEADER.pack_into(out, 0, header.base_offset, HEADER_SIZE - 12 + len(payload),
                      header.partition_leader_epoch, header.magic, 0, attributes,
                      header.last_offset_delta, base, newest, header.producer_id,
                      header.producer_epoch, header.base_sequence, len(keep))
    out[HEADER_SIZE:] = payload
    seal_crc(out)
    return bytes(out)


# ---- the threads ---------------------------------------------------------------------------
class LogCleaner:
    """``threads`` cleaner threads over the logs ``logs()`` returns.

    Threading: each thread picks the due log with the highest dirty ratio that no other
    thread is cleaning (``_busy``, under ``_lock``), cleans it without the log's lock
    (it reads closed segments only, through their reader guard) and swaps the result in
    under the log's lock (:meth:`Log.replace_segments`). ``clean_now`` runs one pass on
    the caller's thread (tests and the benchmark).

    Stopping: :meth:`stop` (any thread) sets ``_stopping`` first, and every clean polls
    it before each batch it reads or rewrites and once more before each swap; a clean
    that sees it raises CleanAborted after deleting its ``cleaning/`` files, never having
    begun a swap (see :func:`clean`), and its thread ends. So ``stop`` returns within
    about one batch's work, not a whole pass (a broker must stop within ~1 s of SIGTERM),
    and the log is as it was, except for groups of segments that pass had already
    swapped in whole; the checkpoint stays, so the next start cleans from the same place.
    A stopped cleaner stays stopped: ``clean_once``/``clean_now`` then do nothing.
    """

    def __init__(self, logs: Callable[[], list[Log]], threads: int = 1, backoff_ms: int = 15_000,
                 dedupe_buffer_bytes: int = 128 * 1024 * 1024,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self._logs = logs
        self.backoff_ms = backoff_ms
        self.max_entries = max(1, dedupe_buffer_bytes // ENTRY_BYTES)
        self._clock = clock
        self._lock = threading.Lock()
        self._busy: set[Path] = set()
        self._stopping = threading.Event()
        self.cleans = 0
        self._threads = [_CleanerThread(self, i) for i in range(threads)]

    def start(self) -> LogCleaner:
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # first: a clean in progress gives up at its next batch
        for t in self._threads:
            t.request_stop()
        for t in self._threads:
            t.stop()

    def _pick(self) -> tuple[Log, Cleanable] | None:
        now = self._clock.wall_ms()
        best: tuple[Log, Cleanable] | None = None
        with self._lock:
            for lg in self._logs():
                if lg.closed or lg.dir in self._busy:
                    continue
                try:
                    c = cleanable(lg, now)
                except Exception:  # a log closing under us: next time
                    continue
                if c is not None and c.due and (best is None or c.dirty_ratio > best[1].dirty_ratio):
                    best = (lg, c)
            if best is not None:
                self._busy.add(best[0].dir)
        return best

    def clean_once(self) -> CleanStats | None:
        """Clean the dirtiest due log, if any."""
        if self._stopping.is_set():
            return None
        picked = self._pick()
        if picked is None:
            return None
        lg, range_ = picked
        try:
            try:
                stats = clean(lg, self._clock.wall_ms(), self.max_entries, range_,
                              self._stopping.is_set, self._clock)
            except CleanAborted as e:
                log.info("cleaning %s abandoned: the cleaner is stopping (%s)", lg.name, e)
                return None
            self.cleans += 1
            if stats is not None:
                log.info("cleaned %s: offsets %d-%d, %d segment(s), %d -> %d bytes, %d of %d "
                         "records kept, %.2f s", lg.name, stats.first_dirty, stats.end,
                         stats.segments, stats.bytes_read, stats.bytes_written,
                         stats.records_kept, stats.records_read, stats.seconds)
            return stats
        finally:
            with self._lock:
                self._busy.discard(lg.dir)

    def clean_now(self) -> list[CleanStats]:
        """Clean every due log once (on this thread)."""
        done = []
        while (stats := self.clean_once()) is not None:
            done.append(stats)
        return done


class _CleanerThread(ShutdownableThread):
    def __init__(self, cleaner: LogCleaner, i: int) -> None:
        super().__init__(f"log-cleaner-{i}")
        self.cleaner = cleaner

    def run_once(self) -> None:
        try:
            stats = self.cleaner.clean_once()
        except Exception:  # one log's failure must not stop the cleaner
            log.exception("log cleaner: a clean failed; retrying after the backoff")
            stats = None
        if stats is None:
            self.stopping.wait(self.cleaner.backoff_ms / 1000)
