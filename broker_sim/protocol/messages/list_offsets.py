"""ListOffsets (key 2), v1-5: the offset for a timestamp (-1 latest, -2 earliest).

Request::

    replica_id int32, isolation_level int8 (v2+),
    topics [name string, partitions [partition_index int32,
            current_leader_epoch int32 (v4+), timestamp int64]]

Response::

    throttle_time_ms int32 (v2+),
    topics [name string, partitions [partition_index int32, error_code int16,
            timestamp int64, offset int64, leader_epoch int32 (v4+)]]

``replica_id`` defaults to -1 (a consumer) although Kafka's JSON schema gives it no
default: 0 would claim to be broker 0. Kafka's clients always send -1 and kafka-python
patches the same default in. Flexible only from v6.
"""

from collections.abc import Sequence
from typing import Protocol

from ..primitives import Array, Int8, Int16, Int32, Int64, String
from ..schema import Field, Message, Struct

ListOffsetsPartition = Struct("ListOffsetsPartition", [
    Field("partition_index", Int32),
    Field("current_leader_epoch", Int32, versions="4+", default=-1),
    Field("timestamp", Int64),
])

ListOffsetsTopic = Struct("ListOffsetsTopic", [
    Field("name", String),
    Field("partitions", Array(ListOffsetsPartition)),
])

ListOffsetsRequest = Message("ListOffsetsRequest", api_key=2, valid="1-5", flexible="6+", fields=[
    Field("replica_id", Int32, default=-1),
    Field("isolation_level", Int8, versions="2+"),
    Field("topics", Array(ListOffsetsTopic)),
])

ListOffsetsPartitionResponse = Struct("ListOffsetsPartitionResponse", [
    Field("partition_index", Int32),
    Field("error_code", Int16),
    Field("timestamp", Int64, versions="1+", default=-1),
    Field("offset", Int64, versions="1+", default=-1),
    Field("leader_epoch", Int32, versions="4+", default=-1),
])

ListOffsetsTopicResponse = Struct("ListOffsetsTopicResponse", [
    Field("name", String),
    Field("partitions", Array(ListOffsetsPartitionResponse)),
])

ListOffsetsResponse = Message("ListOffsetsResponse", api_key=2, valid="1-5", flexible="6+", fields=[
    Field("throttle_time_ms", Int32, versions="2+"),
    Field("topics", Array(ListOffsetsTopicResponse)),
])


# What a decoded message looks like, for the type checker (decoding builds ``schema.Data``;
# these Protocols only describe its attributes).


class ListOffsetsPartitionView(Protocol):
    partition_index: int
    current_leader_epoch: int
    timestamp: int


class ListOffsetsTopicView(Protocol):
    name: str
    partitions: Sequence[ListOffsetsPartitionView]


class ListOffsetsRequestView(Protocol):
    replica_id: int
    isolation_level: int
    topics: Sequence[ListOffsetsTopicView]


class ListOffsetsPartitionResponseView(Protocol):
    partition_index: int
    error_code: int
    timestamp: int
    offset: int
    leader_epoch: int


class ListOffsetsTopicResponseView(Protocol):
    name: str
    partitions: Sequence[ListOffsetsPartitionResponseView]


class ListOffsetsResponseView(Protocol):
    throttle_time_ms: int
    topics: Sequence[ListOffsetsTopicResponseView]
