"""OffsetFetch (key 9), v1-9: read consumer groups' committed offsets. Flexible from v6.

Request::

    group_id string (v1-7),
    topics nullable [name string, partition_indexes [int32]]   (v1-7; null from v2: all topics)
    groups [group_id string,                                    (v8+)
            member_id nullable string (v9+), member_epoch int32 (v9+, default -1),
            topics nullable [name string, partition_indexes [int32]]]   (null: all topics)
    require_stable bool (v7+)

Response::

    throttle_time_ms int32 (v3+),
    topics [name string, partitions [partition_index int32, committed_offset int64,
            committed_leader_epoch int32 (v5+), metadata nullable string,
            error_code int16]]                                  (v1-7)
    error_code int16 (v2-7)
    groups [group_id string, topics [... as above, with committed_leader_epoch],
            error_code int16]                                   (v8+)

Versions: v6 switches to the flexible encoding. v7 adds ``require_stable`` (answer
UNSTABLE_OFFSET_COMMIT rather than an offset a transaction may still change). v8 batches:
the request names any number of groups, each with its own topics, and the response
answers each group in its own entry with its own error code, in place of the top-level
group, topics and error code of v1-7. v9 adds each group's ``member_id`` and
``member_epoch``, which a KIP-848 member fills in (a classic or admin client leaves them
null and -1).
"""

from ..primitives import Array, Boolean, Int16, Int32, Int64, NullableString, String
from ..schema import Field, Message, Struct

OffsetFetchRequestTopic = Struct("OffsetFetchRequestTopic", [
    Field("name", String),
    Field("partition_indexes", Array(Int32)),
])

OffsetFetchRequestGroup = Struct("OffsetFetchRequestGroup", [
    Field("group_id", String),
    Field("member_id", NullableString, versions="9+"),
    Field("member_epoch", Int32, versions="9+", default=-1),
    Field("topics", Array(OffsetFetchRequestTopic, nullable=True)),
])

OffsetFetchRequest = Message("OffsetFetchRequest", api_key=9, valid="1-9", flexible="6+", fields=[
    Field("group_id", String, versions="0-7"),
    # Nullable from v2 only; callers must not send null at v1.
    Field("topics", Array(OffsetFetchRequestTopic, nullable=True), versions="0-7"),
    Field("groups", Array(OffsetFetchRequestGroup), versions="8+"),
    Field("require_stable", Boolean, versions="7+"),
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

OffsetFetchResponseGroup = Struct("OffsetFetchResponseGroup", [
    Field("group_id", String),
    Field("topics", Array(OffsetFetchResponseTopic)),
    Field("error_code", Int16),
])

OffsetFetchResponse = Message("OffsetFetchResponse", api_key=9, valid="1-9", flexible="6+", fields=[
    Field("throttle_time_ms", Int32, versions="3+"),
    Field("topics", Array(OffsetFetchResponseTopic), versions="0-7"),
    Field("error_code", Int16, versions="2-7"),
    Field("groups", Array(OffsetFetchResponseGroup), versions="8+"),
])
