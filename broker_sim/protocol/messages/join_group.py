"""JoinGroup (key 11), v0-9: join a group, or rejoin it for a rebalance.

The request names the protocols the member supports (for consumers: assignors, each with
its subscription); the response names the chosen protocol and, to the leader only, every
member's metadata. Flexible from v6.
"""

from ..primitives import Array, Boolean, Bytes, Int16, Int32, NullableString, String
from ..schema import Field, Message, Struct

JoinGroupRequestProtocol = Struct("JoinGroupRequestProtocol", [
    Field("name", String),
    Field("metadata", Bytes),
])

JoinGroupRequest = Message("JoinGroupRequest", api_key=11, valid="0-9", flexible="6+", fields=[
    Field("group_id", String),
    Field("session_timeout_ms", Int32),
    Field("rebalance_timeout_ms", Int32, versions="1+", default=-1),
    Field("member_id", String),
    Field("group_instance_id", NullableString, versions="5+"),
    Field("protocol_type", String),
    Field("protocols", Array(JoinGroupRequestProtocol)),
    Field("reason", NullableString, versions="8+"),
])

JoinGroupResponseMember = Struct("JoinGroupResponseMember", [
    Field("member_id", String),
    Field("group_instance_id", NullableString, versions="5+"),
    Field("metadata", Bytes),
])

JoinGroupResponse = Message("JoinGroupResponse", api_key=11, valid="0-9", flexible="6+", fields=[
    Field("throttle_time_ms", Int32, versions="2+"),
    Field("error_code", Int16),
    Field("generation_id", Int32, default=-1),
    Field("protocol_type", NullableString, versions="7+"),
    Field("protocol_name", NullableString),
    Field("leader", String),
    Field("skip_assignment", Boolean, versions="9+"),
    Field("member_id", String),
    Field("members", Array(JoinGroupResponseMember)),
])
