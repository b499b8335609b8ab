"""Size-prefixed framing, sans-I/O: feed received bytes, take out complete frames.

Every Kafka request and response is ``int32 size`` followed by ``size`` bytes. The
decoder checks the size the moment its four bytes arrive, so a peer that claims a 2 GiB
frame is refused before a byte of its body is buffered or allocated.

>>> d = FrameDecoder(max_frame_size=100)
>>> d.feed(b"\\x00\\x00\\x00\\x02ab\\x00\\x00")
>>> d.next_frame()
bytearray(b'ab')
>>> d.next_frame() is None      # half a size prefix buffered
True
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from .errors import MalformedFrame

_SIZE = struct.Struct(">i")


class FrameTooLarge(MalformedFrame):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the limit of {limit} bytes")
        self.size = size
        self.limit = limit


class FrameDecoder:
    """Buffers bytes of one connection and yields whole frames (without their prefix).

    Frames come out as ``bytearray``\\ s owned by the caller (writable: a produce request's
    record batches get their offsets patched in place). A frame of at least
    ``DIRECT_FRAME_BYTES`` whose size is known gets a buffer of its own, and
    :meth:`direct_buffer` lets the caller receive the rest of it straight into that buffer: one copy from
    the kernel, none in Python.

    ``allocate(n)`` makes such a buffer (default ``bytearray``, which zero-fills it first;
    :func:`uninitialized_buffer` does not: a 4 MiB fetch response then costs one pass over
    its memory, by the kernel, instead of two).

    Owned by one thread (the connection's network processor or the client's I/O thread).
    """

    #: Frames at least this large are received into their own buffer.
    DIRECT_FRAME_BYTES = 64 * 1024

    def __init__(self, max_frame_size: int, allocate: Callable[[int], Any] = bytearray) -> None:
        self.max_frame_size = max_frame_size
        self._allocate = allocate
        self._buf = bytearray()
        self._pos = 0
        self._need: int | None = None
        self._frame: Any = None  # a large frame being filled in place (from ``allocate``)
        self._filled = 0

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        frame = self._frame
        if frame is not None:
            k = min(len(data), len(frame) - self._filled)
            frame[self._filled:self._filled + k] = data[:k]
            self._filled += k
            if k == len(data):
                return
            data = data[k:]
        self._buf += data

    def direct_buffer(self) -> memoryview | None:
        """Where the next received bytes go when a large frame is being filled in place
        (receive into it with ``recv_into``, then call :meth:`advance`); None otherwise:
        then :meth:`feed` what was received. Never reaches past the frame's end."""
        frame = self._frame
        return None if frame is None else memoryview(frame)[self._filled:]

    def advance(self, n: int) -> None:
        """``n`` bytes were received into :meth:`direct_buffer`."""
        self._filled += n

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._pos + self._filled

    def next_frame(self) -> Any:
        """The next whole frame (a ``bytearray``, or a large one from ``allocate``), or None."""
        frame = self._frame
        if frame is not None:
            if self._filled < len(frame):
                return None
            self._frame = None
            self._filled = 0
            self._need = None
            return frame
        buf, pos = self._buf, self._pos
        if self._need is None:
            if len(buf) - pos < 4:
                return None
            size = _SIZE.unpack_from(buf, pos)[0]
            if size < 0:
                raise MalformedFrame(f"negative frame size {size}")
            if size > self.max_frame_size:
                raise FrameTooLarge(size, self.max_frame_size)
            self._need = size
            pos += 4
            self._pos = pos
        need = self._need
        have = len(buf) - pos
        if have < need:
            if need >= self.DIRECT_FRAME_BYTES:  # receive the rest straight into its buffer
                frame = self._allocate(need)
                frame[:have] = memoryview(buf)[pos:]
                self._frame, self._filled = frame, have
                del buf[:]
                self._pos = 0
            else:
                self._compact()
            return None
        frame = buf[pos : pos + need]
        self._pos = pos + need
        self._need = None
        if self._pos > 65536 and self._pos * 2 > len(buf):
            self._compact()
        return frame

    def _compact(self) -> None:
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0


def uninitialized_buffer(size: int) -> memoryview:
    """A writable buffer of ``size`` bytes that is not zero-filled (``numpy.empty``, which
    reuses freed heap memory as it is), for a frame the kernel is about to fill
    (``recv_into``) before anything reads it. numpy is imported on the first call only:
    a broker that never sees a large frame does not pay for the import."""
    import numpy as np

    return np.empty(size, np.uint8).data


#: Bytes an encoder reserves at the start of its buffer for :func:`close_frame`.
SIZE_PREFIX = bytes(_SIZE.size)


def close_frame(out: bytearray) -> bytearray:
    """Fill in the size prefix reserved at the start of ``out`` (``out`` begins with
    :data:`SIZE_PREFIX`); encoding in place spares a copy of every large request and
    response (a produce request's records, a fetch response's)."""
    _SIZE.pack_into(out, 0, len(out) - _SIZE.size)
    return out
