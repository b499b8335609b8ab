"""FindCoordinator (key 10), v0-2: which broker coordinates a group or transaction.

Request: ``key string, key_type int8 (v1+; 0 group, 1 transaction)``.
Response: ``throttle_time_ms int32 (v1+), error_code int16,
error_message nullable string (v1+), node_id int32, host string, port int32``.
Flexible only from v3.
"""

from ..primitives import Int8, Int16, Int32, NullableString, String
from ..schema import Field, Message

FindCoordinatorRequest = Message("FindCoordinatorRequest", api_key=10, valid="0-2", flexible="3+",
                                 fields=[
    Field("key", String),
    Field("key_type", Int8, versions="1+"),
])

FindCoordinatorResponse = Message("FindCoordinatorResponse", api_key=10, valid="0-2",
                                  flexible="3+", fields=[
    Field("throttle_time_ms", Int32, versions="1+"),
    Field("error_code", Int16),
    Field("error_message", NullableString, versions="1+"),
    Field("node_id", Int32),
    Field("host", String),
    Field("port", Int32),
])
