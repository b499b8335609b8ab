"""Allocates producer ids that are never reused: across restarts and across brokers.

An id is ``broker_id << 40 | n``: each broker owns its own range (``n`` below 2**40), so two
brokers of a cluster never hand out the same id — they would otherwise, and the partition
leader's de-duplication would then drop one producer's first batches as the other's
duplicates, losing acknowledged records. (Kafka lets the controller hand out blocks;
per-broker ranges give the same uniqueness without a round trip.) Ids stay below 2**60;
the sink's deterministic exactly-once identities live above that.

``n`` is reserved in blocks: the file holds the first ``n`` of the next unreserved block and
is rewritten (atomically) only once per block, so InitProducerId rarely touches the disk.

:meth:`ProducerIdManager.bump` answers an idempotent producer that already has an id and
asks for a new epoch (InitProducerId v3+, KIP-360): the same id with the next epoch, or a
fresh id at epoch 0 once the epoch is at the int16 maximum.
Thread-safe.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

RANGE_BITS = 40
MAX_BROKER_ID = (1 << 20) - 1
MAX_EPOCH = 0x7FFF  # producer epochs are int16


class ProducerIdManager:
    BLOCK = 1000

    def __init__(self, path: Path, broker_id: int = 0) -> None:
        if not 0 <= broker_id <= MAX_BROKER_ID:
            raise ValueError(f"broker id {broker_id} outside [0, {MAX_BROKER_ID}]: producer ids"
                             " are allocated in per-broker ranges")
        self.path = path
        self.base = broker_id << RANGE_BITS
        self._lock = threading.Lock()
        start = int(path.read_text()) if path.exists() else 0
        self._next = start
        self._block_end = start

    def next_id(self) -> int:
        with self._lock:
            if self._next >= self._block_end:
                self._block_end = self._next + self.BLOCK
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text(str(self._block_end))
                os.replace(tmp, self.path)
            if self._next >= 1 << RANGE_BITS:
                raise RuntimeError("this broker's producer id range is exhausted")
            pid = self.base | self._next
            self._next += 1
            return pid

    def bump(self, producer_id: int, epoch: int) -> tuple[int, int]:
        """``(producer_id, epoch + 1)``; a new id at epoch 0 if ``epoch + 1`` overflows int16."""
        if epoch >= MAX_EPOCH:
            return self.next_id(), 0
        return producer_id, epoch + 1
