"""Which partition of an internal topic owns a key, and so which broker coordinates it.

A key (a group id, a transactional id) belongs to partition
``abs(java_string_hash(key)) % partitions`` of its internal topic (``__consumer_offsets``
for groups, ``__transaction_state`` for transactional ids), exactly as Kafka computes it, so the same group lands on the same partition
number as it would on a Kafka cluster with the same partition count. The leader of that
partition is the key's coordinator; when leadership moves, so does the coordination.
"""

from __future__ import annotations

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: str, partitions: int) -> int:
    """The partition that owns ``key`` (Kafka's ``Utils.abs(hash) % partitions``)."""
    return (java_string_hash(key) & 0x7FFFFFFF) % partitions
