"""KIP-853's voter changes, always flexible: AddRaftVoter (key 80, v0-1), RemoveRaftVoter
(81, v0) and UpdateRaftVoter (82, v0). An operator's admin client sends the first two to
the active controller (``kafka-metadata-quorum add-controller`` / ``remove-controller``);
a voter sends UpdateRaftVoter to the leader when its listeners or supported kraft.version
change.

AddRaftVoter request::

    cluster_id string?, timeout_ms int32, voter_id int32, voter_directory_id uuid,
    listeners [name string, host string, port uint16], ack_when_committed bool (v1+, true)

RemoveRaftVoter request::

    cluster_id string?, voter_id int32, voter_directory_id uuid

UpdateRaftVoter request::

    cluster_id string?, current_leader_epoch int32, voter_id int32, voter_directory_id uuid,
    listeners [name, host, port uint16],
    kraft_version_feature {min_supported_version int16, max_supported_version int16}

AddRaftVoter and RemoveRaftVoter responses::

    throttle_time_ms int32, error_code int16, error_message string?

UpdateRaftVoter response::

    throttle_time_ms int32, error_code int16,
    current_leader {leader_id int32, leader_epoch int32, host string, port int32}
        (tag 0, absent: None)
"""

from ..primitives import Array, Boolean, Int16, Int32, NullableString, String, Uuid
from ..schema import Field, Message, Struct
from .quorum_epoch import Listener

AddRaftVoterRequest = Message("AddRaftVoterRequest", api_key=80, valid="0-1", flexible="0+", fields=[
    Field("cluster_id", NullableString),
    Field("timeout_ms", Int32),
    Field("voter_id", Int32),
    Field("voter_directory_id", Uuid),
    Field("listeners", Array(Listener)),
    Field("ack_when_committed", Boolean, versions="1+", default=True),
])

AddRaftVoterResponse = Message("AddRaftVoterResponse", api_key=80, valid="0-1", flexible="0+",
                               fields=[
    Field("throttle_time_ms", Int32),
    Field("error_code", Int16),
    Field("error_message", NullableString),
])

RemoveRaftVoterRequest = Message("RemoveRaftVoterRequest", api_key=81, valid="0", flexible="0+",
                                 fields=[
    Field("cluster_id", NullableString),
    Field("voter_id", Int32),
    Field("voter_directory_id", Uuid),
])

RemoveRaftVoterResponse = Message("RemoveRaftVoterResponse", api_key=81, valid="0", flexible="0+",
                                  fields=[
    Field("throttle_time_ms", Int32),
    Field("error_code", Int16),
    Field("error_message", NullableString),
])

KRaftVersionFeature = Struct("KRaftVersionFeature", [
    Field("min_supported_version", Int16),
    Field("max_supported_version", Int16),
])

UpdateRaftVoterRequest = Message("UpdateRaftVoterRequest", api_key=82, valid="0", flexible="0+",
                                 fields=[
    Field("cluster_id", NullableString),
    Field("current_leader_epoch", Int32),
    Field("voter_id", Int32),
    Field("voter_directory_id", Uuid),
    Field("listeners", Array(Listener)),
    Field("kraft_version_feature", KRaftVersionFeature, default=KRaftVersionFeature()),
])

CurrentLeader = Struct("CurrentLeader", [
    Field("leader_id", Int32, default=-1),
    Field("leader_epoch", Int32, default=-1),
    Field("host", String),
    Field("port", Int32),
])

UpdateRaftVoterResponse = Message("UpdateRaftVoterResponse", api_key=82, valid="0", flexible="0+",
                                  fields=[
    Field("throttle_time_ms", Int32),
    Field("error_code", Int16),
    Field("current_leader", CurrentLeader, tag=0),
])
