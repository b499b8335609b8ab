"""The immutable snapshot of a log's segment list that lock-free readers work on."""

from __future__ import annotations

from dataclasses import dataclass

from .segment import LogSegment


@dataclass(frozen=True)
class LogView:
    """The segments of a log, their base offsets (for bisecting) and the log start offset.

    A writer never changes a view: it publishes a new one (one attribute assignment) after a
    roll, a deletion or a truncation. Readers take the current view once per attempt.
    """

    bases: tuple[int, ...]
    segments: tuple[LogSegment, ...]
    log_start_offset: int

    @classmethod
    def of(cls, segments: tuple[LogSegment, ...] | list[LogSegment], log_start_offset: int) -> LogView:
        return cls(tuple(s.base_offset for s in segments), tuple(segments), log_start_offset)
