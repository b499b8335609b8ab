"""OffsetForLeaderEpoch (key 23), v2-3: where a leader epoch ends in the leader's log.

A follower that starts following a new leader asks, for the latest epoch in its own log,
where that epoch ends on the leader; it truncates everything at or above that offset
(KIP-101), so replicas never keep records the new leader does not have.

Request::

    replica_id int32 (v3+, -2 default: a consumer's debugging request; a broker sends its id),
    topics [topic string, partitions [partition int32, current_leader_epoch int32,
            leader_epoch int32]]

Response::

    throttle_time_ms int32,
    topics [topic string, partitions [error_code int16, partition int32,
            leader_epoch int32, end_offset int64]]
"""

from ..primitives import Array, Int16, Int32, Int64, String
from ..schema import Field, Message, Struct

OffsetForLeaderPartition = Struct("OffsetForLeaderPartition", [
    Field("partition", Int32),
    Field("current_leader_epoch", Int32, default=-1),
    Field("leader_epoch", Int32),
])

OffsetForLeaderTopic = Struct("OffsetForLeaderTopic", [
    Field("topic", String),
    Field("partitions", Array(OffsetForLeaderPartition)),
])

OffsetForLeaderEpochRequest = Message("OffsetForLeaderEpochRequest", api_key=23, valid="2-3",
                                      flexible="4+", fields=[
    Field("replica_id", Int32, versions="3+", default=-2),
    Field("topics", Array(OffsetForLeaderTopic)),
])

EpochEndOffset = Struct("EpochEndOffset", [
    Field("error_code", Int16),
    Field("partition", Int32),
    Field("leader_epoch", Int32, default=-1),
    Field("end_offset", Int64, default=-1),
])

OffsetForLeaderTopicResult = Struct("OffsetForLeaderTopicResult", [
    Field("topic", String),
    Field("partitions", Array(EpochEndOffset)),
])

OffsetForLeaderEpochResponse = Message("OffsetForLeaderEpochResponse", api_key=23, valid="2-3",
                                       flexible="4+", fields=[
    Field("throttle_time_ms", Int32),
    Field("topics", Array(OffsetForLeaderTopicResult)),
])
