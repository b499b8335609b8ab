"""DescribeQuorum (key 55), v0-2, always flexible: the state of the KRaft quorum of the
metadata log (KIP-595, KIP-836's fetch and caught-up times in v1, KIP-853's directory ids,
node listeners and error messages in v2). ``kafka-metadata-quorum describe --status`` and
``--replication`` and ``Admin.describeMetadataQuorum`` ask it; a controller answers, and a
broker forwards it to the controller.

Request::

    topics [topic_name string, partitions [partition_index int32]]

Response::

    error_code int16, error_message string? (v2+),
    topics [topic_name string, partitions [partition_index int32, error_code int16,
            error_message string? (v2+), leader_id int32, leader_epoch int32,
            high_watermark int64, current_voters [ReplicaState], observers [ReplicaState]]],
    nodes [node_id int32, listeners [name string, host string, port uint16]] (v2+)

    ReplicaState: replica_id int32, replica_directory_id uuid (v2+), log_end_offset int64,
                  last_fetch_timestamp int64 (v1+, -1 unknown),
                  last_caught_up_timestamp int64 (v1+, -1 unknown)
"""

from ..primitives import Array, Int16, Int32, Int64, NullableString, String, Uuid
from ..schema import Field, Message, Struct
from .quorum_epoch import Listener

DescribeQuorumPartition = Struct("DescribeQuorumPartition", [
    Field("partition_index", Int32),
])

DescribeQuorumTopic = Struct("DescribeQuorumTopic", [
    Field("topic_name", String),
    Field("partitions", Array(DescribeQuorumPartition)),
])

DescribeQuorumRequest = Message("DescribeQuorumRequest", api_key=55, valid="0-2", flexible="0+",
                                fields=[
    Field("topics", Array(DescribeQuorumTopic)),
])

ReplicaState = Struct("ReplicaState", [
    Field("replica_id", Int32),
    Field("replica_directory_id", Uuid, versions="2+"),
    Field("log_end_offset", Int64),
    Field("last_fetch_timestamp", Int64, versions="1+", default=-1),
    Field("last_caught_up_timestamp", Int64, versions="1+", default=-1),
])

DescribeQuorumPartitionData = Struct("DescribeQuorumPartitionData", [
    Field("partition_index", Int32),
    Field("error_code", Int16),
    Field("error_message", NullableString, versions="2+"),
    Field("leader_id", Int32),
    Field("leader_epoch", Int32),
    Field("high_watermark", Int64),
    Field("current_voters", Array(ReplicaState)),
    Field("observers", Array(ReplicaState)),
])

DescribeQuorumTopicData = Struct("DescribeQuorumTopicData", [
    Field("topic_name", String),
    Field("partitions", Array(DescribeQuorumPartitionData)),
])

QuorumNode = Struct("QuorumNode", [
    Field("node_id", Int32),
    Field("listeners", Array(Listener)),
])

DescribeQuorumResponse = Message("DescribeQuorumResponse", api_key=55, valid="0-2", flexible="0+",
                                 fields=[
    Field("error_code", Int16),
    Field("error_message", NullableString, versions="2+"),
    Field("topics", Array(DescribeQuorumTopicData)),
    Field("nodes", Array(QuorumNode), versions="2+"),
])
