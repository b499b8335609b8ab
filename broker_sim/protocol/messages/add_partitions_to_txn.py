"""AddPartitionsToTxn (key 24), v0-3 — the client versions (v4+, batched for brokers, are
not implemented). Flexible from v3.

Request: ``v3_and_below_transactional_id, v3_and_below_producer_id int64,
v3_and_below_producer_epoch int16, v3_and_below_topics [name, partitions [int32]]``.
Response: ``throttle_time_ms, results_by_topic_v3_and_below [name, results_by_partition
[partition_index, partition_error_code]]``. (Kafka's field names: v4+ nests them per
transaction.)
"""

from ..primitives import Array, Int16, Int32, Int64, String
from ..schema import Field, Message, Struct

AddPartitionsToTxnTopic = Struct("AddPartitionsToTxnTopic", [
    Field("name", String), Field("partitions", Array(Int32))])

AddPartitionsToTxnRequest = Message(
    "AddPartitionsToTxnRequest", api_key=24, valid="0-3", flexible="3+", fields=[
        Field("v3_and_below_transactional_id", String),
        Field("v3_and_below_producer_id", Int64),
        Field("v3_and_below_producer_epoch", Int16),
        Field("v3_and_below_topics", Array(AddPartitionsToTxnTopic)),
    ])

AddPartitionsToTxnPartitionResult = Struct("AddPartitionsToTxnPartitionResult", [
    Field("partition_index", Int32), Field("partition_error_code", Int16)])

AddPartitionsToTxnTopicResult = Struct("AddPartitionsToTxnTopicResult", [
    Field("name", String), Field("results_by_partition", Array(AddPartitionsToTxnPartitionResult))])

AddPartitionsToTxnResponse = Message(
    "AddPartitionsToTxnResponse", api_key=24, valid="0-3", flexible="3+", fields=[
        Field("throttle_time_ms", Int32),
        Field("results_by_topic_v3_and_below", Array(AddPartitionsToTxnTopicResult)),
    ])
