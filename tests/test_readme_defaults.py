"""The README's table of defaults that differ from Kafka's says what pyq's broker does."""

from __future__ import annotations

import re
from pathlib import Path

from broker_sim.controller.configs import default_min_isr
from broker_sim.server.config import BrokerConfig

README = Path(__file__).resolve().parent.parent / "README.md"


def _rows() -> dict[str, str]:
    text = README.read_text()
    table = text[text.index("Defaults are Kafka's, except"):]
    rows = {}
    for line in table.splitlines()[4:]:  # the sentence, a blank line, the header, its rule
        if not line.startswith("|"):
            break
        option, pyq, *_ = [cell.strip() for cell in line.strip("|").split("|")]
        rows[re.sub(r"`([^`]+)`.*", r"\1", option)] = pyq
    return rows


def test_the_defaults_table_says_what_the_broker_does() -> None:
    rows = _rows()
    config = BrokerConfig()
    assert set(rows) == {"auto.create.topics.enable", "min.insync.replicas", "cluster id"}
    assert rows["auto.create.topics.enable"] == str(config.auto_create_topics_enable).lower()
    assert rows["min.insync.replicas"].startswith("2, capped at the replication factor")
    assert [default_min_isr(rf) for rf in (1, 2, 3, 5)] == [1, 2, 2, 2]
    assert rows["cluster id"].startswith(f"`{config.cluster_id}`")
