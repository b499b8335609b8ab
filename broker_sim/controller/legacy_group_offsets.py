"""Committed offsets as pyq kept them before the group coordinator: read-only.

Older pyq versions stored consumer groups' committed offsets in the controller, as an
append-only journal of JSON lines (``<controller dir>/group-offsets.jsonl``)::

    {"g": "my-group", "o": [["topic", 0, 42, -1, "meta"], ...]}

Offsets now live in ``__consumer_offsets``. The journal is only read: when a partition
of that topic is loaded for the first time (its log still empty), its new coordinator asks
the controller for the journal's groups and offsets that hash to it and writes them as
offset records, so existing data directories keep their consumers' positions. A torn last
line (from a crash) is ignored. Immutable once loaded, so safe from any thread.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ..coordinator.group.group import CommittedOffset

log = logging.getLogger(__name__)


class LegacyGroupOffsets:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        if path.exists():
            with open(path, encoding="utf-8") as f:
                for line in f:
                    try:
                        entry = json.loads(line)
                    except json.JSONDecodeError:
                        log.warning("ignoring a torn line in %s", path)
                        continue
                    parts = self._offsets.setdefault(entry["g"], {})
                    for topic, partition, offset, epoch, meta in entry["o"]:
                        parts[(topic, partition)] = CommittedOffset(offset, epoch, meta)
            log.info("%s: committed offsets of %d group(s) to hand over to __consumer_offsets",
                     path, len(self._offsets))

    def groups(self) -> list[str]:
        return sorted(self._offsets)

    def fetch(self, group: str) -> dict[tuple[str, int], CommittedOffset]:
        return dict(self._offsets.get(group, {}))
