"""Records and helpers shared by the interop tests (clients we did not write, against our broker)."""

from __future__ import annotations

import time

from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def record(i: int, null_header: bytes | None = None) -> tuple[bytes | None, bytes | None, list, int]:
    """Record ``i``: null keys, a few null values, non-ASCII header keys, binary values.

    kafka-python's producer refuses null header values (pass ``null_header=b""`` for it)
    and records whose key and value are both null (there are none)."""
    key = None if i % 5 == 0 else f"k{i % 17}".encode()
    value = None if i % 97 == 1 and key is not None else f"v{i}:".encode() + b"\xff" * (i % 30)
    headers = [] if i % 4 else [("n\u00e9", str(i).encode()), ("nil", null_header)]
    return key, value, headers, 1_600_000_000_000 + i


def kafka_python_consume_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list:
    """Every record of ``topic`` from offset 0, with kafka-python's consumer (no group)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=10_000)
    tps = [KafkaTopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, 0)
    out: list = []
    deadline = time.monotonic() + 120
    while len(out) < expected and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=1000, max_records=10_000).values():
            out.extend(records)
    consumer.close()
    return out
