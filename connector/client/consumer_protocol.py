"""The consumer protocol: what consumer group members put in JoinGroup and SyncGroup.

Kafka's brokers treat a classic group's member metadata and assignments as opaque bytes;
consumers agree on their layout (protocol type ``consumer``)::

    Subscription  version int16, topics [string], user_data nullable bytes,
                  owned_partitions [topic string, partitions [int32]] (v1+),
                  generation_id int32 (v2+), rack_id nullable string (v3+)
    Assignment    version int16, assigned_partitions [topic string, partitions [int32]],
                  user_data nullable bytes

Every version (0-3) is read; pyq writes subscriptions at v1 (owned partitions, for the
cooperative protocol's sake) and assignments at v0, both understood by every Kafka client.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

from broker_sim.protocol.primitives import Array, Int32, NullableBytes, NullableString, String
from broker_sim.protocol.schema import Field, Struct

from .metadata import TopicPartition

_Partitions = Struct("TopicPartitions", [Field("topic", String), Field("partitions", Array(Int32))])

_Subscription = Struct("ConsumerProtocolSubscription", [
    Field("topics", Array(String)),
    Field("user_data", NullableBytes),
    Field("owned_partitions", Array(_Partitions), versions="1+"),
    Field("generation_id", Int32, versions="2+", default=-1),
    Field("rack_id", NullableString, versions="3+"),
])

_Assignment = Struct("ConsumerProtocolAssignment", [
    Field("assigned_partitions", Array(_Partitions)),
    Field("user_data", NullableBytes),
])

_VERSION = struct.Struct(">h")
MAX_VERSION = 3


@dataclass
class Subscription:
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = field(default_factory=list)


def _grouped(partitions: Iterable[TopicPartition]) -> list[dict]:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())]


def _flat(grouped: list) -> list[TopicPartition]:
    return [TopicPartition(g.topic, p) for g in grouped for p in g.partitions]


def _read(schema: Struct, data: bytes):  # a decoded Data
    (version,) = _VERSION.unpack_from(data)
    # Newer versions only add fields at the end: read what we know, as Kafka does.
    value, _ = schema.at(min(max(version, 0), MAX_VERSION)).read(data, 2, False)
    return value


def encode_subscription(sub: Subscription, version: int = 1) -> bytes:
    out = bytearray(_VERSION.pack(version))
    _Subscription.at(version).write(out, {
        "topics": sorted(sub.topics), "user_data": sub.user_data,
        "owned_partitions": _grouped(sub.owned_partitions), "generation_id": -1,
        "rack_id": None}, False)
    return bytes(out)


def decode_subscription(data: bytes) -> Subscription:
    v = _read(_Subscription, data)
    return Subscription(list(v.topics), v.user_data, _flat(v.owned_partitions))


def encode_assignment(partitions: Iterable[TopicPartition], user_data: bytes | None = None) -> bytes:
    out = bytearray(_VERSION.pack(0))
    _Assignment.at(0).write(out, {"assigned_partitions": _grouped(partitions),
                                  "user_data": user_data}, False)
    return bytes(out)


def decode_assignment(data: bytes) -> list[TopicPartition]:
    """The partitions of an assignment (empty bytes: nothing assigned)."""
    if not data:
        return []
    return _flat(_read(_Assignment, data).assigned_partitions)
