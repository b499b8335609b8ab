"""OffsetDelete (key 47), v0: delete a group's offsets of topics it no longer reads.

Never flexible.
"""

from ..primitives import Array, Int16, Int32, String
from ..schema import Field, Message, Struct

OffsetDeleteRequestPartition = Struct("OffsetDeleteRequestPartition", [
    Field("partition_index", Int32),
])

OffsetDeleteRequestTopic = Struct("OffsetDeleteRequestTopic", [
    Field("name", String),
    Field("partitions", Array(OffsetDeleteRequestPartition)),
])

OffsetDeleteRequest = Message("OffsetDeleteRequest", api_key=47, valid="0-0", flexible="none", fields=[
    Field("group_id", String),
    Field("topics", Array(OffsetDeleteRequestTopic)),
])

OffsetDeleteResponsePartition = Struct("OffsetDeleteResponsePartition", [
    Field("partition_index", Int32),
    Field("error_code", Int16),
])

OffsetDeleteResponseTopic = Struct("OffsetDeleteResponseTopic", [
    Field("name", String),
    Field("partitions", Array(OffsetDeleteResponsePartition)),
])

OffsetDeleteResponse = Message("OffsetDeleteResponse", api_key=47, valid="0-0", flexible="none", fields=[
    Field("error_code", Int16),
    Field("throttle_time_ms", Int32),
    Field("topics", Array(OffsetDeleteResponseTopic)),
])
