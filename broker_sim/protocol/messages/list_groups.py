"""ListGroups (key 16), v0-5: the groups a coordinator holds.

v4 filters by state, v5 by type (classic, consumer). Flexible from v3.
"""

from ..primitives import Array, Int16, Int32, String
from ..schema import Field, Message, Struct

ListGroupsRequest = Message("ListGroupsRequest", api_key=16, valid="0-5", flexible="3+", fields=[
    Field("states_filter", Array(String), versions="4+"),
    Field("types_filter", Array(String), versions="5+"),
])

ListedGroup = Struct("ListedGroup", [
    Field("group_id", String),
    Field("protocol_type", String),
    Field("group_state", String, versions="4+"),
    Field("group_type", String, versions="5+"),
])

ListGroupsResponse = Message("ListGroupsResponse", api_key=16, valid="0-5", flexible="3+", fields=[
    Field("throttle_time_ms", Int32, versions="1+"),
    Field("error_code", Int16),
    Field("groups", Array(ListedGroup)),
])
