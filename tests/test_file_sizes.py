"""No file of the library over 600 lines: a longer one is split by concept, not by count.

There are no exceptions. Fails naming each file over the limit and its length.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 600


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_no_library_file_over_600_lines() -> None:
    too_long = []
    for package in ("broker_sim", "connector", "jobs"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if _lines(path) > LIMIT:
                too_long.append(f"{path.relative_to(ROOT)}: {_lines(path)} lines (at most {LIMIT})")
    assert too_long == []
