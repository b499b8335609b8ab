"""ApiVersions (key 18): which API versions a broker implements. Flexible from v3."""

from ..primitives import Array, Int16, Int32, String
from ..schema import Field, Message, Struct

ApiVersionsRequest = Message("ApiVersionsRequest", api_key=18, valid="0-4", flexible="3+", fields=[
    Field("client_software_name", String, versions="3+"),
    Field("client_software_version", String, versions="3+"),
])

ApiVersion = Struct("ApiVersion", [
    Field("api_key", Int16),
    Field("min_version", Int16),
    Field("max_version", Int16),
])

ApiVersionsResponse = Message("ApiVersionsResponse", api_key=18, valid="0-4", flexible="3+", fields=[
    Field("error_code", Int16),
    Field("api_keys", Array(ApiVersion)),
    Field("throttle_time_ms", Int32, versions="1+"),
])
