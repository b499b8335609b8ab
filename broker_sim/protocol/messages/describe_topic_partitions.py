"""DescribeTopicPartitions (key 75) v0, always flexible: topics and their partitions a page
at a time (KIP-966). Kafka 4's ``Admin.describeTopics`` by name uses it when the broker
advertises it (``kafka-topics --describe``), and Metadata otherwise.

Request::

    topics [name string] (empty: every topic), response_partition_limit int32 (default 2000),
    cursor {topic_name string, partition_index int32}? (null: from the first topic)

Response::

    throttle_time_ms int32,
    topics [error_code int16, name string?, topic_id uuid, is_internal bool,
            partitions [error_code int16, partition_index int32, leader_id int32,
                        leader_epoch int32, replica_nodes [int32], isr_nodes [int32],
                        eligible_leader_replicas [int32]?, last_known_elr [int32]?,
                        offline_replicas [int32]],
            topic_authorized_operations int32],
    next_cursor {topic_name string, partition_index int32}? (null: nothing left)

The cursor is a nullable struct: an int8 marker (-1 null, 1 present) before its fields.
"""

from ..primitives import Array, Boolean, Int16, Int32, NullableString, String, Uuid
from ..schema import Field, Message, NullableStruct, Struct

Cursor = Struct("Cursor", [
    Field("topic_name", String),
    Field("partition_index", Int32),
])

DescribeTopicPartitionsTopicRequest = Struct("DescribeTopicPartitionsTopicRequest", [
    Field("name", String),
])

DescribeTopicPartitionsRequest = Message("DescribeTopicPartitionsRequest", api_key=75, valid="0",
                                         flexible="0+", fields=[
    Field("topics", Array(DescribeTopicPartitionsTopicRequest)),
    Field("response_partition_limit", Int32, default=2000),
    Field("cursor", NullableStruct(Cursor)),
])

DescribeTopicPartitionsResponsePartition = Struct("DescribeTopicPartitionsResponsePartition", [
    Field("error_code", Int16),
    Field("partition_index", Int32),
    Field("leader_id", Int32),
    Field("leader_epoch", Int32, default=-1),
    Field("replica_nodes", Array(Int32)),
    Field("isr_nodes", Array(Int32)),
    Field("eligible_leader_replicas", Array(Int32, nullable=True)),
    Field("last_known_elr", Array(Int32, nullable=True)),
    Field("offline_replicas", Array(Int32)),
])

DescribeTopicPartitionsResponseTopic = Struct("DescribeTopicPartitionsResponseTopic", [
    Field("error_code", Int16),
    Field("name", NullableString),
    Field("topic_id", Uuid),
    Field("is_internal", Boolean),
    Field("partitions", Array(DescribeTopicPartitionsResponsePartition)),
    Field("topic_authorized_operations", Int32, default=-2147483648),
])

DescribeTopicPartitionsResponse = Message("DescribeTopicPartitionsResponse", api_key=75, valid="0",
                                          flexible="0+", fields=[
    Field("throttle_time_ms", Int32),
    Field("topics", Array(DescribeTopicPartitionsResponseTopic)),
    Field("next_cursor", NullableStruct(Cursor)),
])
