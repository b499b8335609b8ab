"""Produce (key 0), v3-8: append record batches to partitions. Flexible only from v9.

Request layout (v3-8)::

    transactional_id  nullable string       (v3+; null unless transactional)
    acks              int16                 (0, 1 or -1)
    timeout_ms        int32
    topic_data        [name string, partition_data [index int32, records records]]

``records`` is an int32-length blob of record batches (null when absent); it is decoded
as a memoryview slice of the frame, not copied.
"""

from collections.abc import Sequence
from typing import Protocol

from ..primitives import Array, Int16, Int32, Int64, NullableString, Records, String
from ..schema import Field, Message, Struct

PartitionProduceData = Struct("PartitionProduceData", [
    Field("index", Int32),
    Field("records", Records),
])

TopicProduceData = Struct("TopicProduceData", [
    Field("name", String),
    Field("partition_data", Array(PartitionProduceData)),
])

ProduceRequest = Message("ProduceRequest", api_key=0, valid="3-8", flexible="9+", fields=[
    Field("transactional_id", NullableString, versions="3+"),
    Field("acks", Int16),
    Field("timeout_ms", Int32),
    Field("topic_data", Array(TopicProduceData)),
])

BatchIndexAndErrorMessage = Struct("BatchIndexAndErrorMessage", [
    Field("batch_index", Int32, versions="8+"),
    Field("batch_index_error_message", NullableString, versions="8+"),
])

PartitionProduceResponse = Struct("PartitionProduceResponse", [
    Field("index", Int32),
    Field("error_code", Int16),
    Field("base_offset", Int64),
    Field("log_append_time_ms", Int64, versions="2+", default=-1),
    Field("log_start_offset", Int64, versions="5+", default=-1),
    Field("record_errors", Array(BatchIndexAndErrorMessage), versions="8+"),
    Field("error_message", NullableString, versions="8+"),
])

TopicProduceResponse = Struct("TopicProduceResponse", [
    Field("name", String),
    Field("partition_responses", Array(PartitionProduceResponse)),
])

ProduceResponse = Message("ProduceResponse", api_key=0, valid="3-8", flexible="9+", fields=[
    Field("responses", Array(TopicProduceResponse)),
    Field("throttle_time_ms", Int32, versions="1+"),
])


# What a decoded message looks like, for the type checker (decoding builds ``schema.Data``;
# these Protocols only describe its attributes). Records arrive as a memoryview of the frame.


class PartitionProduceDataView(Protocol):
    index: int
    records: memoryview | bytes | None


class TopicProduceDataView(Protocol):
    name: str
    partition_data: Sequence[PartitionProduceDataView]


class ProduceRequestView(Protocol):
    transactional_id: str | None
    acks: int
    timeout_ms: int
    topic_data: Sequence[TopicProduceDataView]


class PartitionProduceResponseView(Protocol):
    index: int
    error_code: int
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int
    error_message: str | None


class TopicProduceResponseView(Protocol):
    name: str
    partition_responses: Sequence[PartitionProduceResponseView]


class ProduceResponseView(Protocol):
    responses: Sequence[TopicProduceResponseView]
    throttle_time_ms: int
