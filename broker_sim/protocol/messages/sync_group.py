"""SyncGroup (key 14), v0-5: the leader hands in the assignment, everyone gets theirs.

Flexible from v4.
"""

from ..primitives import Array, Bytes, Int16, Int32, NullableString, String
from ..schema import Field, Message, Struct

SyncGroupRequestAssignment = Struct("SyncGroupRequestAssignment", [
    Field("member_id", String),
    Field("assignment", Bytes),
])

SyncGroupRequest = Message("SyncGroupRequest", api_key=14, valid="0-5", flexible="4+", fields=[
    Field("group_id", String),
    Field("generation_id", Int32),
    Field("member_id", String),
    Field("group_instance_id", NullableString, versions="3+"),
    Field("protocol_type", NullableString, versions="5+"),
    Field("protocol_name", NullableString, versions="5+"),
    Field("assignments", Array(SyncGroupRequestAssignment)),
])

SyncGroupResponse = Message("SyncGroupResponse", api_key=14, valid="0-5", flexible="4+", fields=[
    Field("throttle_time_ms", Int32, versions="1+"),
    Field("error_code", Int16),
    Field("protocol_type", NullableString, versions="5+"),
    Field("protocol_name", NullableString, versions="5+"),
    Field("assignment", Bytes),
])
