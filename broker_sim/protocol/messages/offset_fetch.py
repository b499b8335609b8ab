"""OffsetFetch (key 9), v1-5: read a consumer group's committed offsets. Flexible from v6.

Request::

    group_id string,
    topics nullable [name string, partition_indexes [int32]]   (null from v2: all topics)

Response::

    throttle_time_ms int32 (v3+),
    topics [name string, partitions [partition_index int32, committed_offset int64,
            committed_leader_epoch int32 (v5+), metadata nullable string,
            error_code int16]],
    error_code int16 (v2+)
"""

from ..primitives import Array, Int16, Int32, Int64, NullableString, String
from ..schema import Field, Message, Struct

OffsetFetchRequestTopic = Struct("OffsetFetchRequestTopic", [
    Field("name", String),
    Field("partition_indexes", Array(Int32)),
])

OffsetFetchRequest = Message("OffsetFetchRequest", api_key=9, valid="1-5", flexible="6+", fields=[
    Field("group_id", String),
    # Nullable from v2 only; callers must not send null at v1.
    Field("topics", Array(OffsetFetchRequestTopic, nullable=True)),
])

OffsetFetchResponsePartition = Struct("OffsetFetchResponsePartition", [
    Field("partition_index", Int32),
    Field("committed_offset", Int64),
    Field("committed_leader_epoch", Int32, versions="5+", default=-1),
    Field("metadata", NullableString),
    Field("error_code", Int16),
])

OffsetFetchResponseTopic = Struct("OffsetFetchResponseTopic", [
    Field("name", String),
    Field("partitions", Array(OffsetFetchResponsePartition)),
])

OffsetFetchResponse = Message("OffsetFetchResponse", api_key=9, valid="1-5", flexible="6+", fields=[
    Field("throttle_time_ms", Int32, versions="3+"),
    Field("topics", Array(OffsetFetchResponseTopic)),
    Field("error_code", Int16, versions="2+"),
])
