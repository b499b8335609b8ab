"""DescribeProducers (key 61) v0, always flexible: the producers a partition leader knows
(``kafka-transactions.sh describe-producers`` and ``find-hanging``).

Request::

    topics [name string, partition_indexes [int32]]

Response::

    throttle_time_ms int32,
    topics [name string, partitions [partition_index int32, error_code int16,
            error_message string?,
            active_producers [producer_id int64, producer_epoch int32, last_sequence int32,
                              last_timestamp int64, coordinator_epoch int32,
                              current_txn_start_offset int64]]]
"""

from ..primitives import Array, Int16, Int32, Int64, NullableString, String
from ..schema import Field, Message, Struct

DescribeProducersTopic = Struct("DescribeProducersTopic", [
    Field("name", String),
    Field("partition_indexes", Array(Int32)),
])

DescribeProducersRequest = Message("DescribeProducersRequest", api_key=61, valid="0", flexible="0+",
                                   fields=[
    Field("topics", Array(DescribeProducersTopic)),
])

ProducerState = Struct("ProducerState", [
    Field("producer_id", Int64),
    Field("producer_epoch", Int32),
    Field("last_sequence", Int32, default=-1),
    Field("last_timestamp", Int64, default=-1),
    Field("coordinator_epoch", Int32),
    Field("current_txn_start_offset", Int64, default=-1),
])

DescribeProducersPartition = Struct("DescribeProducersPartition", [
    Field("partition_index", Int32),
    Field("error_code", Int16),
    Field("error_message", NullableString),
    Field("active_producers", Array(ProducerState)),
])

DescribeProducersTopicResult = Struct("DescribeProducersTopicResult", [
    Field("name", String),
    Field("partitions", Array(DescribeProducersPartition)),
])

DescribeProducersResponse = Message("DescribeProducersResponse", api_key=61, valid="0",
                                    flexible="0+", fields=[
    Field("throttle_time_ms", Int32),
    Field("topics", Array(DescribeProducersTopicResult)),
])
