"""CreateTopics (key 19), v0-4. Flexible only from v5.

Request::

    topics [name string, num_partitions int32, replication_factor int16,
            assignments [partition_index int32, broker_ids [int32]],
            configs [name string, value nullable string]],
    timeout_ms int32 (default 60000), validate_only bool (v1+)

Response::

    throttle_time_ms int32 (v2+),
    topics [name string, error_code int16, error_message nullable string (v1+)]
"""

from ..primitives import Array, Boolean, Int16, Int32, NullableString, String
from ..schema import Field, Message, Struct

CreatableReplicaAssignment = Struct("CreatableReplicaAssignment", [
    Field("partition_index", Int32),
    Field("broker_ids", Array(Int32)),
])

CreatableTopicConfig = Struct("CreatableTopicConfig", [
    Field("name", String),
    Field("value", NullableString),
])

CreatableTopic = Struct("CreatableTopic", [
    Field("name", String),
    Field("num_partitions", Int32),
    Field("replication_factor", Int16),
    Field("assignments", Array(CreatableReplicaAssignment)),
    Field("configs", Array(CreatableTopicConfig)),
])

CreateTopicsRequest = Message("CreateTopicsRequest", api_key=19, valid="0-4", flexible="5+", fields=[
    Field("topics", Array(CreatableTopic)),
    Field("timeout_ms", Int32, default=60000),
    Field("validate_only", Boolean, versions="1+"),
])

CreatableTopicResult = Struct("CreatableTopicResult", [
    Field("name", String),
    Field("error_code", Int16),
    Field("error_message", NullableString, versions="1+"),
])

CreateTopicsResponse = Message("CreateTopicsResponse", api_key=19, valid="0-4", flexible="5+",
                               fields=[
    Field("throttle_time_ms", Int32, versions="2+"),
    Field("topics", Array(CreatableTopicResult)),
])
