"""ApiVersions (key 18): which API versions a broker implements. Flexible from v3.

From v3 the response carries, in tagged fields, the features the broker supports (name,
min and max version) and those finalized for the cluster (name and level, with the epoch
of that finalization): what ``Admin.describeFeatures`` and ``kafka-features.sh describe``
read, and what Kafka's own clients check before using a newer protocol (a producer reads
``transaction.version``). Before v4 a supported feature's min version is never 0 (a v3
reader refuses it, KAFKA-17011).
"""

from ..primitives import Array, Boolean, Int16, Int32, Int64, String
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

SupportedFeatureKey = Struct("SupportedFeatureKey", [
    Field("name", String),
    Field("min_version", Int16),
    Field("max_version", Int16),
])

FinalizedFeatureKey = Struct("FinalizedFeatureKey", [
    Field("name", String),
    Field("max_version_level", Int16),
    Field("min_version_level", Int16),
])

ApiVersionsResponse = Message("ApiVersionsResponse", api_key=18, valid="0-4", flexible="3+", fields=[
    Field("error_code", Int16),
    Field("api_keys", Array(ApiVersion)),
    Field("throttle_time_ms", Int32, versions="1+"),
    Field("supported_features", Array(SupportedFeatureKey), versions="3+", tag=0),
    Field("finalized_features_epoch", Int64, versions="3+", tag=1, default=-1),
    Field("finalized_features", Array(FinalizedFeatureKey), versions="3+", tag=2),
    Field("zk_migration_ready", Boolean, versions="3+", tag=3),
])
