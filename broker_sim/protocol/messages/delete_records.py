"""DeleteRecords (key 21), v0-2: move partitions' log start offsets up.

v1 is v0 (it only changed when a throttled response is sent); v2 is the first flexible
version.

Request::

    topics [name string, partitions [partition_index int32,
                                     offset int64 (-1: the high watermark)]],
    timeout_ms int32

Response::

    throttle_time_ms int32,
    topics [name string, partitions [partition_index int32, low_watermark int64,
                                     error_code int16]]

``low_watermark`` is the smallest log start offset over the partition's replicas once
they all moved (-1 with an error).
"""

from ..primitives import Array, Int16, Int32, Int64, String
from ..schema import Field, Message, Struct

DeleteRecordsPartition = Struct("DeleteRecordsPartition", [
    Field("partition_index", Int32),
    Field("offset", Int64),
])

DeleteRecordsTopic = Struct("DeleteRecordsTopic", [
    Field("name", String),
    Field("partitions", Array(DeleteRecordsPartition)),
])

DeleteRecordsRequest = Message("DeleteRecordsRequest", api_key=21, valid="0-2", flexible="2+",
                               fields=[
    Field("topics", Array(DeleteRecordsTopic)),
    Field("timeout_ms", Int32),
])

DeleteRecordsPartitionResult = Struct("DeleteRecordsPartitionResult", [
    Field("partition_index", Int32),
    Field("low_watermark", Int64),
    Field("error_code", Int16),
])

DeleteRecordsTopicResult = Struct("DeleteRecordsTopicResult", [
    Field("name", String),
    Field("partitions", Array(DeleteRecordsPartitionResult)),
])

DeleteRecordsResponse = Message("DeleteRecordsResponse", api_key=21, valid="0-2", flexible="2+",
                                fields=[
    Field("throttle_time_ms", Int32),
    Field("topics", Array(DeleteRecordsTopicResult)),
])
