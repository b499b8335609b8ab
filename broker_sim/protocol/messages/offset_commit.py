"""OffsetCommit (key 8), v2-9: store a consumer group's offsets. Flexible from v8.

Request::

    group_id string, generation_id_or_member_epoch int32 (v1+), member_id string (v1+),
    group_instance_id nullable string (v7+), retention_time_ms int64 (v2-4),
    topics [name string, partitions [partition_index int32, committed_offset int64,
            committed_leader_epoch int32 (v6+), commit_timestamp int64 (v1 only),
            committed_metadata nullable string]]

Response::

    throttle_time_ms int32 (v3+),
    topics [name string, partitions [partition_index int32, error_code int16]]

``commit_timestamp`` exists only in v1, below our range: it is never on the wire here
and always reads as its default -1.

v8 is the first flexible version (compact encodings, tagged fields). v9 has the same
fields as v8; it is the first version a KIP-848 (consumer protocol) member may use, and
then ``generation_id_or_member_epoch`` carries its member epoch rather than a generation.
"""

from ..primitives import Array, Int16, Int32, Int64, NullableString, String
from ..schema import Field, Message, Struct

OffsetCommitRequestPartition = Struct("OffsetCommitRequestPartition", [
    Field("partition_index", Int32),
    Field("committed_offset", Int64),
    Field("committed_leader_epoch", Int32, versions="6+", default=-1),
    Field("commit_timestamp", Int64, versions="1", default=-1),
    Field("committed_metadata", NullableString),
])

OffsetCommitRequestTopic = Struct("OffsetCommitRequestTopic", [
    Field("name", String),
    Field("partitions", Array(OffsetCommitRequestPartition)),
])

OffsetCommitRequest = Message("OffsetCommitRequest", api_key=8, valid="2-9", flexible="8+", fields=[
    Field("group_id", String),
    Field("generation_id_or_member_epoch", Int32, versions="1+", default=-1),
    Field("member_id", String, versions="1+"),
    Field("group_instance_id", NullableString, versions="7+"),
    Field("retention_time_ms", Int64, versions="2-4", default=-1),
    Field("topics", Array(OffsetCommitRequestTopic)),
])

OffsetCommitResponsePartition = Struct("OffsetCommitResponsePartition", [
    Field("partition_index", Int32),
    Field("error_code", Int16),
])

OffsetCommitResponseTopic = Struct("OffsetCommitResponseTopic", [
    Field("name", String),
    Field("partitions", Array(OffsetCommitResponsePartition)),
])

OffsetCommitResponse = Message("OffsetCommitResponse", api_key=8, valid="2-9", flexible="8+", fields=[
    Field("throttle_time_ms", Int32, versions="3+"),
    Field("topics", Array(OffsetCommitResponseTopic)),
])
