"""Plain text tables: a header row and left-aligned columns two spaces apart.

>>> print(format_table(["TOPIC", "PARTITION", "ISR"], [["events", 0, (1, 2)], ["e", 10, None]]))
TOPIC   PARTITION  ISR
events  0          1,2
e       10         -

Missing values (None) show as ``-`` and sequences as comma-separated lists, so every cell
is one word and ``awk``/``split()`` can read the output. Trailing spaces are trimmed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value) or "-"
    text = str(value)
    return text if text else "-"


def format_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = [[str(h) for h in headers]] + [[cell(v) for v in row] for row in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
                     for line in lines)
