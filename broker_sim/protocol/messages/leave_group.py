"""LeaveGroup (key 13), v0-5: members leave at once instead of timing out.

v0-2 carry one member id; v3+ a batch of members (by member id or group instance id).
Flexible from v4.
"""

from ..primitives import Array, Int16, Int32, NullableString, String
from ..schema import Field, Message, Struct

MemberIdentity = Struct("MemberIdentity", [
    Field("member_id", String, versions="3+"),
    Field("group_instance_id", NullableString, versions="3+"),
    Field("reason", NullableString, versions="5+"),
])

LeaveGroupRequest = Message("LeaveGroupRequest", api_key=13, valid="0-5", flexible="4+", fields=[
    Field("group_id", String),
    Field("member_id", String, versions="0-2"),
    Field("members", Array(MemberIdentity), versions="3+"),
])

MemberResponse = Struct("MemberResponse", [
    Field("member_id", String, versions="3+"),
    Field("group_instance_id", NullableString, versions="3+"),
    Field("error_code", Int16, versions="3+"),
])

LeaveGroupResponse = Message("LeaveGroupResponse", api_key=13, valid="0-5", flexible="4+", fields=[
    Field("throttle_time_ms", Int32, versions="1+"),
    Field("error_code", Int16),
    Field("members", Array(MemberResponse), versions="3+"),
])
