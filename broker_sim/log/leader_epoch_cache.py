"""Which leader epoch wrote which offsets: the start offset of every epoch in this log.

Kept so that a follower of a new leader can find where its log diverges (KIP-101): it asks
the leader where its own latest epoch ends, and truncates there. Entries are
``(epoch, start_offset)`` with both strictly increasing. Worked example::

    appends by leader epoch 0 at offsets 0..99, epoch 2 at 100..149, epoch 5 from 150
    entries = [(0, 0), (2, 100), (5, 150)], log end offset 170

    end_offset_for(5) -> (5, 170)   the latest epoch ends at the log end offset
    end_offset_for(2) -> (2, 150)   epoch 2 ends where the next known epoch starts
    end_offset_for(3) -> (2, 150)   unknown epoch: the floor epoch, ended by the next one
    end_offset_for(9) -> (-1, -1)   newer than anything here

Persisted as a small JSON file, rewritten atomically on every change (changes are rare:
once per leadership change). A new epoch (:meth:`assign`, on the first append of a
leader epoch) is written without an fsync: it happens inside a produce or a follower's
append, and an fsync there costs the first write of every new partition and every new
leader a millisecond or more per replica (Kafka moved this fsync off the append path for
the same reason, KAFKA-15046). :meth:`flush` makes it durable; the log calls it when it
flushes, so what a flush made durable includes the epochs of those offsets. Truncations
(rare, and about to be followed by new appends) still fsync at once. Owned by its
:class:`~broker_sim.log.log.Log`, which calls it under the log's lock.
"""

from __future__ import annotations

import bisect
import json
import os
from pathlib import Path

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1
FILE_NAME = "leader-epoch-checkpoint.json"


class LeaderEpochCache:
    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / FILE_NAME
        self._epochs: list[int] = []
        self._starts: list[int] = []
        self._unsynced = False  # written by assign() since the last fsync
        try:
            for epoch, start in json.loads(self.path.read_text()):
                self._epochs.append(int(epoch))
                self._starts.append(int(start))
        except (OSError, ValueError, TypeError):
            pass  # none yet, or damaged: rebuilt from later appends

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts, strict=True))

    @property
    def latest_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (ignored if not newer)."""
        if epoch < 0 or (self._epochs and epoch <= self._epochs[-1]):
            return
        # A new epoch cannot start before an older one: drop entries it overwrites.
        while self._starts and self._starts[-1] >= start_offset:
            self._epochs.pop()
            self._starts.pop()
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        self._save(sync=False)

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch whose leader wrote ``offset``: the latest one starting at or before it
        (UNDEFINED_EPOCH if none does)."""
        i = bisect.bisect_right(self._starts, offset)
        return self._epochs[i - 1] if i else UNDEFINED_EPOCH

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        if epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if epoch == self._epochs[-1]:
            return epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if higher == 0:
            return epoch, self._starts[0]  # older than anything known: ends where we start
        return self._epochs[higher - 1], self._starts[higher]

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs starting at or after ``end_offset`` (the log was truncated there)."""
        changed = False
        while self._starts and self._starts[-1] >= end_offset:
            self._epochs.pop()
            self._starts.pop()
            changed = True
        if changed:
            self._save()

    def clear(self) -> None:
        self._epochs.clear()
        self._starts.clear()
        self._save()

    def flush(self) -> None:
        """fsync what :meth:`assign` wrote since the last fsync (nothing if nothing)."""
        if self._unsynced:
            self._save()

    def _save(self, sync: bool = True) -> None:
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(self.entries, f)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._unsynced = not sync
