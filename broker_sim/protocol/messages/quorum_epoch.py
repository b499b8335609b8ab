"""The KRaft election RPCs between controllers (controller listener only), after Kafka's
message definitions: Vote (key 52, v0-2, KIP-595, KIP-853's directory ids in v1, KIP-996's
``pre_vote`` in v2), BeginQuorumEpoch (53, v0-1) and EndQuorumEpoch (54, v0-1). Vote is
always flexible; the other two from v1. Every request names one topic-partition (KRaft's
``__cluster_metadata``-0), as a list.

Vote request::

    cluster_id string?, voter_id int32 (v1+),
    topics [topic_name string, partitions [partition_index int32, replica_epoch int32,
            replica_id int32, replica_directory_id uuid (v1+), voter_directory_id uuid (v1+),
            last_offset_epoch int32, last_offset int64, pre_vote bool (v2+)]]

Vote response::

    error_code int16, topics [topic_name, partitions [partition_index int32,
    error_code int16, leader_id int32, leader_epoch int32, vote_granted bool]],
    node_endpoints [node_id int32, host string, port uint16] (tag 0, v1+)

BeginQuorumEpoch request::

    cluster_id string?, voter_id int32 (v1+), topics [topic_name, partitions
    [partition_index int32, voter_directory_id uuid (v1+), leader_id int32, leader_epoch int32]],
    leader_endpoints [name string, host string, port uint16] (v1+)

EndQuorumEpoch request::

    cluster_id string?, topics [topic_name, partitions [partition_index int32,
    leader_id int32, leader_epoch int32, preferred_successors [int32] (v0),
    preferred_candidates [candidate_id int32, candidate_directory_id uuid] (v1+)]],
    leader_endpoints [name, host, port uint16] (v1+)

Both responses::

    error_code int16, topics [topic_name, partitions [partition_index int32, error_code int16,
    leader_id int32, leader_epoch int32]], node_endpoints (tag 0, v1+)
"""

from ..primitives import Array, Boolean, Int16, Int32, Int64, NullableString, String, UInt16, Uuid
from ..schema import Field, Message, Struct

#: Where a leader named in a response can be reached (KIP-853); tagged, so absent when empty.
NodeEndpoint = Struct("NodeEndpoint", [
    Field("node_id", Int32),
    Field("host", String),
    Field("port", UInt16),
])

#: A listener of the sender, by name (KIP-853).
Listener = Struct("Listener", [
    Field("name", String),
    Field("host", String),
    Field("port", UInt16),
])

VotePartition = Struct("VotePartition", [
    Field("partition_index", Int32),
    Field("replica_epoch", Int32),
    Field("replica_id", Int32),
    Field("replica_directory_id", Uuid, versions="1+"),
    Field("voter_directory_id", Uuid, versions="1+"),
    Field("last_offset_epoch", Int32),
    Field("last_offset", Int64),
    Field("pre_vote", Boolean, versions="2+"),
])

VoteTopic = Struct("VoteTopic", [
    Field("topic_name", String),
    Field("partitions", Array(VotePartition)),
])

VoteRequest = Message("VoteRequest", api_key=52, valid="0-2", flexible="0+", fields=[
    Field("cluster_id", NullableString),
    Field("voter_id", Int32, versions="1+", default=-1),
    Field("topics", Array(VoteTopic)),
])

VotePartitionResult = Struct("VotePartitionResult", [
    Field("partition_index", Int32),
    Field("error_code", Int16),
    Field("leader_id", Int32),
    Field("leader_epoch", Int32),
    Field("vote_granted", Boolean),
])

VoteTopicResult = Struct("VoteTopicResult", [
    Field("topic_name", String),
    Field("partitions", Array(VotePartitionResult)),
])

VoteResponse = Message("VoteResponse", api_key=52, valid="0-2", flexible="0+", fields=[
    Field("error_code", Int16),
    Field("topics", Array(VoteTopicResult)),
    Field("node_endpoints", Array(NodeEndpoint), versions="1+", tag=0),
])

BeginQuorumEpochPartition = Struct("BeginQuorumEpochPartition", [
    Field("partition_index", Int32),
    Field("voter_directory_id", Uuid, versions="1+"),
    Field("leader_id", Int32),
    Field("leader_epoch", Int32),
])

BeginQuorumEpochTopic = Struct("BeginQuorumEpochTopic", [
    Field("topic_name", String),
    Field("partitions", Array(BeginQuorumEpochPartition)),
])

BeginQuorumEpochRequest = Message("BeginQuorumEpochRequest", api_key=53, valid="0-1", flexible="1+",
                                  fields=[
    Field("cluster_id", NullableString),
    Field("voter_id", Int32, versions="1+", default=-1),
    Field("topics", Array(BeginQuorumEpochTopic)),
    Field("leader_endpoints", Array(Listener), versions="1+"),
])

#: The answer to BeginQuorumEpoch and EndQuorumEpoch: what the receiver knows of the leader.
QuorumEpochPartitionResult = Struct("QuorumEpochPartitionResult", [
    Field("partition_index", Int32),
    Field("error_code", Int16),
    Field("leader_id", Int32),
    Field("leader_epoch", Int32),
])

QuorumEpochTopicResult = Struct("QuorumEpochTopicResult", [
    Field("topic_name", String),
    Field("partitions", Array(QuorumEpochPartitionResult)),
])

BeginQuorumEpochResponse = Message("BeginQuorumEpochResponse", api_key=53, valid="0-1",
                                   flexible="1+", fields=[
    Field("error_code", Int16),
    Field("topics", Array(QuorumEpochTopicResult)),
    Field("node_endpoints", Array(NodeEndpoint), versions="1+", tag=0),
])

PreferredCandidate = Struct("PreferredCandidate", [
    Field("candidate_id", Int32),
    Field("candidate_directory_id", Uuid),
])

EndQuorumEpochPartition = Struct("EndQuorumEpochPartition", [
    Field("partition_index", Int32),
    Field("leader_id", Int32),
    Field("leader_epoch", Int32),
    Field("preferred_successors", Array(Int32), versions="0"),
    Field("preferred_candidates", Array(PreferredCandidate), versions="1+"),
])

EndQuorumEpochTopic = Struct("EndQuorumEpochTopic", [
    Field("topic_name", String),
    Field("partitions", Array(EndQuorumEpochPartition)),
])

EndQuorumEpochRequest = Message("EndQuorumEpochRequest", api_key=54, valid="0-1", flexible="1+",
                                fields=[
    Field("cluster_id", NullableString),
    Field("topics", Array(EndQuorumEpochTopic)),
    Field("leader_endpoints", Array(Listener), versions="1+"),
])

EndQuorumEpochResponse = Message("EndQuorumEpochResponse", api_key=54, valid="0-1", flexible="1+",
                                 fields=[
    Field("error_code", Int16),
    Field("topics", Array(QuorumEpochTopicResult)),
    Field("node_endpoints", Array(NodeEndpoint), versions="1+", tag=0),
])
