"""The in-memory view a Raft core keeps of its log: a snapshot and the entries after it."""

from __future__ import annotations

from typing import Literal

from .messages import VOTERS, Entry, Snapshot

#: :meth:`RaftLog.divergence`'s answer when only the snapshot can bring a fetcher up to date.
SNAPSHOT_NEEDED: Literal["snapshot"] = "snapshot"


class RaftLog:
    """Entries ``[start_offset, end_offset)`` in offset order, preceded by ``snapshot`` (which
    covers everything below ``start_offset``) or by nothing (``start_offset == 0``).

    Invariants: ``entries[i].offset == start_offset + i``; epochs never decrease along the log;
    the snapshot's end offset is ``start_offset``. Owned by one :class:`RaftCore`; not shared.
    """

    def __init__(self, initial_voters: frozenset[int], snapshot: Snapshot | None = None,
                 entries: tuple[Entry, ...] = ()) -> None:
        self.initial_voters = initial_voters
        self.snapshot = snapshot
        self.entries: list[Entry] = [e for e in entries
                                     if snapshot is None or e.offset >= snapshot.end_offset]
        if self.entries and self.entries[0].offset != self.start_offset:
            raise ValueError(f"log entries start at {self.entries[0].offset}, expected "
                             f"{self.start_offset}")

    @property
    def start_offset(self) -> int:
        return self.snapshot.end_offset if self.snapshot else 0

    @property
    def end_offset(self) -> int:
        return self.start_offset + len(self.entries)

    @property
    def last_epoch(self) -> int:
        return self.epoch_at(self.end_offset - 1)

    def epoch_at(self, offset: int) -> int:
        """The epoch of the entry at ``offset``; 0 below the log, -1 if unknown (snapshotted
        away or beyond the end)."""
        if offset < 0:
            return 0
        if self.snapshot and offset == self.snapshot.end_offset - 1:
            return self.snapshot.epoch
        if self.start_offset <= offset < self.end_offset:
            return self.entries[offset - self.start_offset].epoch
        return -1

    def entry(self, offset: int) -> Entry:
        return self.entries[offset - self.start_offset]

    def read(self, offset: int, limit: int) -> tuple[Entry, ...]:
        i = offset - self.start_offset
        return tuple(self.entries[i:i + limit])

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """``(e, end)``: ``e`` the largest epoch ≤ ``epoch`` in this log (snapshot included)
        and ``end`` the offset just past its last entry; ``(0, 0)`` when there is none.
        ``end`` is below ``start_offset`` only for ``(0, 0)`` with a snapshot."""
        for entry in reversed(self.entries):
            if entry.epoch <= epoch:
                return entry.epoch, entry.offset + 1
        if self.snapshot and self.snapshot.epoch <= epoch:
            return self.snapshot.epoch, self.snapshot.end_offset
        return 0, 0

    def divergence(self, fetch_offset: int, last_fetched_epoch: int
                   ) -> tuple[int, int] | Literal["snapshot"] | None:
        """Where a fetcher whose log ends at ``fetch_offset`` with an entry of
        ``last_fetched_epoch`` stands against this log (the leader's): None if its log
        matches this one up to there (log matching); the ``(epoch, end offset)`` it must
        truncate to otherwise; :data:`SNAPSHOT_NEEDED` if it is below the log start or its
        epoch predates the snapshot, so it must take the snapshot whole."""
        if fetch_offset < self.start_offset:
            return SNAPSHOT_NEEDED
        if fetch_offset <= self.end_offset and self.epoch_at(fetch_offset - 1) == last_fetched_epoch:
            return None
        epoch, end = self.end_offset_for_epoch(last_fetched_epoch)
        if self.snapshot is not None and end < self.start_offset:
            return SNAPSHOT_NEEDED
        return epoch, end

    def append(self, entry: Entry) -> None:
        if entry.offset != self.end_offset:
            raise ValueError(f"append at {entry.offset}, log ends at {self.end_offset}")
        self.entries.append(entry)

    def truncate(self, offset: int) -> None:
        """Drop entries at or above ``offset`` (never below the snapshot)."""
        del self.entries[max(0, offset - self.start_offset):]

    def voters(self) -> tuple[frozenset[int], int]:
        """The voter set in force (the last VOTERS entry appended, else the snapshot's, else
        the initial one) and the offset of the entry that set it (-1 for none)."""
        for entry in reversed(self.entries):
            if entry.kind == VOTERS:
                return entry.value, entry.offset
        if self.snapshot:
            return self.snapshot.voters, -1
        return self.initial_voters, -1

    def voters_at(self, end_offset: int) -> frozenset[int]:
        """The voter set in force after the entries below ``end_offset``."""
        for entry in reversed(self.entries[:max(0, end_offset - self.start_offset)]):
            if entry.kind == VOTERS:
                return frozenset(entry.value)
        return self.snapshot.voters if self.snapshot else self.initial_voters

    def install(self, snapshot: Snapshot) -> bool:
        """Make ``snapshot`` the log's start. Entries after it are kept when the log holds
        the snapshot's last entry with the same epoch (returns True), else all dropped."""
        keep = self.epoch_at(snapshot.end_offset - 1) == snapshot.epoch and \
            snapshot.end_offset <= self.end_offset
        if keep:
            del self.entries[:snapshot.end_offset - self.start_offset]
        else:
            self.entries = []
        self.snapshot = snapshot
        return keep
