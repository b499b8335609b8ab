"""DeleteTopics (key 20), v0-3. Flexible only from v4.

Request: ``topic_names [string], timeout_ms int32``.
Response: ``throttle_time_ms int32 (v1+), responses [name string, error_code int16]``.
"""

from ..primitives import Array, Int16, Int32, String
from ..schema import Field, Message, Struct

DeleteTopicsRequest = Message("DeleteTopicsRequest", api_key=20, valid="0-3", flexible="4+", fields=[
    Field("topic_names", Array(String)),
    Field("timeout_ms", Int32),
])

DeletableTopicResult = Struct("DeletableTopicResult", [
    Field("name", String),
    Field("error_code", Int16),
])

DeleteTopicsResponse = Message("DeleteTopicsResponse", api_key=20, valid="0-3", flexible="4+",
                               fields=[
    Field("throttle_time_ms", Int32, versions="1+"),
    Field("responses", Array(DeletableTopicResult)),
])
