"""ElectLeaders (key 43) v0-2: move partitions' leadership (``kafka-leader-election.sh``).

v1 adds ``election_type`` (KIP-460: 0 preferred, 1 unclean) and the top-level
``error_code``; v2 is the first flexible version.

Request::

    election_type int8 (v1+), topic_partitions [topic string, partitions [int32]]?
    (null: every partition), timeout_ms int32

Response::

    throttle_time_ms int32, error_code int16 (v1+),
    replica_election_results [topic string,
        partition_result [partition_id int32, error_code int16, error_message string?]]
"""

from ..primitives import Array, Int8, Int16, Int32, NullableString, String
from ..schema import Field, Message, Struct

ElectLeadersTopicPartitions = Struct("ElectLeadersTopicPartitions", [
    Field("topic", String),
    Field("partitions", Array(Int32)),
])

ElectLeadersRequest = Message("ElectLeadersRequest", api_key=43, valid="0-2", flexible="2+", fields=[
    Field("election_type", Int8, versions="1+"),
    Field("topic_partitions", Array(ElectLeadersTopicPartitions, nullable=True)),
    Field("timeout_ms", Int32, default=60_000),
])

ElectLeadersPartitionResult = Struct("ElectLeadersPartitionResult", [
    Field("partition_id", Int32),
    Field("error_code", Int16),
    Field("error_message", NullableString),
])

ReplicaElectionResult = Struct("ReplicaElectionResult", [
    Field("topic", String),
    Field("partition_result", Array(ElectLeadersPartitionResult)),
])

ElectLeadersResponse = Message("ElectLeadersResponse", api_key=43, valid="0-2", flexible="2+", fields=[
    Field("throttle_time_ms", Int32),
    Field("error_code", Int16, versions="1+"),
    Field("replica_election_results", Array(ReplicaElectionResult)),
])
