"""FindCoordinator (key 10), v0-4: which broker coordinates a group or transaction.

``key_type`` (v1+) is 0 for a group, 1 for a transactional id. v0-3 ask for one key and get
one coordinator; v4 asks for a batch (``coordinator_keys``) and answers each in
``coordinators``. Flexible from v3.
"""

from ..primitives import Array, Int8, Int16, Int32, NullableString, String
from ..schema import Field, Message, Struct

FindCoordinatorRequest = Message("FindCoordinatorRequest", api_key=10, valid="0-4", flexible="3+", fields=[
    Field("key", String, versions="0-3"),
    Field("key_type", Int8, versions="1+"),
    Field("coordinator_keys", Array(String), versions="4+"),
])

Coordinator = Struct("Coordinator", [
    Field("key", String, versions="4+"),
    Field("node_id", Int32, versions="4+"),
    Field("host", String, versions="4+"),
    Field("port", Int32, versions="4+"),
    Field("error_code", Int16, versions="4+"),
    Field("error_message", NullableString, versions="4+"),
])

FindCoordinatorResponse = Message("FindCoordinatorResponse", api_key=10, valid="0-4", flexible="3+", fields=[
    Field("throttle_time_ms", Int32, versions="1+"),
    Field("error_code", Int16, versions="0-3"),
    Field("error_message", NullableString, versions="1-3"),
    Field("node_id", Int32, versions="0-3"),
    Field("host", String, versions="0-3"),
    Field("port", Int32, versions="0-3"),
    Field("coordinators", Array(Coordinator), versions="4+"),
])
