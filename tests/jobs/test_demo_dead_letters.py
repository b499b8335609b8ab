"""``make demo``'s dead-letter summary: a count per ``pyq.reason`` and the first few source
offsets, read from a real dead-letter topic (records shaped as the source's
:func:`connector.source.failures.dead_letter` writes them), not one line per record."""

from __future__ import annotations

import sys
from pathlib import Path

from connector.client import Admin, NewTopic, Producer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "jobs"))

import demo  # noqa: E402


def test_summary_counts_per_reason_with_the_first_offsets(shared_broker) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = "demo-dlq"
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(topic, 2, 1)])
    letters = [("not JSON", "clicks", i % 3, 10 * i) for i in range(8)] + \
              [("no user_id", "clicks", 2, 5), ("no user_id", "clicks", 0, 99)]
    with Producer(bootstrap_servers=bootstrap, acks="all") as producer:
        for n, (reason, source, partition, offset) in enumerate(letters):
            producer.send(topic, b"{broken", partition=n % 2, headers=[
                ("pyq.reason", reason.encode()), ("pyq.topic", source.encode()),
                ("pyq.partition", str(partition).encode()), ("pyq.offset", str(offset).encode()),
                ("pyq.failures", b"3")])
        producer.flush()
    with Admin(bootstrap_servers=bootstrap) as admin:
        ends = demo._end_offsets(admin, topic)
    by_reason = demo.dead_letter_summary(bootstrap, topic, ends)
    assert {r: len(s) for r, s in by_reason.items()} == {"not JSON": 8, "no user_id": 2}
    assert demo.summary_lines(by_reason) == [
        "     8  not JSON  (first: clicks-0@0, clicks-0@30, clicks-0@60, clicks-1@10, "
        "clicks-1@40, ...)",
        "     2  no user_id  (first: clicks-0@99, clicks-2@5)",
    ]
