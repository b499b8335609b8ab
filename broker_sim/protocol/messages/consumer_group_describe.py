"""ConsumerGroupDescribe (key 69), v0: describe consumer-protocol (KIP-848) groups.

Request: ``group_ids [string], include_authorized_operations bool``.

Response: ``throttle_time_ms``, then per group ``error_code, error_message, group_id,
group_state, group_epoch, assignment_epoch, assignor_name, members [member_id,
instance_id, rack_id, member_epoch, client_id, client_host, subscribed_topic_names,
subscribed_topic_regex, assignment, target_assignment], authorized_operations``; an
assignment is ``topic_partitions [topic_id uuid, topic_name, partitions [int32]]``.
"""

from ..primitives import Array, Boolean, Int16, Int32, NullableString, String, Uuid
from ..schema import Field, Message, Struct

ConsumerGroupDescribeRequest = Message(
    "ConsumerGroupDescribeRequest", api_key=69, valid="0", flexible="0+", fields=[
        Field("group_ids", Array(String)),
        Field("include_authorized_operations", Boolean),
    ])

DescribedTopicPartitions = Struct("DescribedTopicPartitions", [
    Field("topic_id", Uuid),
    Field("topic_name", String),
    Field("partitions", Array(Int32)),
])

DescribedAssignment = Struct("DescribedAssignment", [
    Field("topic_partitions", Array(DescribedTopicPartitions)),
])

DescribedMember = Struct("DescribedMember", [
    Field("member_id", String),
    Field("instance_id", NullableString),
    Field("rack_id", NullableString),
    Field("member_epoch", Int32),
    Field("client_id", String),
    Field("client_host", String),
    Field("subscribed_topic_names", Array(String)),
    Field("subscribed_topic_regex", NullableString),
    Field("assignment", DescribedAssignment),
    Field("target_assignment", DescribedAssignment),
])

DescribedGroup = Struct("DescribedGroup", [
    Field("error_code", Int16),
    Field("error_message", NullableString),
    Field("group_id", String),
    Field("group_state", String),
    Field("group_epoch", Int32),
    Field("assignment_epoch", Int32),
    Field("assignor_name", String),
    Field("members", Array(DescribedMember)),
    Field("authorized_operations", Int32, default=-(2**31)),
])

ConsumerGroupDescribeResponse = Message(
    "ConsumerGroupDescribeResponse", api_key=69, valid="0", flexible="0+", fields=[
        Field("throttle_time_ms", Int32),
        Field("groups", Array(DescribedGroup)),
    ])
