"""The sparse offset index of one log segment (Kafka's ``OffsetIndex``).

On disk, ``<base_offset:020d>.index`` next to the segment's ``.log`` file is a flat array
of 8-byte big-endian entries, sorted, with no header::

    offset  size  field
    0       4     relative_offset   batch base offset - segment base offset (int32)
    4       4     position          byte position of that batch in the .log file (int32)

Worked example: segment ``00000000000000000100.log`` whose batch with base offset 105
starts at byte 4120 (0x1018) has the entry ``00 00 00 05 00 00 10 18``. ``lookup(107)``
then answers 4120 (the largest entry at or below 107) and the segment walks batch headers
forward from there to the batch that holds offset 107.

The index is *sparse*: the segment adds an entry only when at least
``index.interval.bytes`` of batches were appended since the previous one, so a lookup
lands at most about that many bytes before the wanted batch. There is no entry for the
segment's first batch: a lookup below every entry answers position 0.

Unlike Kafka, entries key on the batch's *base* offset (Kafka uses the last offset);
either works, and the base offset makes the looked-up batch often the wanted one.

This module has no time index. ListOffsets by timestamp is served by scanning batch
headers (each holds ``max_timestamp``) segment by segment; see ``Log.offset_for_timestamp``.
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_right
from pathlib import Path

from ..protocol.errors import PyqError

ENTRY_SIZE = 8
INDEX_SUFFIX = ".index"
_ENTRY = struct.Struct(">ii")
_LOW32 = 0xFFFFFFFF
_FLUSH_EVERY = 512  # entries buffered in memory before they are written to the file


def _position_of(key: int) -> int:
    return key & _LOW32


class CorruptIndex(PyqError):
    """An index file fails its sanity check; the owner rebuilds it from the log."""


class OffsetIndex:
    """The in-memory, file-backed sparse index ``relative offset -> file position``.

    Invariants: entries are strictly increasing in both relative offset and position;
    every relative offset fits an int32 and is >= 0. Entries live in memory as one
    ``array('q')`` of ``relative_offset << 32 | position`` (so one bisect finds an entry)
    and are written to the file in groups and on :meth:`flush`/:meth:`close`; entries not
    yet written are rebuilt by log recovery after a crash.

    Threading: :meth:`append`, :meth:`truncate_to`, :meth:`reset`, :meth:`flush`,
    :meth:`close` and :meth:`delete` are called by one writer at a time (the owning log
    holds its lock). :meth:`lookup` may run concurrently from any thread without a lock:
    appends extend the array in place (atomic under the GIL) and truncation swaps in a
    new array, so a reader always bisects one consistent array.
    """

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.was_missing = not path.exists()  # created by this open
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._closed = False
        size = os.fstat(self._fd).st_size
        data = os.pread(self._fd, size, 0) if size else b""
        whole = len(data) - len(data) % ENTRY_SIZE
        entries = array("q")
        for rel, pos in _ENTRY.iter_unpack(data[:whole]):
            entries.append((rel << 32) | (pos & _LOW32))
        self._entries = entries
        self._written = len(entries)  # entries already in the file
        if whole != size:  # a torn trailing entry: drop it
            os.ftruncate(self._fd, whole)

    # ----------------------------------------------------------------- queries

    def __len__(self) -> int:
        return len(self._entries)

    def entry(self, i: int) -> tuple[int, int]:
        """The i-th entry as ``(absolute offset, position)``."""
        key = self._entries[i]
        return self.base_offset + (key >> 32), key & _LOW32

    @property
    def last_entry(self) -> tuple[int, int]:
        """The last entry, or ``(base_offset, 0)`` when the index is empty."""
        entries = self._entries
        if not entries:
            return self.base_offset, 0
        key = entries[-1]
        return self.base_offset + (key >> 32), key & _LOW32

    def lookup(self, offset: int) -> int:
        """Position of the largest entry whose offset is <= ``offset`` (0 if none)."""
        return self.lookup_entry(offset)[1]

    def lookup_entry(self, offset: int) -> tuple[int, int]:
        """The largest entry ``(offset, position)`` at or below ``offset``, else (base, 0)."""
        rel = offset - self.base_offset
        if rel < 0:
            return self.base_offset, 0
        entries = self._entries  # one consistent array even if truncated concurrently
        if rel > 0x7FFFFFFF:
            rel = 0x7FFFFFFF
        i = bisect_right(entries, (rel << 32) | _LOW32)
        if i == 0:
            return self.base_offset, 0
        key = entries[i - 1]
        return self.base_offset + (key >> 32), key & _LOW32

    def lookup_position(self, position: int) -> int:
        """The largest entry position that is <= ``position`` (0 if none)."""
        entries = self._entries
        i = bisect_right(entries, position, key=_position_of)
        return entries[i - 1] & _LOW32 if i else 0

    def sanity_check(self, log_size: int) -> None:
        """Raise CorruptIndex unless entries increase strictly and point inside the log."""
        prev_rel = prev_pos = -1
        for key in self._entries:
            rel, pos = key >> 32, key & _LOW32
            if rel <= prev_rel or pos <= prev_pos or pos >= log_size:
                raise CorruptIndex(
                    f"{self.path}: entry (relative offset {rel}, position {pos}) is out of "
                    f"order or beyond the log size {log_size}"
                )
            prev_rel, prev_pos = rel, pos

    def usable_for(self, log_size: int) -> bool:
        """Whether this index, as read from disk, may serve a ``.log`` of ``log_size``
        bytes: not when the file was missing while the log has data (an index is written
        for every segment), nor when :meth:`sanity_check` fails. Else the log is recovered,
        which rebuilds the index."""
        if self.was_missing and log_size > 0:
            return False
        try:
            self.sanity_check(log_size)
        except CorruptIndex:
            return False
        return True

    # ----------------------------------------------------------------- updates

    def append(self, offset: int, position: int) -> None:
        """Add an entry; offsets and positions must increase strictly."""
        rel = offset - self.base_offset
        if not 0 <= rel <= 0x7FFFFFFF or not 0 <= position <= 0x7FFFFFFF:
            raise ValueError(f"index entry ({offset}, {position}) does not fit segment {self.base_offset}")
        entries = self._entries
        if entries:
            last = entries[-1]
            if rel <= last >> 32 or position <= last & _LOW32:
                raise ValueError(
                    f"index entry ({offset}, {position}) is not after the last entry "
                    f"({self.base_offset + (last >> 32)}, {last & _LOW32})"
                )
        entries.append((rel << 32) | position)
        if len(entries) - self._written >= _FLUSH_EVERY:
            self._write_pending()

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        rel = offset - self.base_offset
        entries = self._entries
        keep = 0 if rel <= 0 else bisect_right(entries, ((rel - 1) << 32) | _LOW32)
        if keep == len(entries):
            return
        self._entries = entries[:keep]  # copy: concurrent lookups keep the old array
        if keep < self._written:
            os.ftruncate(self._fd, keep * ENTRY_SIZE)
            self._written = keep

    def reset(self) -> None:
        """Remove every entry (before a rebuild by recovery)."""
        self._entries = array("q")
        os.ftruncate(self._fd, 0)
        self._written = 0

    def _write_pending(self) -> None:
        entries = self._entries
        n = len(entries)
        if n == self._written:
            return
        out = bytearray((n - self._written) * ENTRY_SIZE)
        for j, key in enumerate(entries[self._written : n]):
            _ENTRY.pack_into(out, j * ENTRY_SIZE, key >> 32, key & _LOW32)
        written = 0
        start = self._written * ENTRY_SIZE
        while written < len(out):
            written += os.pwrite(self._fd, out[written:], start + written)
        self._written = n

    def flush(self) -> None:
        """Write buffered entries and fsync the index file."""
        if self._closed:
            return
        self._write_pending()
        os.fsync(self._fd)

    def close(self) -> None:
        """Write buffered entries and close the file (idempotent)."""
        if self._closed:
            return
        try:
            self._write_pending()
        finally:
            self._closed = True
            os.close(self._fd)

    def close_without_writing(self) -> None:
        """Close the file, dropping buffered entries (the file is about to be deleted)."""
        if not self._closed:
            self._closed = True
            os.close(self._fd)

    def delete(self) -> None:
        """Close and remove the index file."""
        self.close_without_writing()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
