"""Allocates producer ids that are never reused, also across restarts.

Ids are reserved in blocks: the file holds the first id of the next unreserved block and
is rewritten (atomically) only once per block, so InitProducerId rarely touches the disk.
Thread-safe.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path


class ProducerIdManager:
    BLOCK = 1000

    def __init__(self, path: Path) -> None:
        self.path = path
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
            pid = self._next
            self._next += 1
            return pid
