"""DescribeGroups (key 15), v0-5: state, protocol and members of groups.

Flexible from v5.
"""

from ..primitives import Array, Boolean, Bytes, Int16, Int32, NullableString, String
from ..schema import Field, Message, Struct

DescribeGroupsRequest = Message("DescribeGroupsRequest", api_key=15, valid="0-5", flexible="5+", fields=[
    Field("groups", Array(String)),
    Field("include_authorized_operations", Boolean, versions="3+"),
])

DescribedGroupMember = Struct("DescribedGroupMember", [
    Field("member_id", String),
    Field("group_instance_id", NullableString, versions="4+"),
    Field("client_id", String),
    Field("client_host", String),
    Field("member_metadata", Bytes),
    Field("member_assignment", Bytes),
])

DescribedGroup = Struct("DescribedGroup", [
    Field("error_code", Int16),
    Field("group_id", String),
    Field("group_state", String),
    Field("protocol_type", String),
    Field("protocol_data", String),
    Field("members", Array(DescribedGroupMember)),
    Field("authorized_operations", Int32, versions="3+", default=-2147483648),
])

DescribeGroupsResponse = Message("DescribeGroupsResponse", api_key=15, valid="0-5", flexible="5+", fields=[
    Field("throttle_time_ms", Int32, versions="1+"),
    Field("groups", Array(DescribedGroup)),
])
