"""EndTxn (key 26), v0-3: commit or abort a transaction. Flexible from v3.

Request: ``transactional_id, producer_id int64, producer_epoch int16, committed bool``.
Response: ``throttle_time_ms, error_code``.
"""

from ..primitives import Boolean, Int16, Int32, Int64, String
from ..schema import Field, Message

EndTxnRequest = Message("EndTxnRequest", api_key=26, valid="0-3", flexible="3+", fields=[
    Field("transactional_id", String),
    Field("producer_id", Int64),
    Field("producer_epoch", Int16),
    Field("committed", Boolean),
])

EndTxnResponse = Message("EndTxnResponse", api_key=26, valid="0-3", flexible="3+", fields=[
    Field("throttle_time_ms", Int32),
    Field("error_code", Int16),
])
