"""FetchSnapshot (key 59), v0-1, always flexible (KIP-630): a KRaft follower whose fetch was
answered with a snapshot id reads that snapshot in chunks from the leader. Controller
listener only.

Request::

    cluster_id string? (tag 0), replica_id int32, max_bytes int32,
    topics [name string, partitions [partition int32, current_leader_epoch int32,
            snapshot_id {end_offset int64, epoch int32}, position int64,
            replica_directory_id uuid (tag 0, v1+)]]

Response::

    throttle_time_ms int32, error_code int16,
    topics [name string, partitions [index int32, error_code int16,
            snapshot_id {end_offset int64, epoch int32},
            current_leader {leader_id int32, leader_epoch int32} (tag 0, absent: None),
            size int64, position int64, unaligned_records records]],
    node_endpoints [node_id int32, host string, port uint16] (tag 0, v1+)
"""

from ..primitives import Array, Bytes, Int16, Int32, Int64, NullableString, String, Uuid
from ..schema import Field, Message, Struct
from .quorum_epoch import NodeEndpoint

#: A snapshot's identity: the offset it covers up to (exclusive) and the epoch there.
SnapshotId = Struct("SnapshotId", [
    Field("end_offset", Int64, default=-1),
    Field("epoch", Int32, default=-1),
])

#: Who leads, as the answering replica knows it (also Fetch's ``current_leader``).
LeaderIdAndEpoch = Struct("LeaderIdAndEpoch", [
    Field("leader_id", Int32, default=-1),
    Field("leader_epoch", Int32, default=-1),
])

FetchSnapshotPartition = Struct("FetchSnapshotPartition", [
    Field("partition", Int32),
    Field("current_leader_epoch", Int32),
    Field("snapshot_id", SnapshotId, default=SnapshotId()),
    Field("position", Int64),
    Field("replica_directory_id", Uuid, versions="1+", tag=0),
])

FetchSnapshotTopic = Struct("FetchSnapshotTopic", [
    Field("name", String),
    Field("partitions", Array(FetchSnapshotPartition)),
])

FetchSnapshotRequest = Message("FetchSnapshotRequest", api_key=59, valid="0-1", flexible="0+",
                               fields=[
    Field("cluster_id", NullableString, tag=0),
    Field("replica_id", Int32, default=-1),
    Field("max_bytes", Int32, default=0x7FFFFFFF),
    Field("topics", Array(FetchSnapshotTopic)),
])

FetchSnapshotPartitionData = Struct("FetchSnapshotPartitionData", [
    Field("index", Int32),
    Field("error_code", Int16),
    Field("snapshot_id", SnapshotId, default=SnapshotId()),
    Field("current_leader", LeaderIdAndEpoch, tag=0),
    Field("size", Int64),
    Field("position", Int64),
    Field("unaligned_records", Bytes),
])

FetchSnapshotTopicData = Struct("FetchSnapshotTopicData", [
    Field("name", String),
    Field("partitions", Array(FetchSnapshotPartitionData)),
])

FetchSnapshotResponse = Message("FetchSnapshotResponse", api_key=59, valid="0-1", flexible="0+",
                                fields=[
    Field("throttle_time_ms", Int32),
    Field("error_code", Int16),
    Field("topics", Array(FetchSnapshotTopicData)),
    Field("node_endpoints", Array(NodeEndpoint), versions="1+", tag=0),
])
