"""Durable committed offsets of consumer groups (what OffsetCommit writes, OffsetFetch reads).

Format: an append-only journal of JSON lines, one per commit request, fsynced before
the commit is acknowledged, so an acknowledged commit survives a crash::

    {"g": "my-group", "o": [["topic", 0, 42, -1, "meta"], ...]}

On open the journal is replayed (a torn last line from a crash is ignored) and, when it
has grown well past the live entries, rewritten compactly (temporary file, fsync, rename).
Thread-safe: one lock serialises commits, reads see a consistent map.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""


class GroupOffsetStore:
    COMPACT_FACTOR = 4

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        lines = self._replay()
        if lines > self.COMPACT_FACTOR * max(1, self._live()) + 100:
            self._rewrite()
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the store

    def _replay(self) -> int:
        if not self.path.exists():
            return 0
        n = 0
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                n += 1
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    log.warning("ignoring a torn line in %s", self.path)
                    continue
                self._apply(entry["g"], entry["o"])
        return n

    def _live(self) -> int:
        return sum(len(p) for p in self._offsets.values())

    def _apply(self, group: str, items: list[list]) -> None:
        parts = self._offsets.setdefault(group, {})
        for topic, partition, offset, epoch, meta in items:
            parts[(topic, partition)] = CommittedOffset(offset, epoch, meta)

    def _rewrite(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            for group, parts in self._offsets.items():
                items = [[t, p, c.offset, c.leader_epoch, c.metadata] for (t, p), c in parts.items()]
                f.write(json.dumps({"g": group, "o": items}) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def commit(self, group: str, items: list[tuple[str, int, int, int, str]]) -> None:
        line = json.dumps({"g": group, "o": [list(i) for i in items]}) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()
            os.fsync(self._file.fileno())
            self._apply(group, [list(i) for i in items])

    def fetch(self, group: str, partitions: list[tuple[str, int]] | None = None
              ) -> dict[tuple[str, int], CommittedOffset]:
        with self._lock:
            parts = self._offsets.get(group, {})
            if partitions is None:
                return dict(parts)
            return {tp: parts[tp] for tp in partitions if tp in parts}

    def delete_topic(self, topic: str) -> None:
        with self._lock:
            for parts in self._offsets.values():
                for tp in [tp for tp in parts if tp[0] == topic]:
                    del parts[tp]

    def close(self) -> None:
        with self._lock:
            self._file.close()
