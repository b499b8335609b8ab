"""The records of ``__consumer_offsets``, in Kafka's own binary layout.

Every record has a key and a value, each starting with an int16 schema version:

* offset commit — key v1 ``(group, topic, partition)``; value v3 ``(offset, leader_epoch,
  metadata, commit_timestamp)``. Older value versions (0-2) are read too.
* group metadata — key v2 ``(group)``; value v3 ``(protocol_type, generation, protocol,
  leader, current_state_timestamp, members[member_id, group_instance_id, client_id,
  client_host, rebalance_timeout, session_timeout, subscription, assignment])``.

* consumer-protocol (KIP-848) groups — key v3 ``(group)`` → ``(epoch)``; key v5
  ``(group, member)`` → member metadata ``(instance_id, rack_id, client_id, client_host,
  subscribed_topic_names, subscribed_topic_regex, rebalance_timeout_ms, server_assignor)``;
  key v6 ``(group)`` → ``(assignment_epoch)``; key v7 ``(group, member)`` → the member's
  target ``topic_partitions [topic_id, partitions]``; key v8 ``(group, member)`` → its
  current assignment ``(member_epoch, previous_member_epoch, state, assigned_partitions,
  partitions_pending_revocation)``, each partition with its assignment epoch. Values are flexible (compact, tagged fields), version
  0, and name topics by id, as Kafka's.

A record with a null value is a tombstone: the offset, or the whole group, is gone. The
topic is keyed so that the latest record per key is the truth, whether the log is read in
full or (once the log cleaner exists) compacted. Using Kafka's layout means a partition of
this topic reads the same as Kafka's under its tools.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from ...protocol.primitives import (
    Array,
    Bytes,
    Int8,
    Int32,
    Int64,
    NullableString,
    String,
    Uuid,
)
from ...protocol.schema import Data, Field, Struct

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3

OffsetCommitKey = Struct("OffsetCommitKey", [
    Field("group", String), Field("topic", String), Field("partition", Int32)])

GroupMetadataKey = Struct("GroupMetadataKey", [Field("group", String)])

OffsetCommitValue = Struct("OffsetCommitValue", [
    Field("offset", Int64),
    Field("leader_epoch", Int32, versions="3+", default=-1),
    Field("metadata", String),
    Field("commit_timestamp", Int64),
    Field("expire_timestamp", Int64, versions="1", default=-1),
])

MemberMetadataValue = Struct("MemberMetadataValue", [
    Field("member_id", String),
    Field("group_instance_id", NullableString, versions="3+"),
    Field("client_id", String),
    Field("client_host", String),
    Field("rebalance_timeout", Int32, versions="1+", default=-1),
    Field("session_timeout", Int32),
    Field("subscription", Bytes),
    Field("assignment", Bytes),
])

GroupMetadataValue = Struct("GroupMetadataValue", [
    Field("protocol_type", String),
    Field("generation", Int32),
    Field("protocol", NullableString),
    Field("leader", NullableString),
    Field("current_state_timestamp", Int64, versions="2+", default=-1),
    Field("members", Array(MemberMetadataValue)),
])

_INT16 = struct.Struct(">h")

#: (key, value) of one record of __consumer_offsets; a None value is a tombstone.
Record = tuple[bytes, bytes | None]

# ---- consumer-protocol groups (KIP-848) ------------------------------------------------
CONSUMER_GROUP_KEY_VERSION = 3
CONSUMER_MEMBER_KEY_VERSION = 5
TARGET_METADATA_KEY_VERSION = 6
TARGET_MEMBER_KEY_VERSION = 7
CURRENT_ASSIGNMENT_KEY_VERSION = 8

GroupMemberKey = Struct("GroupMemberKey", [Field("group", String), Field("member", String)])

ConsumerGroupMetadataValue = Struct("ConsumerGroupMetadataValue", [Field("epoch", Int32)])

ConsumerMemberMetadataValue = Struct("ConsumerMemberMetadataValue", [
    Field("instance_id", NullableString),
    Field("rack_id", NullableString),
    Field("client_id", String),
    Field("client_host", String),
    Field("subscribed_topic_names", Array(String)),
    Field("subscribed_topic_regex", NullableString),
    Field("rebalance_timeout_ms", Int32, default=-1),
    Field("server_assignor", NullableString),
])

TopicPartitions = Struct("TopicPartitions", [
    Field("topic_id", Uuid), Field("partitions", Array(Int32))])

TargetAssignmentMetadataValue = Struct("TargetAssignmentMetadataValue", [
    Field("assignment_epoch", Int32)])

TargetAssignmentMemberValue = Struct("TargetAssignmentMemberValue", [
    Field("topic_partitions", Array(TopicPartitions))])

#: A member's partitions with their assignment epochs (KIP-1251: tagged field 0, one epoch
#: per partition in the same order; absent in records written before it).
HeldTopicPartitions = Struct("HeldTopicPartitions", [
    Field("topic_id", Uuid), Field("partitions", Array(Int32)),
    Field("assignment_epochs", Array(Int32, nullable=True), tag=0)])

CurrentMemberAssignmentValue = Struct("CurrentMemberAssignmentValue", [
    Field("member_epoch", Int32),
    Field("previous_member_epoch", Int32),
    Field("state", Int8),
    Field("assigned_partitions", Array(HeldTopicPartitions)),
    Field("partitions_pending_revocation", Array(HeldTopicPartitions)),
])

_CONSUMER_VALUES = {
    CONSUMER_GROUP_KEY_VERSION: ConsumerGroupMetadataValue,
    CONSUMER_MEMBER_KEY_VERSION: ConsumerMemberMetadataValue,
    TARGET_METADATA_KEY_VERSION: TargetAssignmentMetadataValue,
    TARGET_MEMBER_KEY_VERSION: TargetAssignmentMemberValue,
    CURRENT_ASSIGNMENT_KEY_VERSION: CurrentMemberAssignmentValue,
}


def consumer_key(kind: int, group: str, member: str | None = None) -> bytes:
    """Key ``kind`` (one of the versions above) of a consumer group or of one member."""
    if member is None:
        return _encode(kind, GroupMetadataKey, {"group": group})
    return _encode(kind, GroupMemberKey, {"group": group, "member": member})


def consumer_value(kind: int, value: dict[str, Any]) -> bytes:
    out = bytearray(_INT16.pack(0))
    _CONSUMER_VALUES[kind].at(0).write(out, value, True)
    return bytes(out)


def decode_consumer_value(kind: int, raw: bytes) -> Data:
    (version,) = _INT16.unpack_from(raw)
    if version != 0:
        raise ValueError(f"unknown value version {version} for __consumer_offsets key {kind}")
    value, _ = _CONSUMER_VALUES[kind].at(0).read(raw, 2, True)
    return value


def _encode(version: int, schema: Struct, value: Any) -> bytes:
    out = bytearray(_INT16.pack(version))
    schema.at(version).write(out, value, False)
    return bytes(out)


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return _encode(OFFSET_KEY_VERSION, OffsetCommitKey, {"group": group, "topic": topic,
                                                         "partition": partition})


def group_key(group: str) -> bytes:
    return _encode(GROUP_KEY_VERSION, GroupMetadataKey, {"group": group})


def offset_value(offset: int, leader_epoch: int, metadata: str, commit_timestamp: int) -> bytes:
    return _encode(OFFSET_VALUE_VERSION, OffsetCommitValue, {
        "offset": offset, "leader_epoch": leader_epoch, "metadata": metadata,
        "commit_timestamp": commit_timestamp})


def group_value(value: dict[str, Any]) -> bytes:
    return _encode(GROUP_VALUE_VERSION, GroupMetadataValue, value)


@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    group: str


@dataclass(frozen=True)
class ConsumerKey:
    """A consumer-protocol group's record: ``kind`` is the key version, ``member`` is None
    for the group-level kinds (3 and 6)."""

    kind: int
    group: str
    member: str | None = None


def decode_key(raw: bytes) -> OffsetKey | GroupKey | ConsumerKey:
    (version,) = _INT16.unpack_from(raw)
    if version in (0, 1):
        k, _ = OffsetCommitKey.at(version).read(raw, 2, False)
        return OffsetKey(k.group, k.topic, k.partition)
    if version == 2:
        g, _ = GroupMetadataKey.at(version).read(raw, 2, False)
        return GroupKey(g.group)
    if version in (CONSUMER_GROUP_KEY_VERSION, TARGET_METADATA_KEY_VERSION):
        g, _ = GroupMetadataKey.at(0).read(raw, 2, False)
        return ConsumerKey(version, g.group)
    if version in (CONSUMER_MEMBER_KEY_VERSION, TARGET_MEMBER_KEY_VERSION,
                   CURRENT_ASSIGNMENT_KEY_VERSION):
        m, _ = GroupMemberKey.at(0).read(raw, 2, False)
        return ConsumerKey(version, m.group, m.member)
    if version == 4:  # Kafka's subscription metadata: recomputed from the image instead
        g, _ = GroupMetadataKey.at(0).read(raw, 2, False)
        return ConsumerKey(version, g.group)
    raise ValueError(f"unknown __consumer_offsets key version {version}")


def decode_offset_value(raw: bytes) -> Data:
    (version,) = _INT16.unpack_from(raw)
    if not 0 <= version <= OFFSET_VALUE_VERSION:
        raise ValueError(f"unknown offset commit value version {version}")
    value, _ = OffsetCommitValue.at(version).read(raw, 2, False)
    return value


def decode_group_value(raw: bytes) -> Data:
    (version,) = _INT16.unpack_from(raw)
    if not 0 <= version <= GROUP_VALUE_VERSION:
        raise ValueError(f"unknown group metadata value version {version}")
    value, _ = GroupMetadataValue.at(version).read(raw, 2, False)
    return value
