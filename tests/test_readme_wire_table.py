"""The README's wire-protocol table lists exactly the API versions the broker advertises."""

from __future__ import annotations

import re
from pathlib import Path

from broker_sim.protocol.api import APIS

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_wire_table_matches_the_advertised_versions() -> None:
    text = README.read_text()
    table = text[text.index("## Wire protocol: what is implemented"):]
    listed: dict[int, tuple[int, int]] = {}
    for row in re.findall(r"^\| (.+?) \| ([0-9–]+) \|$", table, re.M):
        names, versions = row
        low, _, high = versions.partition("–")
        for key in re.findall(r"\((\d+)\)", names):
            listed[int(key)] = (int(low), int(high or low))
    advertised = {key: (spec.min_version, spec.max_version) for key, spec in APIS.items()}
    assert listed == advertised
