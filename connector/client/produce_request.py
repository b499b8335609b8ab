"""The Produce request body, built in one place for the producer's sender and the sink."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Records = bytes | bytearray | memoryview


def produce_body(partitions: Iterable[tuple[str, int, Records]], acks: int,
                 timeout_ms: int, transactional_id: str | None = None) -> dict[str, Any]:
    """A Produce request carrying one record set per (topic, partition, records), grouped by
    topic in first-seen order. A transactional producer names its ``transactional_id``: a
    broker authorizes transactional records by it (Apache Kafka refuses them without it,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED)."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for topic, partition, records in partitions:
        topics.setdefault(topic, []).append({"index": partition, "records": records})
    return {"transactional_id": transactional_id, "acks": acks, "timeout_ms": timeout_ms,
            "topic_data": [{"name": t, "partition_data": p} for t, p in topics.items()]}
