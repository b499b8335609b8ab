"""Kafka's default partitioner: murmur2 of the key, sticky partitions for null keys.

**Keyed records** go to ``toPositive(murmur2(key)) % num_partitions``, bit for bit what
the Java client (``Utils.murmur2``, ``Utils.toPositive``) and kafka-python compute, so a
key lands in the same partition whichever client wrote it. ``toPositive`` is
``x & 0x7fffffff`` (not ``abs``), and the modulus is over *all* partitions of the topic,
available or not, so the mapping never changes while the partition count stays fixed.

>>> murmur2(b"21") - 2**32          # Java's signed int, from Kafka's own UtilsTest
-973932308
>>> DefaultPartitioner(batch_size=16384).partition("t", b"21", 5, [0, 1, 2, 3, 4])
0

**Null keys** stick to one partition until ``batch.size`` bytes have gone to it, then
move to another available one at random (KIP-480's sticky partitioner with KIP-794's
byte-based switch): records fill whole batches instead of being sprayed one per batch
across every partition, which is what makes linger and batching pay off.

Worked example with batch.size 100 and 60-byte records: records 1 and 2 go to partition
p (120 bytes >= 100 after the second), record 3 goes to a new partition q != p, and so on.

Threading: ``partition`` is called by every thread that sends. The sticky state is a
dict of small lists mutated without a lock: a race can at worst switch a topic's sticky
partition one record early or late, never send to an invalid partition.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """32-bit MurmurHash2 as the Java client computes it (seed 0x9747b28c), unsigned."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length & ~3
    words: Any = memoryview(data)[:n4].cast("I") if n4 else ()
    if n4 and memoryview(b"\x01\x00\x00\x00").cast("I")[0] != 1:  # big-endian host
        words = [int.from_bytes(data[i:i + 4], "little") for i in range(0, n4, 4)]
    for k in words:
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    extra = length & 3
    if extra == 3:
        h ^= data[n4 + 2] << 16
    if extra >= 2:
        h ^= data[n4 + 1] << 8
    if extra >= 1:
        h ^= data[n4]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h


def to_positive(h: int) -> int:
    return h & 0x7FFFFFFF


class DefaultPartitioner:
    """Partition choice for records sent without an explicit partition (module docstring)."""

    def __init__(self, batch_size: int, rng: random.Random | None = None) -> None:
        self.batch_size = max(1, batch_size)
        self._rng = rng or random.Random()
        self._sticky: dict[str, list[int]] = {}  # topic -> [partition, bytes sent to it]

    def partition(self, topic: str, key: bytes | None, num_partitions: int,
                  available: Sequence[int], record_size: int = 0) -> int:
        if key is not None:
            return to_positive(murmur2(key)) % num_partitions
        state = self._sticky.get(topic)
        if state is None or state[0] >= num_partitions or state[1] >= self.batch_size:
            state = [self._next_partition(state[0] if state else -1, num_partitions, available), 0]
            self._sticky[topic] = state
        state[1] += record_size
        return state[0]

    def _next_partition(self, previous: int, num_partitions: int, available: Sequence[int]) -> int:
        pool = [p for p in available if p != previous] or list(available) or \
            [p for p in range(num_partitions) if p != previous] or [0]
        return pool[self._rng.randrange(len(pool))]
