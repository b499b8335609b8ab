"""Metadata (key 3), v0-8: brokers, topics and partition leaders. Flexible only from v9.

Request::

    topics [name string]        (v0: empty means all topics; v1+: null means all,
                                 empty means none)
    allow_auto_topic_creation bool (v4+, default true)
    include_cluster_authorized_operations bool (v8-10)
    include_topic_authorized_operations bool (v8+)

Response::

    throttle_time_ms int32 (v3+),
    brokers [node_id int32, host string, port int32, rack nullable string (v1+)],
    cluster_id nullable string (v2+), controller_id int32 (v1+),
    topics [error_code int16, name string, is_internal bool (v1+),
            partitions [error_code int16, partition_index int32, leader_id int32,
                        leader_epoch int32 (v7+), replica_nodes [int32],
                        isr_nodes [int32], offline_replicas [int32] (v5+)],
            topic_authorized_operations int32 (v8+)],
    cluster_authorized_operations int32 (v8-10)

The authorized-operations fields default to INT32_MIN, Kafka's "not requested" marker.
"""

from collections.abc import Sequence
from typing import Protocol

from ..primitives import Array, Boolean, Int16, Int32, NullableString, String
from ..schema import Field, Message, Struct

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)

MetadataRequestTopic = Struct("MetadataRequestTopic", [
    Field("name", String),
])

MetadataRequest = Message("MetadataRequest", api_key=3, valid="0-8", flexible="9+", fields=[
    # Nullable from v1 only; callers must not send null at v0.
    Field("topics", Array(MetadataRequestTopic, nullable=True)),
    Field("allow_auto_topic_creation", Boolean, versions="4+", default=True),
    Field("include_cluster_authorized_operations", Boolean, versions="8-10"),
    Field("include_topic_authorized_operations", Boolean, versions="8+"),
])

MetadataResponseBroker = Struct("MetadataResponseBroker", [
    Field("node_id", Int32),
    Field("host", String),
    Field("port", Int32),
    Field("rack", NullableString, versions="1+"),
])

MetadataResponsePartition = Struct("MetadataResponsePartition", [
    Field("error_code", Int16),
    Field("partition_index", Int32),
    Field("leader_id", Int32),
    Field("leader_epoch", Int32, versions="7+", default=-1),
    Field("replica_nodes", Array(Int32)),
    Field("isr_nodes", Array(Int32)),
    Field("offline_replicas", Array(Int32), versions="5+"),
])

MetadataResponseTopic = Struct("MetadataResponseTopic", [
    Field("error_code", Int16),
    Field("name", String),
    Field("is_internal", Boolean, versions="1+"),
    Field("partitions", Array(MetadataResponsePartition)),
    Field("topic_authorized_operations", Int32, versions="8+",
          default=AUTHORIZED_OPERATIONS_OMITTED),
])

MetadataResponse = Message("MetadataResponse", api_key=3, valid="0-8", flexible="9+", fields=[
    Field("throttle_time_ms", Int32, versions="3+"),
    Field("brokers", Array(MetadataResponseBroker)),
    Field("cluster_id", NullableString, versions="2+"),
    Field("controller_id", Int32, versions="1+", default=-1),
    Field("topics", Array(MetadataResponseTopic)),
    Field("cluster_authorized_operations", Int32, versions="8-10",
          default=AUTHORIZED_OPERATIONS_OMITTED),
])


# What a decoded message looks like, for the type checker (decoding builds ``schema.Data``;
# these Protocols only describe its attributes).


class MetadataRequestTopicView(Protocol):
    name: str


class MetadataRequestView(Protocol):
    topics: Sequence[MetadataRequestTopicView] | None
    allow_auto_topic_creation: bool


class MetadataResponseBrokerView(Protocol):
    node_id: int
    host: str
    port: int
    rack: str | None


class MetadataResponsePartitionView(Protocol):
    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int
    replica_nodes: Sequence[int]
    isr_nodes: Sequence[int]
    offline_replicas: Sequence[int]


class MetadataResponseTopicView(Protocol):
    error_code: int
    name: str
    is_internal: bool
    partitions: Sequence[MetadataResponsePartitionView]


class MetadataResponseView(Protocol):
    throttle_time_ms: int
    brokers: Sequence[MetadataResponseBrokerView]
    cluster_id: str | None
    controller_id: int
    topics: Sequence[MetadataResponseTopicView]
