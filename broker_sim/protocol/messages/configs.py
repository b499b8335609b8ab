"""DescribeConfigs (key 32) v0-4, AlterConfigs (key 33) v0-2 and IncrementalAlterConfigs
(key 44) v0-1: reading and changing the configuration of topics and brokers.

Flexible from DescribeConfigs v4, AlterConfigs v2 and IncrementalAlterConfigs v1.

DescribeConfigs request::

    resources [resource_type int8, resource_name string,
               configuration_keys nullable [string] (null: every config)],
    include_synonyms bool (v1+), include_documentation bool (v3+)

DescribeConfigs response::

    throttle_time_ms int32,
    results [error_code int16, error_message nullable string, resource_type int8,
             resource_name string,
             configs [name string, value nullable string (null when sensitive), read_only bool,
                      is_default bool (v0 only), config_source int8 (v1+, -1 unknown),
                      is_sensitive bool, synonyms [name string, value nullable string,
                      source int8] (v1+), config_type int8 (v3+), documentation nullable
                      string (v3+)]]

AlterConfigs request (the given configs *replace* every dynamic config of the resource)::

    resources [resource_type int8, resource_name string,
               configs [name string, value nullable string]],
    validate_only bool

IncrementalAlterConfigs request (each config changed by an operation: 0 SET, 1 DELETE,
2 APPEND, 3 SUBTRACT; the last two only for list configs)::

    resources [resource_type int8, resource_name string,
               configs [name string, config_operation int8, value nullable string]],
    validate_only bool

Both alter responses::

    throttle_time_ms int32,
    responses [error_code int16, error_message nullable string, resource_type int8,
               resource_name string]

Resource types are Kafka's: 2 topic, 4 broker (``""`` names the cluster-wide default).
"""

from ..primitives import Array, Boolean, Int8, Int16, Int32, NullableString, String
from ..schema import Field, Message, Struct

# ---------------------------------------------------------------- DescribeConfigs
DescribeConfigsResource = Struct("DescribeConfigsResource", [
    Field("resource_type", Int8),
    Field("resource_name", String),
    Field("configuration_keys", Array(String, nullable=True)),
])

DescribeConfigsRequest = Message("DescribeConfigsRequest", api_key=32, valid="0-4",
                                 flexible="4+", fields=[
    Field("resources", Array(DescribeConfigsResource)),
    Field("include_synonyms", Boolean, versions="1+", default=False),
    Field("include_documentation", Boolean, versions="3+", default=False),
])

DescribeConfigsSynonym = Struct("DescribeConfigsSynonym", [
    Field("name", String),
    Field("value", NullableString),
    Field("source", Int8),
])

DescribeConfigsResourceResult = Struct("DescribeConfigsResourceResult", [
    Field("name", String),
    Field("value", NullableString),
    Field("read_only", Boolean),
    Field("is_default", Boolean, versions="0", default=False),
    Field("config_source", Int8, versions="1+", default=-1),
    Field("is_sensitive", Boolean),
    Field("synonyms", Array(DescribeConfigsSynonym), versions="1+"),
    Field("config_type", Int8, versions="3+", default=0),
    Field("documentation", NullableString, versions="3+"),
])

DescribeConfigsResult = Struct("DescribeConfigsResult", [
    Field("error_code", Int16),
    Field("error_message", NullableString),
    Field("resource_type", Int8),
    Field("resource_name", String),
    Field("configs", Array(DescribeConfigsResourceResult)),
])

DescribeConfigsResponse = Message("DescribeConfigsResponse", api_key=32, valid="0-4",
                                  flexible="4+", fields=[
    Field("throttle_time_ms", Int32),
    Field("results", Array(DescribeConfigsResult)),
])

# ---------------------------------------------------------------- AlterConfigs
AlterableConfig = Struct("AlterableConfig", [
    Field("name", String),
    Field("value", NullableString),
])

AlterConfigsResource = Struct("AlterConfigsResource", [
    Field("resource_type", Int8),
    Field("resource_name", String),
    Field("configs", Array(AlterableConfig)),
])

AlterConfigsRequest = Message("AlterConfigsRequest", api_key=33, valid="0-2", flexible="2+",
                              fields=[
    Field("resources", Array(AlterConfigsResource)),
    Field("validate_only", Boolean),
])

AlterConfigsResourceResponse = Struct("AlterConfigsResourceResponse", [
    Field("error_code", Int16),
    Field("error_message", NullableString),
    Field("resource_type", Int8),
    Field("resource_name", String),
])

AlterConfigsResponse = Message("AlterConfigsResponse", api_key=33, valid="0-2", flexible="2+",
                               fields=[
    Field("throttle_time_ms", Int32),
    Field("responses", Array(AlterConfigsResourceResponse)),
])

# ---------------------------------------------------------------- IncrementalAlterConfigs
IncrementalAlterableConfig = Struct("IncrementalAlterableConfig", [
    Field("name", String),
    Field("config_operation", Int8),
    Field("value", NullableString),
])

IncrementalAlterConfigsResource = Struct("IncrementalAlterConfigsResource", [
    Field("resource_type", Int8),
    Field("resource_name", String),
    Field("configs", Array(IncrementalAlterableConfig)),
])

IncrementalAlterConfigsRequest = Message("IncrementalAlterConfigsRequest", api_key=44,
                                         valid="0-1", flexible="1+", fields=[
    Field("resources", Array(IncrementalAlterConfigsResource)),
    Field("validate_only", Boolean),
])

IncrementalAlterConfigsResponse = Message("IncrementalAlterConfigsResponse", api_key=44,
                                          valid="0-1", flexible="1+", fields=[
    Field("throttle_time_ms", Int32),
    Field("responses", Array(AlterConfigsResourceResponse)),
])
