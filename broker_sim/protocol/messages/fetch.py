"""Fetch (key 1), v4-11: read record batches from partitions. Flexible only from v12.

Request layout (fields by first version)::

    replica_id int32 (-1: a consumer), max_wait_ms int32, min_bytes int32,
    max_bytes int32 (v3+), isolation_level int8 (v4+),
    session_id int32 (v7+), session_epoch int32 (v7+, -1: no session),
    topics [topic string, partitions [partition int32, current_leader_epoch int32 (v9+),
            fetch_offset int64, log_start_offset int64 (v5+), partition_max_bytes int32]],
    forgotten_topics_data [topic string, partitions [int32]] (v7+),
    rack_id string (v11+)

Response layout::

    throttle_time_ms int32, error_code int16 (v7+), session_id int32 (v7+),
    responses [topic string, partitions [partition_index int32, error_code int16,
               high_watermark int64, last_stable_offset int64 (v4+),
               log_start_offset int64 (v5+),
               aborted_transactions nullable [producer_id int64, first_offset int64] (v4+),
               preferred_read_replica int32 (v11+), records records]]
"""

from collections.abc import Sequence
from typing import Protocol

from ..primitives import Array, Int8, Int16, Int32, Int64, Records, String
from ..schema import Field, Message, Struct

FetchPartition = Struct("FetchPartition", [
    Field("partition", Int32),
    Field("current_leader_epoch", Int32, versions="9+", default=-1),
    Field("fetch_offset", Int64),
    Field("log_start_offset", Int64, versions="5+", default=-1),
    Field("partition_max_bytes", Int32),
])

FetchTopic = Struct("FetchTopic", [
    Field("topic", String),
    Field("partitions", Array(FetchPartition)),
])

ForgottenTopic = Struct("ForgottenTopic", [
    Field("topic", String, versions="7+"),
    Field("partitions", Array(Int32), versions="7+"),
])

FetchRequest = Message("FetchRequest", api_key=1, valid="4-11", flexible="12+", fields=[
    Field("replica_id", Int32, default=-1),
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
    Field("aborted_transactions", Array(AbortedTransaction, nullable=True), versions="4+"),
    Field("preferred_read_replica", Int32, versions="11+", default=-1),
    Field("records", Records),
])

FetchableTopicResponse = Struct("FetchableTopicResponse", [
    Field("topic", String),
    Field("partitions", Array(PartitionData)),
])

FetchResponse = Message("FetchResponse", api_key=1, valid="4-11", flexible="12+", fields=[
    Field("throttle_time_ms", Int32, versions="1+"),
    Field("error_code", Int16, versions="7+"),
    Field("session_id", Int32, versions="7+", default=0),
    Field("responses", Array(FetchableTopicResponse)),
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
