"""Swapping a cleaned segment in for the segments it replaces, crash-safe (the log
cleaner's step 4, see :mod:`.cleaner`).

The cleaned segment is written in the partition's ``cleaning/`` directory with a ``range``
file naming the offsets it replaces; renaming that directory to ``swap/`` is the commit
point (:func:`commit_swap`). Finishing (:func:`finish_swap`) deletes the replaced
segments, moves the cleaned files into place and removes ``swap/``, and may run again
after a crash at any step. Opening a log (:func:`recover_swap`, from
:mod:`.log_loader`) deletes a leftover ``cleaning/`` (the clean is simply redone) and
finishes a leftover ``swap/``, so a ``kill -9`` at any moment loses nothing and leaves no
half segment: every offset is either in the old segments or in the cleaned one.

Threading: a swap runs under the log's lock (``Log.replace_segments``) or while the log is
being opened, so nothing else changes the directory meanwhile.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from .log_dir import LOG_SUFFIX, fsync_dir, segment_bases, segment_name
from .offset_index import INDEX_SUFFIX

log = logging.getLogger(__name__)

CLEANING, SWAP, RANGE = "cleaning", "swap", "range"


def commit_swap(dir: Path, base: int, replaced_end: int) -> None:
    """Commit point, then finish: ``cleaning/`` -> ``swap/`` -> into place."""
    os.replace(dir / CLEANING, dir / SWAP)
    fsync_dir(dir)
    finish_swap(dir, base, replaced_end)


def finish_swap(dir: Path, base: int, replaced_end: int) -> None:
    """Replace the segments in ``[base, replaced_end)`` by the one in ``swap/`` (idempotent:
    safe to run again after a crash at any step)."""
    swap = dir / SWAP
    stem = segment_name(base)
    new_log = swap / (stem + LOG_SUFFIX)
    for old in segment_bases(dir):
        if base <= old < replaced_end and (old != base or new_log.exists()):
            (dir / (segment_name(old) + INDEX_SUFFIX)).unlink(missing_ok=True)
            (dir / (segment_name(old) + LOG_SUFFIX)).unlink(missing_ok=True)
    if (swap / (stem + INDEX_SUFFIX)).exists():
        os.replace(swap / (stem + INDEX_SUFFIX), dir / (stem + INDEX_SUFFIX))
    if new_log.exists():
        os.replace(new_log, dir / (stem + LOG_SUFFIX))
    fsync_dir(dir)
    shutil.rmtree(swap, ignore_errors=True)
    fsync_dir(dir)


def recover_swap(dir: Path) -> None:
    """On open: drop an unfinished clean, finish a committed swap (see the module docstring)."""
    shutil.rmtree(dir / CLEANING, ignore_errors=True)
    swap = dir / SWAP
    if swap.is_dir():
        try:
            base, end = map(int, (swap / RANGE).read_text().split())
        except (FileNotFoundError, ValueError):
            shutil.rmtree(swap, ignore_errors=True)  # cannot be: RANGE is written before the rename
            return
        log.warning("%s: finishing the swap of a clean interrupted by a crash", dir.name)
        finish_swap(dir, base, end)
