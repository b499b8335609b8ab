"""CreatePartitions (key 37), v0-1 (v1 only changes how throttling is reported). Flexible
only from v2.

Request::

    topics [name string, count int32 (the new total),
            assignments nullable [broker_ids [int32]] (one per new partition)],
    timeout_ms int32, validate_only bool

Response::

    throttle_time_ms int32,
    results [name string, error_code int16, error_message nullable string]
"""

from ..primitives import Array, Boolean, Int16, Int32, NullableString, String
from ..schema import Field, Message, Struct

CreatePartitionsAssignment = Struct("CreatePartitionsAssignment", [
    Field("broker_ids", Array(Int32)),
])

CreatePartitionsTopic = Struct("CreatePartitionsTopic", [
    Field("name", String),
    Field("count", Int32),
    Field("assignments", Array(CreatePartitionsAssignment, nullable=True)),
])

CreatePartitionsRequest = Message("CreatePartitionsRequest", api_key=37, valid="0-1",
                                  flexible="2+", fields=[
    Field("topics", Array(CreatePartitionsTopic)),
    Field("timeout_ms", Int32, default=60000),
    Field("validate_only", Boolean),
])

CreatePartitionsTopicResult = Struct("CreatePartitionsTopicResult", [
    Field("name", String),
    Field("error_code", Int16),
    Field("error_message", NullableString),
])

CreatePartitionsResponse = Message("CreatePartitionsResponse", api_key=37, valid="0-1",
                                   flexible="2+", fields=[
    Field("throttle_time_ms", Int32),
    Field("results", Array(CreatePartitionsTopicResult)),
])
