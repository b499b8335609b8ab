"""pyq's internal control-plane messages, spoken only between brokers and the controller.

They are not Kafka APIs and use keys outside Kafka's range (10001+), so no Kafka client
can mistake them for its own; brokers never advertise them in ApiVersions. The cluster
image travels as a JSON document inside the heartbeat response: brokers fetch the whole
(small) image whenever its version moves, instead of replaying a metadata log as KRaft
does — simpler, and the image is a few kilobytes for the clusters pyq runs.

BrokerHeartbeat: a broker announces itself (first call = registration; a new
``incarnation_id`` means the process restarted) and learns the current image::

    request:  broker_id int32, host string, port int32, incarnation_id string,
              known_metadata_version int64, endpoints nullable string (JSON: listener
              name -> [host, port]; host/port is the inter-broker listener)
    response: error_code int16, broker_epoch int64, metadata_version int64,
              metadata nullable string (the image as JSON, when newer than known)

BrokerMetadataFetch: a broker long-polls for the next image (as a KRaft broker fetches the
metadata log). The controller parks the request until its image version differs from
``known_metadata_version`` or ``max_wait_ms`` passed; ``known_metadata_version`` is also
the broker's acknowledgement that it has applied that version (the controller answers
CreateTopics and config changes once every live broker acknowledged them). It travels on
a connection of its own, so a parked poll never holds up a heartbeat::

    request:  broker_id int32, broker_epoch int64, known_metadata_version int64,
              max_wait_ms int32
    response: error_code int16, metadata_version int64,
              metadata nullable string (the image as JSON, when newer than known)

AlterPartition: a partition leader asks to shrink or expand the ISR::

    request:  broker_id int32, broker_epoch int64, topic string, partition int32,
              leader_epoch int32, partition_epoch int32, new_isr [int32]
    response: error_code int16, leader_id int32, leader_epoch int32, partition_epoch int32,
              isr [int32]
"""

from ..primitives import Array, Int16, Int32, Int64, NullableString, String
from ..schema import Field, Message

BROKER_HEARTBEAT = 10001
ALTER_PARTITION = 10002
BROKER_METADATA_FETCH = 10003

BrokerHeartbeatRequest = Message("BrokerHeartbeatRequest", api_key=BROKER_HEARTBEAT, valid="0",
                                 flexible="none", fields=[
    Field("broker_id", Int32),
    Field("host", String),
    Field("port", Int32),
    Field("incarnation_id", String),
    Field("known_metadata_version", Int64, default=-1),
    Field("endpoints", NullableString),
])

BrokerHeartbeatResponse = Message("BrokerHeartbeatResponse", api_key=BROKER_HEARTBEAT, valid="0",
                                  flexible="none", fields=[
    Field("error_code", Int16),
    Field("broker_epoch", Int64, default=-1),
    Field("metadata_version", Int64, default=-1),
    Field("metadata", NullableString),
])

AlterPartitionRequest = Message("AlterPartitionRequest", api_key=ALTER_PARTITION, valid="0",
                                flexible="none", fields=[
    Field("broker_id", Int32),
    Field("broker_epoch", Int64),
    Field("topic", String),
    Field("partition", Int32),
    Field("leader_epoch", Int32),
    Field("partition_epoch", Int32),
    Field("new_isr", Array(Int32)),
])

AlterPartitionResponse = Message("AlterPartitionResponse", api_key=ALTER_PARTITION, valid="0",
                                 flexible="none", fields=[
    Field("error_code", Int16),
    Field("leader_id", Int32, default=-1),
    Field("leader_epoch", Int32, default=-1),
    Field("partition_epoch", Int32, default=-1),
    Field("isr", Array(Int32)),
])

BrokerMetadataFetchRequest = Message("BrokerMetadataFetchRequest", api_key=BROKER_METADATA_FETCH,
                                     valid="0", flexible="none", fields=[
    Field("broker_id", Int32),
    Field("broker_epoch", Int64, default=-1),
    Field("known_metadata_version", Int64, default=-1),
    Field("max_wait_ms", Int32, default=500),
])

BrokerMetadataFetchResponse = Message("BrokerMetadataFetchResponse", api_key=BROKER_METADATA_FETCH,
                                      valid="0", flexible="none", fields=[
    Field("error_code", Int16),
    Field("metadata_version", Int64, default=-1),
    Field("metadata", NullableString),
])
