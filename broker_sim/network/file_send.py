"""Sending a zero-copy response's file range to a socket: the one ``os.sendfile`` of the broker.

The codec (``broker_sim.protocol``) only *describes* bytes kept outside the process
(:class:`~broker_sim.protocol.primitives.ExternalBytes`: its ``file_region()``, whether it
``changed``, ``release``); moving them is the transport's job, so it is done here, where
the processor writes responses.
"""

from __future__ import annotations

import os

from ..protocol.primitives import ExternalBytes, ExternalBytesChanged


def send_file_region(out_fd: int, part: ExternalBytes, offset: int, count: int) -> int:
    """``os.sendfile`` at most ``count`` bytes of ``part``, from ``offset`` into it, to
    ``out_fd``; returns how many went (BlockingIOError: none, the socket is full).

    Raises ExternalBytesChanged instead, without sending a byte, once ``part`` has no file
    region (released, or bytes that only :meth:`~ExternalBytes.read` can give) or its
    bytes ``changed`` since they were found: bytes in a socket cannot be taken back.
    """
    region = part.file_region()
    if region is None or part.changed:
        raise ExternalBytesChanged(f"{part!r} changed or was released before it was sent")
    fd, position, size = region
    return os.sendfile(out_fd, fd, position + offset, min(count, size - offset))
