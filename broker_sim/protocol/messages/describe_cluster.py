"""DescribeCluster (key 60) v0-1, always flexible: the brokers, the controller and the
cluster id (Kafka's ``Admin.describeCluster``, used by ``kafka-cluster cluster-id`` and
``kafka-broker-api-versions``).

Request::

    include_cluster_authorized_operations bool, endpoint_type int8 (v1+, 1 brokers,
    2 controllers)

Response::

    throttle_time_ms int32, error_code int16, error_message string?,
    endpoint_type int8 (v1+), cluster_id string, controller_id int32,
    brokers [broker_id int32, host string, port int32, rack string?],
    cluster_authorized_operations int32
"""

from ..primitives import Array, Boolean, Int8, Int16, Int32, NullableString, String
from ..schema import Field, Message, Struct

DescribeClusterRequest = Message("DescribeClusterRequest", api_key=60, valid="0-1", flexible="0+",
                                 fields=[
    Field("include_cluster_authorized_operations", Boolean),
    Field("endpoint_type", Int8, versions="1+", default=1),
])

DescribeClusterBroker = Struct("DescribeClusterBroker", [
    Field("broker_id", Int32),
    Field("host", String),
    Field("port", Int32),
    Field("rack", NullableString),
])

DescribeClusterResponse = Message("DescribeClusterResponse", api_key=60, valid="0-1", flexible="0+",
                                  fields=[
    Field("throttle_time_ms", Int32),
    Field("error_code", Int16),
    Field("error_message", NullableString),
    Field("endpoint_type", Int8, versions="1+", default=1),
    Field("cluster_id", String),
    Field("controller_id", Int32, default=-1),
    Field("brokers", Array(DescribeClusterBroker)),
    Field("cluster_authorized_operations", Int32, default=-2147483648),
])
