"""Whole record batches left in their segment file, for zero-copy fetch responses.

A :class:`FileRecords` is a byte range ``[position, position + size)`` of one segment's
``.log`` file that holds whole batches (found by the same rules as a copying read: the
batch holding the fetch offset first, at least one batch, ``max_bytes``, the high
watermark). Instead of reading the bytes into memory, the fetch response carries the
range, and the network processor moves the bytes from the file to the socket with
``os.sendfile`` (the kernel copies page cache to socket buffer; Python never sees them).

It *pins* the segment: it holds the segment's reader guard from the read until
:meth:`release`, so the descriptor stays open (and its number is never reused) even if
retention deletes the segment, the log cleaner swaps it out (``Log.replace_segments``)
or a roll closes it meanwhile: an unlinked or replaced file's bytes stay readable
through an open descriptor. The one mutation that changes bytes in place is truncation
(a follower cutting a divergent tail, which may then append different batches at the same
positions); it bumps the segment's generation, and so does a truncation that removes the
segment whole (its records' offsets will be reused). A truncation never changes a file
in place (``LogSegment.truncate_to`` writes a new one), so the bytes a range was read
from stay as they were, including those already handed to a socket; and
the sender (``broker_sim.network.file_send``) refuses to send more once :attr:`changed`
(the generation moved): the sender gets
ExternalBytesChanged and closes the connection, whose client has then received a prefix
of the response as it was read, never a byte written after (Kafka only notices a file
that shrank under ``FileRecords.writeTo``).

Ownership: whoever holds a FileRecords releases it exactly once (the processor when
the bytes are out or the connection closed; the handler if the response is never
sent). ``release`` is idempotent, and a FileRecords collected without one releases
itself, so a lost one cannot keep a deleted file open for ever.
"""

from __future__ import annotations

import os
import threading
from typing import Protocol

from ..protocol.primitives import ExternalBytes


class PinnedSegment(Protocol):
    """What a range needs of its segment (:class:`~.segment.LogSegment`): its name in
    messages, the generation that a truncation or a swap bumps, and the release of the
    reader guard the range holds."""

    @property
    def base_offset(self) -> int: ...
    @property
    def generation(self) -> int: ...
    def _release(self) -> None: ...


class SegmentChanged(Exception):
    """The segment was truncated while a read was in flight; the read must be retried
    (raised by the segment's reads and by :meth:`FileRecords.read`)."""


class FileRecords(ExternalBytes):
    """``size`` bytes of whole batches at ``position`` of a segment file (see the module)."""

    __slots__ = ("segment", "fd", "position", "size", "generation", "_released", "_lock")

    def __init__(self, segment: PinnedSegment, fd: int, position: int, size: int,
                 generation: int) -> None:
        """The caller has taken the segment's reader guard; this object now owns it."""
        self.segment = segment
        self.fd = fd
        self.position = position
        self.size = size
        self.generation = generation
        self._released = False
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.size

    def __bool__(self) -> bool:
        return self.size > 0

    def __repr__(self) -> str:
        return (f"FileRecords(segment={self.segment.base_offset}, position={self.position}, "
                f"size={self.size}{', released' if self._released else ''})")

    @property
    def changed(self) -> bool:
        """True if the segment was truncated (or is being truncated) since the read: the
        file's bytes in this range may no longer be the ones that were found."""
        return self.segment.generation != self.generation

    def read(self) -> bytes:
        """The bytes themselves (the copying path: TLS connections, tests)."""
        if self._released:
            raise ValueError(f"{self!r} was released")
        data = os.pread(self.fd, self.size, self.position)
        if len(data) != self.size or self.changed:
            raise SegmentChanged(f"segment {self.segment.base_offset} changed under a read")
        return data

    def file_region(self) -> tuple[int, int, int] | None:
        return None if self._released else (self.fd, self.position, self.size)

    def release(self) -> None:
        """Give the segment's reader guard back (idempotent)."""
        with self._lock:
            if self._released:
                return
            self._released = True
        self.segment._release()

    def __del__(self) -> None:
        if not getattr(self, "_released", True):
            self.release()
