"""DescribeAcls (29), CreateAcls (30) and DeleteAcls (31), v0-3, flexible from v2.

v0 has no pattern type (every ACL is LITERAL); v1 adds it (KIP-290, prefixed ACLs).
Enum values (resource type, pattern type, operation, permission) are Kafka's: see
:mod:`broker_sim.security.acl`.
"""

from ..primitives import Array, Int8, Int16, Int32, NullableString, String
from ..schema import Field, Message, Struct

_FILTER_FIELDS = [
    Field("resource_type_filter", Int8),
    Field("resource_name_filter", NullableString),
    Field("pattern_type_filter", Int8, versions="1+", default=3),
    Field("principal_filter", NullableString),
    Field("host_filter", NullableString),
    Field("operation", Int8),
    Field("permission_type", Int8),
]

DescribeAclsRequest = Message("DescribeAclsRequest", api_key=29, valid="0-3", flexible="2+",
                              fields=list(_FILTER_FIELDS))

AclDescription = Struct("AclDescription", [
    Field("principal", String),
    Field("host", String),
    Field("operation", Int8),
    Field("permission_type", Int8),
])

DescribeAclsResource = Struct("DescribeAclsResource", [
    Field("resource_type", Int8),
    Field("resource_name", String),
    Field("pattern_type", Int8, versions="1+", default=3),
    Field("acls", Array(AclDescription)),
])

DescribeAclsResponse = Message("DescribeAclsResponse", api_key=29, valid="0-3", flexible="2+", fields=[
    Field("throttle_time_ms", Int32),
    Field("error_code", Int16),
    Field("error_message", NullableString),
    Field("resources", Array(DescribeAclsResource)),
])

AclCreation = Struct("AclCreation", [
    Field("resource_type", Int8),
    Field("resource_name", String),
    Field("resource_pattern_type", Int8, versions="1+", default=3),
    Field("principal", String),
    Field("host", String),
    Field("operation", Int8),
    Field("permission_type", Int8),
])

CreateAclsRequest = Message("CreateAclsRequest", api_key=30, valid="0-3", flexible="2+", fields=[
    Field("creations", Array(AclCreation)),
])

AclCreationResult = Struct("AclCreationResult", [
    Field("error_code", Int16),
    Field("error_message", NullableString),
])

CreateAclsResponse = Message("CreateAclsResponse", api_key=30, valid="0-3", flexible="2+", fields=[
    Field("throttle_time_ms", Int32),
    Field("results", Array(AclCreationResult)),
])

DeleteAclsFilter = Struct("DeleteAclsFilter", list(_FILTER_FIELDS))

DeleteAclsRequest = Message("DeleteAclsRequest", api_key=31, valid="0-3", flexible="2+", fields=[
    Field("filters", Array(DeleteAclsFilter)),
])

DeleteAclsMatchingAcl = Struct("DeleteAclsMatchingAcl", [
    Field("error_code", Int16),
    Field("error_message", NullableString),
    Field("resource_type", Int8),
    Field("resource_name", String),
    Field("pattern_type", Int8, versions="1+", default=3),
    Field("principal", String),
    Field("host", String),
    Field("operation", Int8),
    Field("permission_type", Int8),
])

DeleteAclsFilterResult = Struct("DeleteAclsFilterResult", [
    Field("error_code", Int16),
    Field("error_message", NullableString),
    Field("matching_acls", Array(DeleteAclsMatchingAcl)),
])

DeleteAclsResponse = Message("DeleteAclsResponse", api_key=31, valid="0-3", flexible="2+", fields=[
    Field("throttle_time_ms", Int32),
    Field("filter_results", Array(DeleteAclsFilterResult)),
])
