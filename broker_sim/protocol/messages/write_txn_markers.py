"""WriteTxnMarkers (key 27), v0-1: the transaction coordinator asks partition leaders to
end a transaction. Flexible from v1.

Request: ``markers [producer_id int64, producer_epoch int16, transaction_result bool
(true = commit), topics [name, partition_indexes [int32]], coordinator_epoch int32]``.

Response: ``markers [producer_id int64, topics [name, partitions [partition_index int32,
error_code int16]]]``.
"""

from ..primitives import Array, Boolean, Int16, Int32, Int64, String
from ..schema import Field, Message, Struct

WritableTxnMarkerTopic = Struct("WritableTxnMarkerTopic", [
    Field("name", String),
    Field("partition_indexes", Array(Int32)),
])

WritableTxnMarker = Struct("WritableTxnMarker", [
    Field("producer_id", Int64),
    Field("producer_epoch", Int16),
    Field("transaction_result", Boolean),
    Field("topics", Array(WritableTxnMarkerTopic)),
    Field("coordinator_epoch", Int32),
])

WriteTxnMarkersRequest = Message("WriteTxnMarkersRequest", api_key=27, valid="0-1", flexible="1+",
                                 fields=[Field("markers", Array(WritableTxnMarker))])

WritableTxnMarkerPartitionResult = Struct("WritableTxnMarkerPartitionResult", [
    Field("partition_index", Int32),
    Field("error_code", Int16),
])

WritableTxnMarkerTopicResult = Struct("WritableTxnMarkerTopicResult", [
    Field("name", String),
    Field("partitions", Array(WritableTxnMarkerPartitionResult)),
])

WritableTxnMarkerResult = Struct("WritableTxnMarkerResult", [
    Field("producer_id", Int64),
    Field("topics", Array(WritableTxnMarkerTopicResult)),
])

WriteTxnMarkersResponse = Message("WriteTxnMarkersResponse", api_key=27, valid="0-1",
                                  flexible="1+", fields=[
                                      Field("markers", Array(WritableTxnMarkerResult))])
