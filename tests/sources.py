"""The project as it would be shipped: a copy of the files git tracks, for tests that build
or install the package (so a build never writes into the work tree others run from)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def copy_tracked_sources(dest: Path) -> Path:
    """Copy every tracked file that exists in the work tree to ``dest``; returns ``dest``."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    for name in filter(None, tracked):
        if (ROOT / name).is_file():  # a file deleted in the work tree is not shipped
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest
