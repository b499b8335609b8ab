"""One segment of a partition log: a ``.log`` file of record batches plus its offset index.

On disk a segment is two files in the partition directory, named by the segment's base
offset (the first offset it may hold) zero-padded to 20 digits::

    00000000000000000100.log     record batches back to back, exactly as produced
                                 (RecordBatch v2, see protocol/records/batch_header.py)
    00000000000000000100.index   sparse offset index (see offset_index.py)

Worked example: a segment with base offset 100 holding a 3-record batch and then a
1-record batch, 90 and 70 bytes long::

    position 0    base_offset=100 batch_length=78 ... last_offset_delta=2   (offsets 100-102)
    position 90   base_offset=103 batch_length=58 ... last_offset_delta=0   (offset 103)
    size 160, next_offset 104

``read(start_offset=102, max_bytes=1000)`` returns bytes [0, 160): whole batches only, the
first one being the batch that holds offset 102 (a consumer skips records below the offset
it asked for, as with Kafka). A segment never rewrites the bytes of a batch.

Lock-free reads stay correct only through a protocol between every read and every mutation
(the reader guard, the truncation generation, sizes published after the bytes), kept in
one class so it is checked in one place. What does not take part in it lives beside: the
walks over batches in :mod:`.batch_scanner` (offset lookups, the timestamp scans, where an
append's index entries go, the validation of a segment's prefix after a crash), whether an
index read from disk can be trusted in :mod:`.offset_index`, the crash-safe copy of a
file's prefix in :mod:`.log_dir`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

from ..protocol.records.batch_header import HEADER_SIZE, BatchHeader
from .batch_scanner import (
    CHUNK,
    appended_batches,
    batch_extents,
    batch_headers,
    file_reader,
    first_batch_at_timestamp,
    first_batch_timestamp,
    largest_timestamp,
    valid_prefix,
    whole_batches,
)
from .file_records import FileRecords, SegmentChanged
from .log_dir import LOG_SUFFIX, replace_with_prefix, segment_name
from .offset_index import INDEX_SUFFIX, OffsetIndex


class SegmentGone(Exception):
    """The segment was closed or deleted (by retention or truncation) under a reader.

    Internal: :class:`~broker_sim.log.log.Log` answers it by taking a fresh snapshot of the
    segment list (and raising OffsetOutOfRange if the wanted offset is now gone).
    """


class LogSegment:
    """A ``.log`` file plus its :class:`OffsetIndex`, kept open for the segment's lifetime.

    Invariants (for the bytes in ``[0, size)``): the file holds whole batches back to back
    with strictly increasing offsets, all >= ``base_offset`` and at most ``base_offset +
    2**31 - 1`` (relative offsets fit the index's int32); ``next_offset`` is the last
    batch's last offset + 1 (``base_offset`` when empty); every index entry points at the
    start of a batch inside ``[0, size)``. Bytes beyond ``size`` (a torn write) are never
    read and are cut by :meth:`recover` or :meth:`truncate_to`.

    Threading: mutations (:meth:`append`, :meth:`recover`, :meth:`truncate_to`,
    :meth:`flush`, :meth:`close`, :meth:`delete`) are serialized by the owner (the log's
    lock). Reads (:meth:`read`, :meth:`read_batches`, timestamp scans) may run from any
    thread concurrently with them, using ``os.pread`` on the shared descriptor:

    * an append writes the bytes first and publishes the new ``size`` last, and a reader
      bounds itself by the ``size`` it saw, so it never sees a half-written batch;
    * a reader holds a reference count; :meth:`close`/:meth:`delete` unlink at once but
      close the descriptor only when the last reader is done (so a descriptor number is
      never reused under a reader); a read that starts after them raises SegmentGone;
    * truncation bumps a generation counter (odd while in progress); a read that overlaps
      one raises SegmentChanged instead of returning bytes from before and after;
    * a zero-copy read (:meth:`read_region`) hands its reader guard to the
      :class:`~.file_records.FileRecords` it returns, which keeps it until the bytes are
      sent (``os.sendfile``) and it is released: the descriptor outlives a deletion or a
      close meanwhile, and the generation it carries tells a truncation since the read
      (also one that removes the segment whole, ``delete(truncated=True)``: its offsets
      will be reused by other records);
    * a file that ``sendfile`` has read from is never changed in place again, because the
      bytes are not copied when ``sendfile`` returns: queued socket buffers (on loopback,
      even the peer's receive queue) keep referring to the page cache, and a truncation
      zeroes the rest of the (possibly large) folio that holds its new end, which later
      appends then fill. So :meth:`truncate_to` copies the kept bytes into a new file and
      renames it over the old one; the old descriptor stays open for the readers that hold
      it (``_retired``, closed when the last reader is done).
    """

    def __init__(
        self,
        dir: Path,
        base_offset: int,
        index_interval_bytes: int = 4096,
        created_ms: int = 0,
    ) -> None:
        self.dir = dir
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.created_ms = created_ms
        stem = segment_name(base_offset)
        self.log_path = dir / (stem + LOG_SUFFIX)
        self.index_path = dir / (stem + INDEX_SUFFIX)
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self.index = OffsetIndex(self.index_path, base_offset)
        except BaseException:
            os.close(self._fd)
            raise
        self._size = os.fstat(self._fd).st_size
        # Lazily computed for segments opened without recovery (None = unknown).
        self._next_offset: int | None = base_offset if self._size == 0 else None
        self._max_timestamp: int | None = -1 if self._size == 0 else None
        self._max_timestamp_position = -1
        self._first_batch_timestamp: int | None = -1 if self._size == 0 else None
        self._bytes_since_index = 0
        self._gen = 0  # odd while a truncation/recovery rewrites the file
        # Guards the reader count and closing. Re-entrant: a FileRecords collected without
        # a release releases itself from its finalizer, which the garbage collector may run
        # on a thread that is inside one of these sections (allocating an exception).
        self._lock = threading.RLock()
        self._readers = 0
        self._retired: list[int] = []  # descriptors of replaced files, closed with no reader left
        self._closing = False
        self.deleted = False

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self._size}, path={str(self.log_path)!r})"

    # ------------------------------------------------------------ reader guard

    def _acquire(self) -> None:
        with self._lock:
            if self._closing:
                raise SegmentGone(f"segment {self.base_offset} is closed or deleted")
            self._readers += 1

    def _release(self) -> None:
        with self._lock:
            self._readers -= 1
            if self._readers == 0:
                self._close_retired()
                if self._closing and self._fd >= 0:
                    os.close(self._fd)
                    self._fd = -1

    def _close_retired(self) -> None:
        while self._retired:
            os.close(self._retired.pop())

    # ----------------------------------------------------------------- queries

    @property
    def size(self) -> int:
        """Bytes of whole batches in the file."""
        return self._size

    @property
    def is_empty(self) -> bool:
        return self._size == 0

    @property
    def next_offset(self) -> int:
        """The offset after the last batch (``base_offset`` when empty)."""
        nxt = self._next_offset
        if nxt is None:
            self._acquire()
            try:
                nxt = self._compute_next_offset()
            finally:
                self._release()
        return nxt

    @property
    def rolling_timestamp(self) -> int:
        """The max timestamp of the first batch, -1 if the segment is empty (Kafka's
        ``rollingBasedTimestamp``): what rolling by ``segment.ms`` counts from."""
        ts = self._first_batch_timestamp
        if ts is None:
            self._acquire()
            try:
                ts = self._first_batch_timestamp = first_batch_timestamp(file_reader(self._fd))
            finally:
                self._release()
        return ts

    @property
    def max_timestamp(self) -> int:
        """The largest batch ``max_timestamp`` in the segment, -1 if none (Kafka's largestTimestamp)."""
        ts = self._max_timestamp
        if ts is None:
            self._acquire()
            try:
                ts = self._scan_max_timestamp()
            finally:
                self._release()
        return ts

    @property
    def max_timestamp_position(self) -> int:
        """File position of the first batch carrying :attr:`max_timestamp` (-1 if none)."""
        if self.max_timestamp < 0:
            return -1
        return self._max_timestamp_position

    @property
    def last_modified(self) -> int:
        """Modification time of the .log file in epoch milliseconds."""
        self._acquire()
        try:
            return os.fstat(self._fd).st_mtime_ns // 1_000_000
        finally:
            self._release()

    def _compute_next_offset(self) -> int:
        last_pos = self.index.last_entry[1]
        nxt = self.base_offset
        for _pos, _base, last, _size in self._walk(last_pos, self._size):
            nxt = last + 1
        if last_pos > 0 and nxt == self.base_offset:  # index pointed at garbage
            for _pos, _base, last, _size in self._walk(0, self._size):
                nxt = last + 1
        self._next_offset = nxt
        return nxt

    def _scan_max_timestamp(self) -> int:
        best, self._max_timestamp_position = largest_timestamp(file_reader(self._fd), self._size)
        self._max_timestamp = best
        return best

    def _walk(self, start: int, limit: int) -> Iterator[tuple[int, int, int, int]]:
        """``(position, base_offset, last_offset, size)`` of whole batches in [start, limit)."""
        # Walks usually start at an index entry and cover about one index interval.
        chunk = min(CHUNK, self.index_interval_bytes + 2 * HEADER_SIZE)
        return batch_extents(file_reader(self._fd), start, limit, chunk)

    def headers(self) -> list[tuple[int, BatchHeader]]:
        """``(position, header)`` of every batch (no record bytes read, no CRC check)."""
        self._acquire()
        try:
            return list(batch_headers(file_reader(self._fd), 0, self._size))
        finally:
            self._release()

    def _find(self, offset: int, limit: int) -> tuple[int, int, int, int] | None:
        """``(position, base_offset, last_offset, size)`` of the first batch whose last offset
        is >= ``offset`` (Kafka's translateOffset), or None if there is none before ``limit``.
        The caller holds the reader guard."""
        start = self.index.lookup(offset)
        if start >= limit:  # an entry for bytes this reader must not see yet
            start = 0
        for found in self._walk(start, limit):
            if found[2] >= offset:
                return found
        return None

    def read_batches(
        self,
        start_offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        max_position: int | None = None,
        min_one_batch: bool = True,
    ) -> tuple[bytes, int]:
        """Whole batches from the one holding ``start_offset``, and that batch's base offset.

        Returns ``(records, first_base_offset)``; ``first_base_offset`` is -1 when the
        segment has no batch whose last offset is >= ``start_offset`` (the caller moves on
        to the next segment). ``records`` may still be empty when the first batch does not
        fit ``max_bytes`` (and not ``min_one_batch``) or ends at/after ``max_offset``.
        Raises SegmentGone or SegmentChanged when the read races a deletion/truncation.
        """
        self._acquire()
        try:
            gen = self._gen
            if gen & 1:
                raise SegmentChanged(f"segment {self.base_offset} is being truncated")
            limit = self._size if max_position is None else min(max_position, self._size)
            found = self._find(start_offset, limit)
            if found is None:
                result: tuple[bytes, int] = (b"", -1)
            else:
                pos, base, last, first_size = found
                if max_offset is not None and last >= max_offset:
                    result = (b"", base)
                else:
                    data = self._read_from(
                        pos, first_size, limit, max_bytes, max_offset, min_one_batch,
                        limit_is_boundary=max_position is None,
                    )
                    result = (data, base)
            if self._gen != gen:
                raise SegmentChanged(f"segment {self.base_offset} was truncated during a read")
            return result
        finally:
            self._release()

    def read_region(
        self,
        start_offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> tuple[FileRecords | None, int]:
        """:meth:`read_batches` without reading: the same whole batches as a pinned
        :class:`~.file_records.FileRecords` range of this file (None when empty), for
        ``os.sendfile``. The caller owns the returned range and must release it."""
        self._acquire()
        region: FileRecords | None = None
        try:
            gen = self._gen
            if gen & 1:
                raise SegmentChanged(f"segment {self.base_offset} is being truncated")
            limit = self._size
            found = self._find(start_offset, limit)
            base = -1
            if found is not None:
                pos, base, last, first_size = found
                if max_offset is None or last < max_offset:
                    end = self._region_end(pos, first_size, limit, max_bytes, max_offset,
                                           min_one_batch)
                    if end > pos:
                        region = FileRecords(self, self._fd, pos, end - pos, gen)
            if self._gen != gen:
                raise SegmentChanged(f"segment {self.base_offset} was truncated during a read")
            return region, base
        finally:
            if region is None:
                self._release()
            elif self._gen != gen:
                region.release()

    def _region_end(self, pos: int, first_size: int, limit: int, max_bytes: int,
                    max_offset: int | None, min_one_batch: bool) -> int:
        """The end of the whole batches :meth:`_read_from` would return from ``pos`` (the
        same rules; ``limit`` is a batch boundary), found from batch headers only."""
        if max_offset is not None and (self._next_offset is None or max_offset < self._next_offset):
            stop = self._find(max_offset, limit)
            if stop is not None:
                limit = stop[0]
        if first_size > max_bytes:
            return pos + first_size if min_one_batch else pos
        end = pos + max_bytes
        if end >= limit:
            return limit
        # Walk batch headers from the last batch boundary the index knows below ``end``.
        last = max(self.index.lookup_position(end), pos)
        for at, _base, _last, size in self._walk(last, end):
            last = at + size
        return last

    @property
    def generation(self) -> int:
        """Bumped when a truncation starts and again when it ends (odd while it runs)."""
        return self._gen

    def _read_from(
        self,
        pos: int,
        first_size: int,
        limit: int,
        max_bytes: int,
        max_offset: int | None,
        min_one_batch: bool,
        limit_is_boundary: bool,
    ) -> bytes:
        """Whole batches from batch position ``pos``: at most ``max_bytes`` (but at least the
        first batch with ``min_one_batch``), ending before ``limit`` and ``max_offset``.

        Finds the end without walking every batch: the batch boundary for ``max_offset``
        comes from the index (plus a short header walk), and when ``max_bytes`` ends inside
        the range only the bytes after the last index entry before it are walked.
        """
        if max_offset is not None and (self._next_offset is None or max_offset < self._next_offset):
            stop = self._find(max_offset, limit)
            if stop is not None:
                limit, limit_is_boundary = stop[0], True
        if first_size > max_bytes:
            want = first_size if min_one_batch else 0
            return os.pread(self._fd, want, pos) if want else b""
        end = pos + max_bytes
        if end >= limit and limit_is_boundary:
            data = os.pread(self._fd, limit - pos, pos)
            if len(data) != limit - pos:
                raise SegmentChanged(f"segment {self.base_offset} shrank during a read")
            return data
        end = min(end, limit)
        data = os.pread(self._fd, end - pos, pos)
        # Walk in memory from the last batch boundary the index knows below ``end``.
        start = max(self.index.lookup_position(end), pos) - pos
        return whole_batches(data, start)

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_position: int | None = None,
        min_one_batch: bool = True,
        *,
        max_offset: int | None = None,
    ) -> bytes:
        """Whole batches starting with the one that holds ``start_offset``, up to ``max_bytes``.

        With ``min_one_batch`` the first batch is returned even when larger than
        ``max_bytes``. ``max_position`` bounds the file bytes considered; ``max_offset``
        excludes batches whose last offset is >= it. Empty if nothing qualifies.
        """
        return self.read_batches(
            start_offset, max_bytes, max_offset=max_offset, max_position=max_position,
            min_one_batch=min_one_batch,
        )[0]

    def find_timestamp(
        self, timestamp: int, max_offset: int | None = None, min_offset: int = 0
    ) -> tuple[int, BatchHeader] | None:
        """``(position, header)`` of the first batch with ``max_timestamp >= timestamp``, skipping
        batches that end below ``min_offset`` and stopping at the first one that ends at or
        after ``max_offset``: a scan of batch headers (there is no time index)."""
        self._acquire()
        try:
            if self._max_timestamp is not None and self._max_timestamp < timestamp:
                return None
            start = self.index.lookup(min_offset) if min_offset > self.base_offset else 0
            if start >= self._size:
                start = 0
            return first_batch_at_timestamp(file_reader(self._fd), start, self._size,
                                            timestamp, min_offset, max_offset)
        finally:
            self._release()

    def read_at(self, position: int, size: int) -> bytes:
        """Raw bytes ``[position, position + size)`` bounded by the segment size."""
        self._acquire()
        try:
            end = min(position + size, self._size)
            return os.pread(self._fd, end - position, position) if end > position else b""
        finally:
            self._release()

    # --------------------------------------------------------------- mutations

    def append(self, largest_offset: int, buf: bytes | bytearray | memoryview) -> None:
        """Append whole batches (offsets already assigned, all > the current last offset).

        Adds an index entry before a batch when more than ``index_interval_bytes`` were
        appended since the previous entry. ``largest_offset`` is the last offset in ``buf``.
        """
        n = len(buf)
        if n == 0:
            return
        max_ts = self._max_timestamp
        if max_ts is None:
            max_ts = self._scan_max_timestamp()
        start = self._size
        added = appended_batches(buf, start, self.index_interval_bytes, self._bytes_since_index,
                                 max_ts, self._max_timestamp_position)
        if added.first_batch_timestamp is not None:
            self._first_batch_timestamp = added.first_batch_timestamp
        try:
            written = os.pwrite(self._fd, buf, start)
            if written < n:
                view = memoryview(buf)
                while written < n:
                    written += os.pwrite(self._fd, view[written:], start + written)
        except OSError:
            try:  # do not leave a partial batch behind the published size
                os.ftruncate(self._fd, start)
            except OSError:
                pass
            raise
        for offset, position in added.index_entries:
            self.index.append(offset, position)
        self._bytes_since_index = added.bytes_since_index
        self._max_timestamp = added.max_timestamp
        self._max_timestamp_position = added.max_timestamp_position
        self._next_offset = largest_offset + 1
        self._size = start + n  # publish last: readers bound themselves by size

    def recover(self) -> int:
        """Validate every batch from the start, rebuild the index, cut a torn/corrupt tail.

        Checks each batch's length, magic and CRC-32C (``validate_batch``) and that its
        offsets increase and fit the segment. Returns the number of bytes truncated.
        """
        self._gen += 1
        try:
            file_size = os.fstat(self._fd).st_size
            self.index.reset()
            good = valid_prefix(file_reader(self._fd), file_size, self.base_offset,
                                self.index_interval_bytes)
            for offset, position in good.index_entries:
                self.index.append(offset, position)
            truncated = file_size - good.end  # everything after the last good batch
            if truncated:
                os.ftruncate(self._fd, good.end)
            self._size = good.end
            self._next_offset = good.next_offset
            self._max_timestamp = good.max_timestamp
            self._max_timestamp_position = good.max_timestamp_position
            self._bytes_since_index = good.bytes_since_index
            return truncated
        finally:
            self._gen += 1

    def load_index(self) -> bool:
        """Check the index loaded from disk (:meth:`OffsetIndex.usable_for`); False if
        :meth:`recover` must rebuild it."""
        return self.index.usable_for(self._size)

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= ``offset``; return bytes removed.

        Truncation happens at batch boundaries, so a batch holding ``offset`` goes as a
        whole and ``next_offset`` may end up below ``offset``.
        """
        found = self._find(offset, self._size)
        if found is None:
            return 0
        pos, base, _last, _size = found
        removed = self._size - pos
        self._gen += 1
        try:
            self._size = pos  # readers stop seeing the tail first
            self._replace_file(pos)
            self.index.truncate_to(base)
            self._next_offset = None
            self._max_timestamp = None
            self._first_batch_timestamp = None if pos > 0 else -1
            self._compute_next_offset()
            self._scan_max_timestamp()
            self._bytes_since_index = pos - self.index.last_entry[1]
        finally:
            self._gen += 1
        return removed

    def _replace_file(self, size: int) -> None:
        """Make the ``.log`` file a new one holding the first ``size`` bytes (crash-safe:
        written and synced as ``*.log.tmp``, which a log load deletes, then renamed over),
        leaving the old file's bytes as they are for sends in flight (see the class)."""
        fd = replace_with_prefix(self._fd, self.log_path, size)
        with self._lock:
            old, self._fd = self._fd, fd
            self._retired.append(old)
            if self._readers == 0:
                self._close_retired()

    def flush(self) -> None:
        """fsync the .log file and write + fsync the index."""
        if self._closing:
            return
        os.fsync(self._fd)
        self.index.flush()

    def _close_fd(self) -> None:
        with self._lock:
            self._closing = True
            if self._readers == 0 and self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
                self._close_retired()

    def close(self) -> None:
        """Write the index and close both files (the .log once in-flight reads finish)."""
        if self._closing:
            return
        try:
            self.index.close()
        finally:
            self._close_fd()

    def delete(self, truncated: bool = False) -> None:
        """Unlink both files now; the descriptor closes when the last reader finishes.

        ``truncated``: the log is cutting these records off (their offsets will be reused),
        so ranges still pinned here count as changed (see the class)."""
        if truncated:
            self._gen += 2
        self.deleted = True
        self.index.delete()
        self._close_fd()
        try:
            os.unlink(self.log_path)
        except FileNotFoundError:
            pass
