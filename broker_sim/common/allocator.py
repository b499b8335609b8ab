"""Keep freed request buffers in the broker's heap (glibc ``malloc`` settings).

Every large request (a produce of ``batch.size`` 1 MiB and more) is received into a buffer
of its own (:meth:`~broker_sim.protocol.framing.FrameDecoder.direct_buffer`) that lives
until its append is done. glibc serves such sizes with ``mmap`` until its dynamic
threshold has grown, and hands freed heap above its trim threshold back to the kernel;
either way the next buffer is memory the kernel must fault in and zero page by page while
``recv`` fills it. Measured on a 1 MiB-request
produce stream, 1-68 page faults per MB received and 14 % of the broker's ``perf``
samples in those faults; with the thresholds below, about one fault per MB.

Fixed thresholds (32 MiB to ``mmap``, 128 MiB kept free before trimming) keep those
buffers in the heap, reused while still mapped: the process holds up to 128 MiB it freed,
the cost of a buffer pool without one. Only a broker's own process (``python -m
broker_sim``) calls :func:`keep_freed_buffers`; an embedded broker leaves its host's
allocator alone. Other C libraries than glibc are left as they are.
"""

from __future__ import annotations

import ctypes
import logging
import platform

log = logging.getLogger(__name__)

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 128 << 20


def keep_freed_buffers() -> bool:
    """Set glibc's thresholds (see the module docstring); False where that is not glibc."""
    if platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(None)  # the process's own symbols, glibc's among them (no lookup)
    ok = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    if not ok:
        log.warning("glibc refused the malloc thresholds; large buffers are allocated fresh")
    return ok
