"""TxnOffsetCommit (key 28), v0-3: offsets committed inside a transaction, sent to the
group's coordinator; they count only if the transaction commits. Flexible from v3.

Request: ``transactional_id, group_id, producer_id int64, producer_epoch int16,
generation_id int32 (v3+), member_id (v3+), group_instance_id nullable (v3+), topics [name,
partitions [partition_index, committed_offset int64, committed_leader_epoch int32 (v2+),
committed_metadata nullable]]``. Response: ``throttle_time_ms, topics [name, partitions
[partition_index, error_code]]``.
"""

from ..primitives import Array, Int16, Int32, Int64, NullableString, String
from ..schema import Field, Message, Struct

TxnOffsetCommitRequestPartition = Struct("TxnOffsetCommitRequestPartition", [
    Field("partition_index", Int32),
    Field("committed_offset", Int64),
    Field("committed_leader_epoch", Int32, versions="2+", default=-1),
    Field("committed_metadata", NullableString),
])

TxnOffsetCommitRequestTopic = Struct("TxnOffsetCommitRequestTopic", [
    Field("name", String), Field("partitions", Array(TxnOffsetCommitRequestPartition))])

TxnOffsetCommitRequest = Message("TxnOffsetCommitRequest", api_key=28, valid="0-3", flexible="3+",
                                 fields=[
                                     Field("transactional_id", String),
                                     Field("group_id", String),
                                     Field("producer_id", Int64),
                                     Field("producer_epoch", Int16),
                                     Field("generation_id", Int32, versions="3+", default=-1),
                                     Field("member_id", String, versions="3+"),
                                     Field("group_instance_id", NullableString, versions="3+"),
                                     Field("topics", Array(TxnOffsetCommitRequestTopic)),
                                 ])

TxnOffsetCommitResponsePartition = Struct("TxnOffsetCommitResponsePartition", [
    Field("partition_index", Int32), Field("error_code", Int16)])

TxnOffsetCommitResponseTopic = Struct("TxnOffsetCommitResponseTopic", [
    Field("name", String), Field("partitions", Array(TxnOffsetCommitResponsePartition))])

TxnOffsetCommitResponse = Message("TxnOffsetCommitResponse", api_key=28, valid="0-3",
                                  flexible="3+", fields=[
                                      Field("throttle_time_ms", Int32),
                                      Field("topics", Array(TxnOffsetCommitResponseTopic)),
                                  ])
