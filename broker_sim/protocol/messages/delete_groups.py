"""DeleteGroups (key 42), v0-2: delete empty groups and their offsets.

Flexible from v2.
"""

from ..primitives import Array, Int16, Int32, String
from ..schema import Field, Message, Struct

DeleteGroupsRequest = Message("DeleteGroupsRequest", api_key=42, valid="0-2", flexible="2+", fields=[
    Field("groups_names", Array(String)),
])

DeletableGroupResult = Struct("DeletableGroupResult", [
    Field("group_id", String),
    Field("error_code", Int16),
])

DeleteGroupsResponse = Message("DeleteGroupsResponse", api_key=42, valid="0-2", flexible="2+", fields=[
    Field("throttle_time_ms", Int32),
    Field("results", Array(DeletableGroupResult)),
])
