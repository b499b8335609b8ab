"""InitProducerId (key 22), v0-4: allocate a producer id and epoch, or bump the epoch.

Request: ``transactional_id nullable string, transaction_timeout_ms int32``; from v3 also
``producer_id int64`` and ``producer_epoch int16`` (both default -1): a producer that
already has an id sends it with its current epoch to get the epoch bumped (KIP-360).
Response: ``throttle_time_ms int32, error_code int16, producer_id int64 (default -1),
producer_epoch int16``.

v1 is v0 (throttled responses are sent before throttling), v2 is the first flexible
version, v4 changes nothing on the wire: a client that sends it understands
PRODUCER_FENCED where an older one gets INVALID_PRODUCER_EPOCH.
"""

from ..primitives import Int16, Int32, Int64, NullableString
from ..schema import Field, Message

InitProducerIdRequest = Message("InitProducerIdRequest", api_key=22, valid="0-4", flexible="2+",
                                fields=[
    Field("transactional_id", NullableString),
    Field("transaction_timeout_ms", Int32),
    Field("producer_id", Int64, versions="3+", default=-1),
    Field("producer_epoch", Int16, versions="3+", default=-1),
])

InitProducerIdResponse = Message("InitProducerIdResponse", api_key=22, valid="0-4", flexible="2+",
                                 fields=[
    Field("throttle_time_ms", Int32),
    Field("error_code", Int16),
    Field("producer_id", Int64, default=-1),
    Field("producer_epoch", Int16),
])
