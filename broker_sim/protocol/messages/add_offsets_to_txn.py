"""AddOffsetsToTxn (key 25), v0-3: a transactional producer will commit a group's offsets
inside its transaction. Flexible from v3.

Request: ``transactional_id, producer_id int64, producer_epoch int16, group_id``.
Response: ``throttle_time_ms, error_code``.
"""

from ..primitives import Int16, Int32, Int64, String
from ..schema import Field, Message

AddOffsetsToTxnRequest = Message("AddOffsetsToTxnRequest", api_key=25, valid="0-3", flexible="3+",
                                 fields=[
                                     Field("transactional_id", String),
                                     Field("producer_id", Int64),
                                     Field("producer_epoch", Int16),
                                     Field("group_id", String),
                                 ])

AddOffsetsToTxnResponse = Message("AddOffsetsToTxnResponse", api_key=25, valid="0-3",
                                  flexible="3+", fields=[
                                      Field("throttle_time_ms", Int32),
                                      Field("error_code", Int16),
                                  ])
