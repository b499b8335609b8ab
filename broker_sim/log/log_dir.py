"""The files of a log directory: how segment files are named and found, making a
directory's changes (creations, renames, deletions) durable, and replacing a file by a
copy of its first bytes without a moment where a crash leaves neither."""

from __future__ import annotations

import errno
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


def _copy_range(src: int, dst: int, offset: int, count: int) -> int:
    """Copy up to ``count`` bytes at ``offset`` of ``src`` to the same offset of ``dst``;
    how many were copied (in the kernel where it can: ``copy_file_range``)."""
    if hasattr(os, "copy_file_range"):
        try:
            return os.copy_file_range(src, dst, count, offset, offset)
        except OSError as e:
            if e.errno not in (errno.ENOSYS, errno.EXDEV, errno.EINVAL, errno.EOPNOTSUPP):
                raise
    return os.pwrite(dst, os.pread(src, min(count, 1 << 20), offset), offset)


def replace_with_prefix(src: int, path: Path, size: int) -> int:
    """Make ``path`` a new file holding the first ``size`` bytes of ``src`` (the open file
    at ``path``) and return the new file's descriptor. Crash-safe: written and synced as
    ``*.tmp`` (which a log load deletes), then renamed over ``path``, the directory synced.
    ``src`` is left as it was, for readers still holding it."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        copied = 0
        while copied < size:
            n = _copy_range(src, fd, copied, size - copied)
            if n == 0:
                raise OSError(f"{path} ended at {copied} bytes, not {size}")
            copied += n
        os.fsync(fd)
        os.replace(tmp, path)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
    return fd
