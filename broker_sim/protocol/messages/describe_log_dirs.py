"""DescribeLogDirs (key 35) v1-4: a broker's log directories and the partitions in them
(``kafka-log-dirs.sh --describe``).

v1 is v0; v2 is the first flexible version; v3 adds the top-level ``error_code``; v4 each
directory's ``total_bytes`` and ``usable_bytes``.

Request::

    topics [topic string, partitions [int32]]?   (null: every partition)

Response::

    throttle_time_ms int32, error_code int16 (v3+),
    results [error_code int16, log_dir string,
             topics [name string, partitions [partition_index int32, partition_size int64,
                                               offset_lag int64, is_future_key bool]],
             total_bytes int64 (v4+), usable_bytes int64 (v4+)]
"""

from ..primitives import Array, Boolean, Int16, Int32, Int64, String
from ..schema import Field, Message, Struct

DescribableLogDirTopic = Struct("DescribableLogDirTopic", [
    Field("topic", String),
    Field("partitions", Array(Int32)),
])

DescribeLogDirsRequest = Message("DescribeLogDirsRequest", api_key=35, valid="0-4", flexible="2+",
                                 fields=[
    Field("topics", Array(DescribableLogDirTopic, nullable=True)),
])

DescribeLogDirsPartition = Struct("DescribeLogDirsPartition", [
    Field("partition_index", Int32),
    Field("partition_size", Int64),
    Field("offset_lag", Int64),
    Field("is_future_key", Boolean),
])

DescribeLogDirsTopic = Struct("DescribeLogDirsTopic", [
    Field("name", String),
    Field("partitions", Array(DescribeLogDirsPartition)),
])

DescribeLogDirsResult = Struct("DescribeLogDirsResult", [
    Field("error_code", Int16),
    Field("log_dir", String),
    Field("topics", Array(DescribeLogDirsTopic)),
    Field("total_bytes", Int64, versions="4+", default=-1),
    Field("usable_bytes", Int64, versions="4+", default=-1),
])

DescribeLogDirsResponse = Message("DescribeLogDirsResponse", api_key=35, valid="0-4", flexible="2+",
                                  fields=[
    Field("throttle_time_ms", Int32),
    Field("error_code", Int16, versions="3+"),
    Field("results", Array(DescribeLogDirsResult)),
])
