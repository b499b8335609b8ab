"""ConsumerGroupHeartbeat (key 68), v0-1: the consumer protocol of KIP-848. Always flexible.

One request does everything the classic protocol's JoinGroup, SyncGroup, Heartbeat and
LeaveGroup did: ``member_epoch`` 0 joins, -1 leaves, -2 is a static member's temporary
leave, anything else is the epoch the member believes it has. Fields that did not change
since the last heartbeat are sent as null (or -1). Partitions are named by topic id.

Request::

    group_id string, member_id string, member_epoch int32,
    instance_id nullable string, rack_id nullable string, rebalance_timeout_ms int32,
    subscribed_topic_names nullable [string], subscribed_topic_regex nullable string (v1+),
    server_assignor nullable string,
    topic_partitions nullable [topic_id uuid, partitions [int32]]   (what the member owns)

Response::

    throttle_time_ms int32, error_code int16, error_message nullable string,
    member_id nullable string, member_epoch int32, heartbeat_interval_ms int32,
    assignment nullable {topic_partitions [topic_id uuid, partitions [int32]]}
"""

from ..primitives import Array, Int16, Int32, NullableString, String, Uuid
from ..schema import Field, Message, NullableStruct, Struct

TopicPartitions = Struct("TopicPartitions", [
    Field("topic_id", Uuid),
    Field("partitions", Array(Int32)),
])

ConsumerGroupHeartbeatRequest = Message(
    "ConsumerGroupHeartbeatRequest", api_key=68, valid="0-1", flexible="0+", fields=[
        Field("group_id", String),
        Field("member_id", String),
        Field("member_epoch", Int32),
        Field("instance_id", NullableString),
        Field("rack_id", NullableString),
        Field("rebalance_timeout_ms", Int32, default=-1),
        Field("subscribed_topic_names", Array(String, nullable=True)),
        Field("subscribed_topic_regex", NullableString, versions="1+"),
        Field("server_assignor", NullableString),
        Field("topic_partitions", Array(TopicPartitions, nullable=True)),
    ])

Assignment = Struct("Assignment", [
    Field("topic_partitions", Array(TopicPartitions)),
])

ConsumerGroupHeartbeatResponse = Message(
    "ConsumerGroupHeartbeatResponse", api_key=68, valid="0-1", flexible="0+", fields=[
        Field("throttle_time_ms", Int32),
        Field("error_code", Int16),
        Field("error_message", NullableString),
        Field("member_id", NullableString),
        Field("member_epoch", Int32),
        Field("heartbeat_interval_ms", Int32),
        Field("assignment", NullableStruct(Assignment)),
    ])
