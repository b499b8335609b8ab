"""buffer.memory accounting: allocation, exhaustion after max.block.ms, FIFO waiters."""

from __future__ import annotations

import threading

import pytest

from connector.client.buffer_pool import BufferPool
from connector.client.errors import BufferExhaustedError, RecordTooLargeError
from tests.wire import wait_for


def test_allocate_and_deallocate():
    pool = BufferPool(1000)
    pool.allocate(600, 0)
    assert pool.available == 400
    pool.deallocate(600)
    assert pool.available == 1000


def test_exhausted_pool_raises_after_max_block_ms_naming_the_numbers():
    pool = BufferPool(1000)
    pool.allocate(700, 0)
    with pytest.raises(BufferExhaustedError, match=r"500 bytes within max.block.ms=0 ms.*300 available"):
        pool.allocate(500, 0)
    assert pool.available == 300 and pool.queued == 0


def test_a_request_larger_than_the_pool_fails_at_once():
    with pytest.raises(RecordTooLargeError):
        BufferPool(100).allocate(101, 60_000)


def test_a_blocked_allocation_proceeds_when_memory_comes_back():
    pool = BufferPool(1000)
    pool.allocate(1000, 0)
    got = threading.Event()
    worker = threading.Thread(target=lambda: (pool.allocate(400, 10_000), got.set()))
    worker.start()
    wait_for(lambda: pool.queued == 1, timeout=5, interval=0.001, what="the allocation queued")  # the accumulator now treats every batch as ready
    assert not got.is_set()
    pool.deallocate(500)
    worker.join(5)
    assert got.is_set() and pool.available == 100 and pool.queued == 0


def test_waiters_are_served_in_arrival_order():
    pool = BufferPool(1000)
    pool.allocate(1000, 0)
    order = []

    def take(name: str, size: int) -> None:
        pool.allocate(size, 10_000)
        order.append(name)

    big = threading.Thread(target=take, args=("big", 800))
    big.start()
    wait_for(lambda: pool.queued == 1, timeout=5, interval=0.001, what="the allocation queued")
    small = threading.Thread(target=take, args=("small", 100))
    small.start()
    wait_for(lambda: pool.queued == 2, timeout=5, interval=0.001, what="the allocation queued")
    pool.deallocate(300)  # enough for "small" only: it must not overtake "big"
    pool.deallocate(700)
    big.join(5)
    small.join(5)
    assert order == ["big", "small"]
