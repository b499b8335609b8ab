"""Opening a partition's log: its segments from disk, recovered, and its offsets checkpoint.

What :class:`~broker_sim.log.log.Log` finds when it opens a directory, and how it trusts it
(see the log module for the layout):

* leftovers of interrupted work are removed first: ``*.tmp`` and ``*.deleted`` files, and
  an index whose ``.log`` is gone (a deletion interrupted between the two files);
* every segment from the one holding the recovery point to the end is *recovered* (every
  batch re-read and CRC-checked, the index rebuilt, a torn or corrupt tail cut), and so is
  the active segment always; earlier segments only have their index sanity-checked, and
  are recovered if it fails;
* data lost inside the log (a segment cut short that is not the last) makes the segments
  after it untrustworthy: they are deleted, as Kafka does;
* segments wholly below the log start offset (a deletion interrupted by a crash) go.

``log-state.json`` holds the log start offset, the high watermark and the recovery point;
it is rewritten atomically (temporary file, fsync, rename, fsync of the directory). A
missing or damaged one means: recover everything, start from the first segment.
"""

from __future__ import annotations

import json
import os
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

from .config import LogConfig
from .log_dir import LOG_SUFFIX, fsync_dir, segment_bases
from .offset_index import INDEX_SUFFIX
from .segment import LogSegment
from .segment_swap import recover_swap

STATE_FILE = "log-state.json"
STATE_VERSION = 1


def read_log_state(dir: Path) -> dict[str, int]:
    state = {"log_start_offset": 0, "high_watermark": 0, "recovery_point": 0}
    try:
        raw = json.loads((dir / STATE_FILE).read_text())
        for key in state:
            value = raw[key]
            if isinstance(value, int) and value >= 0:
                state[key] = value
    except (OSError, ValueError, KeyError, TypeError):
        pass  # missing or damaged: recover everything, start from the first segment
    return state


def write_log_state(dir: Path, log_start_offset: int, high_watermark: int, recovery_point: int) -> None:
    data = json.dumps({"version": STATE_VERSION, "log_start_offset": log_start_offset,
                       "high_watermark": high_watermark, "recovery_point": recovery_point},
                      sort_keys=True).encode()
    tmp = dir / (STATE_FILE + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, dir / STATE_FILE)
    fsync_dir(dir)


@dataclass
class LoadedLog:
    """The segments of an opened log (at least one) and its offsets, consistent with them."""

    segments: list[LogSegment]
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    recovery_point: int


def _remove_leftovers(dir: Path) -> None:
    for p in dir.iterdir():
        name = p.name
        if name.endswith(".tmp") or name.endswith(".deleted"):
            p.unlink(missing_ok=True)
        elif name.endswith(INDEX_SUFFIX) and not (dir / (p.stem + LOG_SUFFIX)).exists():
            p.unlink(missing_ok=True)  # a deletion interrupted between the two files


def load_log(dir: Path, config: LogConfig, now_ms: int) -> LoadedLog:
    """Open (creating it if empty) and recover the log in ``dir``; see the module docstring."""
    state = read_log_state(dir)
    recover_swap(dir)
    _remove_leftovers(dir)
    bases = segment_bases(dir)
    interval = config.index_interval_bytes
    segments: list[LogSegment] = []
    try:
        for base in bases:
            segments.append(LogSegment(dir, base, interval, now_ms))
        if not segments:
            segments.append(LogSegment(dir, max(0, state["log_start_offset"]), interval, now_ms))
        recovery_point = state["recovery_point"]
        first_dirty = max(0, bisect_right(bases, recovery_point) - 1)
        i = 0
        while i < len(segments):
            seg = segments[i]
            last = i == len(segments) - 1
            if (i >= first_dirty or last or not seg.load_index()) and seg.recover() and not last:
                # Data inside the log was lost: what follows cannot be trusted to continue it.
                for later in segments[i + 1 :]:
                    later.delete()
                del segments[i + 1 :]
            i += 1
    except BaseException:
        for seg in segments:
            seg.close()
        raise
    leo = segments[-1].next_offset
    log_start = min(max(state["log_start_offset"], segments[0].base_offset), leo)
    while len(segments) > 1 and segments[1].base_offset <= log_start:
        segments.pop(0).delete()
    return LoadedLog(segments, log_start, leo, min(max(state["high_watermark"], log_start), leo),
                     min(recovery_point, leo))
