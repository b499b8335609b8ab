"""Metadata (key 3), v0-12: brokers, topics and partition leaders. Flexible from v9.

Request::

    topics [topic_id uuid (v10+), name string (nullable v10+)]
                                (v0: empty means all topics; v1+: null means all,
                                 empty means none)
    allow_auto_topic_creation bool (v4+, default true)
    include_cluster_authorized_operations bool (v8-10)
    include_topic_authorized_operations bool (v8+)

Response::

    throttle_time_ms int32 (v3+),
    brokers [node_id int32, host string, port int32, rack nullable string (v1+)],
    cluster_id nullable string (v2+), controller_id int32 (v1+),
    topics [error_code int16, name string (nullable v12+), topic_id uuid (v10+),
            is_internal bool (v1+),
            partitions [error_code int16, partition_index int32, leader_id int32,
                        leader_epoch int32 (v7+), replica_nodes [int32],
                        isr_nodes [int32], offline_replicas [int32] (v5+)],
            topic_authorized_operations int32 (v8+)],
    cluster_authorized_operations int32 (v8-10)

Versions: v9 switches to the flexible encoding (compact strings and arrays, a tagged-field
section after every struct). v10 adds the topic ids: each answered topic carries its id
(the zero uuid for a topic that does not exist), and a request topic carries an id field
whose name may be null. Only from v12 may a request name a topic by id alone (a null
name): the broker looks the id up and answers UNKNOWN_TOPIC_ID, with the id echoed and a
null name, when no topic has it; v10 and v11 must still name every topic. v11 drops the
cluster-level authorized operations (request flag and response field), which exist in
v8-10 only. Note the order: in the request the id comes before the name, in the response
after it.

The authorized-operations fields default to INT32_MIN, Kafka's "not requested" marker.
"""

from collections.abc import Sequence
from typing import Protocol
from uuid import UUID

from ..primitives import Array, Boolean, Int16, Int32, NullableString, String, Uuid
from ..schema import Field, Message, Struct

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)

MetadataRequestTopic = Struct("MetadataRequestTopic", [
    Field("topic_id", Uuid, versions="10+"),
    # Nullable from v10 only (and null only means "by id" from v12); callers must not send
    # null below v10.
    Field("name", NullableString),
])

MetadataRequest = Message("MetadataRequest", api_key=3, valid="0-12", flexible="9+", fields=[
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
    # Null only from v12, for an unknown topic asked for by id.
    Field("name", NullableString),
    Field("topic_id", Uuid, versions="10+"),
    Field("is_internal", Boolean, versions="1+"),
    Field("partitions", Array(MetadataResponsePartition)),
    Field("topic_authorized_operations", Int32, versions="8+",
          default=AUTHORIZED_OPERATIONS_OMITTED),
])

MetadataResponse = Message("MetadataResponse", api_key=3, valid="0-12", flexible="9+", fields=[
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
    topic_id: UUID
    name: str | None


class MetadataRequestView(Protocol):
    topics: Sequence[MetadataRequestTopicView] | None
    allow_auto_topic_creation: bool
    include_cluster_authorized_operations: bool
    include_topic_authorized_operations: bool


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
    name: str | None
    topic_id: UUID
    is_internal: bool
    partitions: Sequence[MetadataResponsePartitionView]


class MetadataResponseView(Protocol):
    throttle_time_ms: int
    brokers: Sequence[MetadataResponseBrokerView]
    cluster_id: str | None
    controller_id: int
    topics: Sequence[MetadataResponseTopicView]
