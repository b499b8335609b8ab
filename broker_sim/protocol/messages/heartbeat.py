"""Heartbeat (key 12), v0-4: a member says it is alive; the answer says whether to rejoin.

Flexible from v4.
"""

from ..primitives import Int16, Int32, NullableString, String
from ..schema import Field, Message

HeartbeatRequest = Message("HeartbeatRequest", api_key=12, valid="0-4", flexible="4+", fields=[
    Field("group_id", String),
    Field("generation_id", Int32),
    Field("member_id", String),
    Field("group_instance_id", NullableString, versions="3+"),
])

HeartbeatResponse = Message("HeartbeatResponse", api_key=12, valid="0-4", flexible="4+", fields=[
    Field("throttle_time_ms", Int32, versions="1+"),
    Field("error_code", Int16),
])
