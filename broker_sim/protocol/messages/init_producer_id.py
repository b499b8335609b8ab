"""InitProducerId (key 22), v0-1: allocate a producer id and epoch. Flexible only from v2.

Request: ``transactional_id nullable string, transaction_timeout_ms int32``.
Response: ``throttle_time_ms int32, error_code int16, producer_id int64 (default -1),
producer_epoch int16``.
"""

from ..primitives import Int16, Int32, Int64, NullableString
from ..schema import Field, Message

InitProducerIdRequest = Message("InitProducerIdRequest", api_key=22, valid="0-1", flexible="2+",
                                fields=[
    Field("transactional_id", NullableString),
    Field("transaction_timeout_ms", Int32),
])

InitProducerIdResponse = Message("InitProducerIdResponse", api_key=22, valid="0-1", flexible="2+",
                                 fields=[
    Field("throttle_time_ms", Int32),
    Field("error_code", Int16),
    Field("producer_id", Int64, default=-1),
    Field("producer_epoch", Int16),
])
