"""Fetch (key 1), v4-18 declared, v4-11 served to clients: read record batches from partitions.
Flexible from v12. Versions 12-18 carry KRaft's fields (a controller fetching the metadata
log from the leader: KIP-595, KIP-903, KIP-853) and topic ids (v13+); brokers advertise and
answer only v4-11 (the spec's cap in :mod:`..api`).

Request layout (fields by first version)::

    replica_id int32 (-1: a consumer), max_wait_ms int32, min_bytes int32,
    max_bytes int32 (v3+), isolation_level int8 (v4+),
    session_id int32 (v7+), session_epoch int32 (v7+, -1: no session),
    topics [topic string, partitions [partition int32, current_leader_epoch int32 (v9+),
            fetch_offset int64, log_start_offset int64 (v5+), partition_max_bytes int32]],
    forgotten_topics_data [topic string, partitions [int32]] (v7+),
    rack_id string (v11+)
    KRaft (v12+): cluster_id string? (tag 0), replica_state {replica_id int32, replica_epoch
    int64} (tag 1, v15+, replacing replica_id), per partition last_fetched_epoch int32,
    replica_directory_id uuid (tag 0, v17+), high_watermark int64 (tag 1, v18+); topics and
    forgotten topics by topic_id uuid from v13

Response layout::

    throttle_time_ms int32, error_code int16 (v7+), session_id int32 (v7+),
    responses [topic string, partitions [partition_index int32, error_code int16,
               high_watermark int64, last_stable_offset int64 (v4+),
               log_start_offset int64 (v5+),
               aborted_transactions nullable [producer_id int64, first_offset int64] (v4+),
               preferred_read_replica int32 (v11+), records records]]
    KRaft (v12+), per partition, tagged (absent: None): diverging_epoch {epoch int32,
    end_offset int64} (tag 0), current_leader {leader_id int32, leader_epoch int32} (tag 1),
    snapshot_id {end_offset int64, epoch int32} (tag 2); node_endpoints [node_id int32,
    host string, port int32, rack string?] (tag 0, v16+); topics by topic_id from v13
"""

from collections.abc import Sequence
from typing import Protocol

from ..primitives import Array, Int8, Int16, Int32, Int64, NullableString, Records, String, Uuid
from ..schema import Field, Message, Struct
from .fetch_snapshot import LeaderIdAndEpoch, SnapshotId

#: KIP-903: who fetches, and the epoch of its broker registration (-1 for a controller).
ReplicaState = Struct("FetchReplicaState", [
    Field("replica_id", Int32, default=-1),
    Field("replica_epoch", Int64, default=-1),
])

#: Where a follower's log diverges from the leader's: truncate to ``end_offset``.
EpochEndOffset = Struct("EpochEndOffset", [
    Field("epoch", Int32, default=-1),
    Field("end_offset", Int64, default=-1),
])

NodeEndpoint = Struct("FetchNodeEndpoint", [
    Field("node_id", Int32),
    Field("host", String),
    Field("port", Int32),
    Field("rack", NullableString),
])

FetchPartition = Struct("FetchPartition", [
    Field("partition", Int32),
    Field("current_leader_epoch", Int32, versions="9+", default=-1),
    Field("fetch_offset", Int64),
    Field("last_fetched_epoch", Int32, versions="12+", default=-1),
    Field("log_start_offset", Int64, versions="5+", default=-1),
    Field("partition_max_bytes", Int32),
    Field("replica_directory_id", Uuid, versions="17+", tag=0),
    Field("high_watermark", Int64, versions="18+", tag=1, default=0x7FFFFFFFFFFFFFFF),
])

FetchTopic = Struct("FetchTopic", [
    Field("topic", String, versions="0-12"),
    Field("topic_id", Uuid, versions="13+"),
    Field("partitions", Array(FetchPartition)),
])

ForgottenTopic = Struct("ForgottenTopic", [
    Field("topic", String, versions="7-12"),
    Field("topic_id", Uuid, versions="13+"),
    Field("partitions", Array(Int32), versions="7+"),
])

FetchRequest = Message("FetchRequest", api_key=1, valid="4-18", flexible="12+", fields=[
    Field("cluster_id", NullableString, versions="12+", tag=0),
    Field("replica_id", Int32, versions="0-14", default=-1),
    Field("replica_state", ReplicaState, versions="15+", tag=1),
    Field("max_wait_ms", Int32),
    Field("min_bytes", Int32),
    Field("max_bytes", Int32, versions="3+", default=0x7FFFFFFF),
    Field("isolation_level", Int8, versions="4+", default=0),
    Field("session_id", Int32, versions="7+", default=0),
    Field("session_epoch", Int32, versions="7+", default=-1),
    Field("topics", Array(FetchTopic)),
    Field("forgotten_topics_data", Array(ForgottenTopic), versions="7+"),
    Field("rack_id", String, versions="11+", default=""),
])

AbortedTransaction = Struct("AbortedTransaction", [
    Field("producer_id", Int64),
    Field("first_offset", Int64),
])

PartitionData = Struct("PartitionData", [
    Field("partition_index", Int32),
    Field("error_code", Int16),
    Field("high_watermark", Int64),
    Field("last_stable_offset", Int64, versions="4+", default=-1),
    Field("log_start_offset", Int64, versions="5+", default=-1),
    Field("diverging_epoch", EpochEndOffset, versions="12+", tag=0),
    Field("current_leader", LeaderIdAndEpoch, versions="12+", tag=1),
    Field("snapshot_id", SnapshotId, versions="12+", tag=2),
    Field("aborted_transactions", Array(AbortedTransaction, nullable=True), versions="4+"),
    Field("preferred_read_replica", Int32, versions="11+", default=-1),
    Field("records", Records),
])

FetchableTopicResponse = Struct("FetchableTopicResponse", [
    Field("topic", String, versions="0-12"),
    Field("topic_id", Uuid, versions="13+"),
    Field("partitions", Array(PartitionData)),
])

FetchResponse = Message("FetchResponse", api_key=1, valid="4-18", flexible="12+", fields=[
    Field("throttle_time_ms", Int32, versions="1+"),
    Field("error_code", Int16, versions="7+"),
    Field("session_id", Int32, versions="7+", default=0),
    Field("responses", Array(FetchableTopicResponse)),
    Field("node_endpoints", Array(NodeEndpoint), versions="16+", tag=0),
])


# What a decoded message looks like, for the type checker (decoding builds ``schema.Data``;
# these Protocols only describe its attributes). Records arrive as a memoryview of the frame.


class FetchPartitionView(Protocol):
    partition: int
    current_leader_epoch: int
    fetch_offset: int
    log_start_offset: int
    partition_max_bytes: int


class FetchTopicView(Protocol):
    topic: str
    partitions: Sequence[FetchPartitionView]


class ForgottenTopicView(Protocol):
    topic: str
    partitions: Sequence[int]


class FetchRequestView(Protocol):
    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int
    session_id: int
    session_epoch: int
    topics: Sequence[FetchTopicView]
    forgotten_topics_data: Sequence[ForgottenTopicView]


class AbortedTransactionView(Protocol):
    producer_id: int
    first_offset: int


class PartitionDataView(Protocol):
    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted_transactions: Sequence[AbortedTransactionView] | None
    records: memoryview | bytes | None


class FetchableTopicResponseView(Protocol):
    topic: str
    partitions: Sequence[PartitionDataView]


class FetchResponseView(Protocol):
    throttle_time_ms: int
    error_code: int
    responses: Sequence[FetchableTopicResponseView]
