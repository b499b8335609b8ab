"""UpdateFeatures (key 57) v0-2, always flexible: change the cluster's finalized feature
levels (``kafka-features upgrade/downgrade/disable``).

v1 replaces ``allow_downgrade`` with ``upgrade_type`` (1 upgrade, 2 safe downgrade, 3 unsafe
downgrade) and adds ``validate_only`` (``--dry-run``); v2 answers only the top-level error,
which then stands for every feature named.

Request::

    timeout_ms int32, feature_updates [feature string, max_version_level int16,
        allow_downgrade bool (v0), upgrade_type int8 (v1+, default 1)],
    validate_only bool (v1+)

Response::

    throttle_time_ms int32, error_code int16, error_message string?,
    results [feature string, error_code int16, error_message string?] (v0-1)
"""

from ..primitives import Array, Boolean, Int8, Int16, Int32, NullableString, String
from ..schema import Field, Message, Struct

FeatureUpdateKey = Struct("FeatureUpdateKey", [
    Field("feature", String),
    Field("max_version_level", Int16),
    Field("allow_downgrade", Boolean, versions="0"),
    Field("upgrade_type", Int8, versions="1+", default=1),
])

UpdateFeaturesRequest = Message("UpdateFeaturesRequest", api_key=57, valid="0-2", flexible="0+", fields=[
    Field("timeout_ms", Int32, default=60_000),
    Field("feature_updates", Array(FeatureUpdateKey)),
    Field("validate_only", Boolean, versions="1+"),
])

UpdatableFeatureResult = Struct("UpdatableFeatureResult", [
    Field("feature", String),
    Field("error_code", Int16),
    Field("error_message", NullableString),
])

UpdateFeaturesResponse = Message("UpdateFeaturesResponse", api_key=57, valid="0-2", flexible="0+", fields=[
    Field("throttle_time_ms", Int32),
    Field("error_code", Int16),
    Field("error_message", NullableString),
    Field("results", Array(UpdatableFeatureResult), versions="0-1"),
])
