"""The files of a log directory: how segment files are named and found, and making a
directory's changes (creations, renames, deletions) durable."""

from __future__ import annotations

import os
from pathlib import Path

LOG_SUFFIX = ".log"


def segment_name(base_offset: int) -> str:
    """The file stem of a segment: its base offset as 20 zero-padded digits."""
    return f"{base_offset:020d}"


def segment_bases(dir: Path) -> list[int]:
    """Base offsets of the segment files in ``dir``, in order."""
    return sorted(int(p.stem) for p in dir.glob("*" + LOG_SUFFIX)
                  if len(p.stem) == 20 and p.stem.isdigit())


def fsync_dir(dir: Path) -> None:
    """fsync ``dir`` itself: the names created, renamed or removed in it are on disk."""
    fd = os.open(dir, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
