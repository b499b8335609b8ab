"""``buffer.memory``: the bytes a producer may hold in unsent and unacknowledged batches.

Each new batch reserves ``max(batch.size, record size)`` bytes here before it is created
and gives them back when the batch is acknowledged, fails or expires. When the pool is
exhausted, ``send()`` blocks in :meth:`BufferPool.allocate` for up to ``max.block.ms``
and then raises :class:`~connector.client.errors.BufferExhaustedError`. While anyone is
blocked, :attr:`BufferPool.queued` is non-zero and the accumulator treats every batch
as ready to send (sending is the only way memory comes back).

Waiters are served first come, first served: a large request at the head is not
starved by small ones slipping past it.

>>> pool = BufferPool(100)
>>> pool.allocate(60, max_block_ms=0)
>>> pool.available
40
>>> pool.allocate(60, max_block_ms=0)
Traceback (most recent call last):
...
connector.client.errors.BufferExhaustedError: Failed to allocate 60 bytes within max.block.ms=0 ms (buffer.memory 100 bytes, 40 available)

Only accounting: the batch builders own their bytearrays; Python's allocator recycles the
memory. Threading: any thread allocates, the sender thread deallocates; one condition
variable guards the counters. This is the one place in the producer that blocks, so it
is the one place that reads the clock (an injectable :class:`~broker_sim.common.Clock`).
"""

from __future__ import annotations

import threading
from collections import deque

from broker_sim.common import SYSTEM_CLOCK, Clock

from .errors import BufferExhaustedError, RecordTooLargeError


class BufferPool:
    def __init__(self, total_memory: int, clock: Clock = SYSTEM_CLOCK) -> None:
        self.total_memory = total_memory
        self.clock = clock
        self._available = total_memory
        self._cond = threading.Condition()
        self._waiters: deque[object] = deque()

    @property
    def available(self) -> int:
        return self._available

    @property
    def queued(self) -> int:
        """Threads blocked waiting for memory."""
        return len(self._waiters)

    def allocate(self, size: int, max_block_ms: float) -> None:
        if size > self.total_memory:
            raise RecordTooLargeError(f"a batch of {size} bytes is larger than buffer.memory "
                                      f"({self.total_memory} bytes)")
        with self._cond:
            if not self._waiters and self._available >= size:
                self._available -= size
                return
            ticket = object()
            self._waiters.append(ticket)
            deadline = self.clock.monotonic_ms() + max_block_ms
            try:
                while not (self._waiters[0] is ticket and self._available >= size):
                    remaining = deadline - self.clock.monotonic_ms()
                    if remaining <= 0:
                        raise BufferExhaustedError(
                            f"Failed to allocate {size} bytes within max.block.ms="
                            f"{max_block_ms:g} ms (buffer.memory {self.total_memory} bytes, "
                            f"{self._available} available)")
                    self._cond.wait(remaining / 1000.0)
                self._available -= size
            finally:
                self._waiters.remove(ticket)
                self._cond.notify_all()  # the next waiter may now be at the head

    def deallocate(self, size: int) -> None:
        with self._cond:
            self._available += size
            if self._available > self.total_memory:
                raise RuntimeError(f"buffer pool over-released: {self._available} > "
                                   f"{self.total_memory}")
            self._cond.notify_all()
