"""DescribeTransactions (key 65) v0 and ListTransactions (key 66) v0-1, always flexible:
what transaction coordinators hold (``kafka-transactions.sh describe`` / ``list``).

DescribeTransactions: request ``transactional_ids [string]``; response ``throttle_time_ms,
transaction_states [error_code, transactional_id, transaction_state, transaction_timeout_ms,
transaction_start_time_ms, producer_id, producer_epoch, topics [topic, partitions [int32]]]``.

ListTransactions: request ``state_filters [string], producer_id_filters [int64],
duration_filter int64 (v1+, -1: any)``; response ``throttle_time_ms, error_code,
unknown_state_filters [string], transaction_states [transactional_id, producer_id,
transaction_state]``.
"""

from ..primitives import Array, Int16, Int32, Int64, String
from ..schema import Field, Message, Struct

DescribeTransactionsRequest = Message(
    "DescribeTransactionsRequest", api_key=65, valid="0", flexible="0+", fields=[
        Field("transactional_ids", Array(String))])

TopicData = Struct("TopicData", [Field("topic", String), Field("partitions", Array(Int32))])

DescribedTransactionState = Struct("DescribedTransactionState", [
    Field("error_code", Int16),
    Field("transactional_id", String),
    Field("transaction_state", String),
    Field("transaction_timeout_ms", Int32),
    Field("transaction_start_time_ms", Int64),
    Field("producer_id", Int64),
    Field("producer_epoch", Int16),
    Field("topics", Array(TopicData)),
])

DescribeTransactionsResponse = Message(
    "DescribeTransactionsResponse", api_key=65, valid="0", flexible="0+", fields=[
        Field("throttle_time_ms", Int32),
        Field("transaction_states", Array(DescribedTransactionState))])

ListTransactionsRequest = Message(
    "ListTransactionsRequest", api_key=66, valid="0-1", flexible="0+", fields=[
        Field("state_filters", Array(String)),
        Field("producer_id_filters", Array(Int64)),
        Field("duration_filter", Int64, versions="1+", default=-1)])

ListedTransactionState = Struct("ListedTransactionState", [
    Field("transactional_id", String),
    Field("producer_id", Int64),
    Field("transaction_state", String),
])

ListTransactionsResponse = Message(
    "ListTransactionsResponse", api_key=66, valid="0-1", flexible="0+", fields=[
        Field("throttle_time_ms", Int32),
        Field("error_code", Int16),
        Field("unknown_state_filters", Array(String)),
        Field("transaction_states", Array(ListedTransactionState))])
