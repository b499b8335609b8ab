"""The APIs pyq implements, their version ranges, and request/response codecs.

Version selection lives here and nowhere else: :data:`APIS` maps each api key to its
request and response schemas, whose ``valid`` ranges are exactly what the broker
advertises in ApiVersions. Both the broker and the client encode and decode through the
functions below (sans-I/O: bytes in, :class:`~broker_sim.protocol.schema.Data` out).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from .errors import MalformedFrame
from .framing import SIZE_PREFIX, close_frame
from .header import (
    RequestHeader,
    peek_request_header,
    read_request_header,
    read_response_header,
    request_header_version,
    response_header_version,
    write_request_header,
    write_response_header,
)
from .messages.acls import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from .messages.add_offsets_to_txn import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse
from .messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
)
from .messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from .messages.configs import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from .messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from .messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from .messages.controller import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerMetadataFetchRequest,
    BrokerMetadataFetchResponse,
)
from .messages.create_partitions import CreatePartitionsRequest, CreatePartitionsResponse
from .messages.create_topics import CreateTopicsRequest, CreateTopicsResponse
from .messages.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from .messages.delete_records import DeleteRecordsRequest, DeleteRecordsResponse
from .messages.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from .messages.describe_cluster import DescribeClusterRequest, DescribeClusterResponse
from .messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from .messages.describe_log_dirs import DescribeLogDirsRequest, DescribeLogDirsResponse
from .messages.describe_producers import DescribeProducersRequest, DescribeProducersResponse
from .messages.describe_quorum import DescribeQuorumRequest, DescribeQuorumResponse
from .messages.describe_topic_partitions import (
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
)
from .messages.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from .messages.elect_leaders import ElectLeadersRequest, ElectLeadersResponse
from .messages.end_txn import EndTxnRequest, EndTxnResponse
from .messages.fetch import FetchRequest, FetchResponse
from .messages.fetch_snapshot import FetchSnapshotRequest, FetchSnapshotResponse
from .messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from .messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from .messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from .messages.join_group import JoinGroupRequest, JoinGroupResponse
from .messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from .messages.list_groups import ListGroupsRequest, ListGroupsResponse
from .messages.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from .messages.metadata import MetadataRequest, MetadataResponse
from .messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from .messages.offset_delete import OffsetDeleteRequest, OffsetDeleteResponse
from .messages.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from .messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from .messages.produce import ProduceRequest, ProduceResponse
from .messages.quorum_epoch import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    VoteRequest,
    VoteResponse,
)
from .messages.raft_voters import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
)
from .messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from .messages.scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from .messages.sync_group import SyncGroupRequest, SyncGroupResponse
from .messages.txn_offset_commit import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from .messages.update_features import UpdateFeaturesRequest, UpdateFeaturesResponse
from .messages.write_txn_markers import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from .primitives import ExternalBytes, SplicedBuffer
from .schema import Data, Message


class ApiKey:
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    OFFSET_DELETE = 47
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    UPDATE_FEATURES = 57
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    DESCRIBE_TOPIC_PARTITIONS = 75
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82
    # pyq-internal control plane (controller listener only; never advertised)
    BROKER_HEARTBEAT = 10001
    ALTER_PARTITION = 10002
    BROKER_METADATA_FETCH = 10003


@dataclass(frozen=True)
class ApiSpec:
    key: int
    name: str
    request: Message
    response: Message
    #: A lower ceiling than the schemas' own, for a server that answers only older versions.
    cap: int | None = None

    @property
    def min_version(self) -> int:
        return max(self.request.min_version, self.response.min_version)

    @property
    def max_version(self) -> int:
        high = min(self.request.max_version, self.response.max_version)
        return high if self.cap is None else min(high, self.cap)

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


def _spec(name: str, request: Message, response: Message, cap: int | None = None) -> ApiSpec:
    assert request.api_key == response.api_key
    return ApiSpec(request.api_key, name, request, response, cap)


APIS: dict[int, ApiSpec] = {s.key: s for s in [
    _spec("Produce", ProduceRequest, ProduceResponse),
    _spec("Fetch", FetchRequest, FetchResponse, cap=11),  # v12+: KRaft's (RAFT_APIS)
    _spec("ListOffsets", ListOffsetsRequest, ListOffsetsResponse),
    _spec("Metadata", MetadataRequest, MetadataResponse),
    _spec("OffsetCommit", OffsetCommitRequest, OffsetCommitResponse),
    _spec("OffsetFetch", OffsetFetchRequest, OffsetFetchResponse),
    _spec("FindCoordinator", FindCoordinatorRequest, FindCoordinatorResponse),
    _spec("JoinGroup", JoinGroupRequest, JoinGroupResponse),
    _spec("Heartbeat", HeartbeatRequest, HeartbeatResponse),
    _spec("LeaveGroup", LeaveGroupRequest, LeaveGroupResponse),
    _spec("SyncGroup", SyncGroupRequest, SyncGroupResponse),
    _spec("DescribeGroups", DescribeGroupsRequest, DescribeGroupsResponse),
    _spec("ListGroups", ListGroupsRequest, ListGroupsResponse),
    _spec("SaslHandshake", SaslHandshakeRequest, SaslHandshakeResponse),
    _spec("ApiVersions", ApiVersionsRequest, ApiVersionsResponse),
    _spec("CreateTopics", CreateTopicsRequest, CreateTopicsResponse),
    _spec("DeleteTopics", DeleteTopicsRequest, DeleteTopicsResponse),
    _spec("DeleteRecords", DeleteRecordsRequest, DeleteRecordsResponse),
    _spec("InitProducerId", InitProducerIdRequest, InitProducerIdResponse),
    _spec("OffsetForLeaderEpoch", OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse),
    _spec("AddPartitionsToTxn", AddPartitionsToTxnRequest, AddPartitionsToTxnResponse),
    _spec("AddOffsetsToTxn", AddOffsetsToTxnRequest, AddOffsetsToTxnResponse),
    _spec("EndTxn", EndTxnRequest, EndTxnResponse),
    _spec("WriteTxnMarkers", WriteTxnMarkersRequest, WriteTxnMarkersResponse),
    _spec("TxnOffsetCommit", TxnOffsetCommitRequest, TxnOffsetCommitResponse),
    _spec("DescribeAcls", DescribeAclsRequest, DescribeAclsResponse),
    _spec("CreateAcls", CreateAclsRequest, CreateAclsResponse),
    _spec("DeleteAcls", DeleteAclsRequest, DeleteAclsResponse),
    _spec("DescribeConfigs", DescribeConfigsRequest, DescribeConfigsResponse),
    _spec("AlterConfigs", AlterConfigsRequest, AlterConfigsResponse),
    _spec("DescribeLogDirs", DescribeLogDirsRequest, DescribeLogDirsResponse),
    _spec("SaslAuthenticate", SaslAuthenticateRequest, SaslAuthenticateResponse),
    _spec("CreatePartitions", CreatePartitionsRequest, CreatePartitionsResponse),
    _spec("DescribeUserScramCredentials", DescribeUserScramCredentialsRequest,
          DescribeUserScramCredentialsResponse),
    _spec("AlterUserScramCredentials", AlterUserScramCredentialsRequest,
          AlterUserScramCredentialsResponse),
    _spec("DeleteGroups", DeleteGroupsRequest, DeleteGroupsResponse),
    _spec("ElectLeaders", ElectLeadersRequest, ElectLeadersResponse),
    _spec("IncrementalAlterConfigs", IncrementalAlterConfigsRequest,
          IncrementalAlterConfigsResponse),
    _spec("OffsetDelete", OffsetDeleteRequest, OffsetDeleteResponse),
    _spec("UpdateFeatures", UpdateFeaturesRequest, UpdateFeaturesResponse),
    _spec("DescribeCluster", DescribeClusterRequest, DescribeClusterResponse),
    _spec("DescribeProducers", DescribeProducersRequest, DescribeProducersResponse),
    _spec("DescribeTransactions", DescribeTransactionsRequest, DescribeTransactionsResponse),
    _spec("ListTransactions", ListTransactionsRequest, ListTransactionsResponse),
    _spec("ConsumerGroupHeartbeat", ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse),
    _spec("ConsumerGroupDescribe", ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse),
    _spec("DescribeTopicPartitions", DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse),
    # forwarded to the controller
    _spec("DescribeQuorum", DescribeQuorumRequest, DescribeQuorumResponse),
    _spec("AddRaftVoter", AddRaftVoterRequest, AddRaftVoterResponse),
    _spec("RemoveRaftVoter", RemoveRaftVoterRequest, RemoveRaftVoterResponse),
]}

#: The controller's listener: the internal control plane plus what brokers forward to it
#: (topic creation, growth and deletion, leader elections, config changes, SCRAM credential
#: and ACL changes, DescribeQuorum, voter changes), the legacy offset journal (ListGroups, OffsetFetch up
#: to v7, the last version with one group per request), ApiVersions, and DescribeCluster for
#: an admin client bootstrapped from the controllers (``--bootstrap-controller``).
CONTROLLER_APIS: dict[int, ApiSpec] = {s.key: s for s in [
    _spec("BrokerHeartbeat", BrokerHeartbeatRequest, BrokerHeartbeatResponse),
    _spec("AlterPartition", AlterPartitionRequest, AlterPartitionResponse),
    _spec("BrokerMetadataFetch", BrokerMetadataFetchRequest, BrokerMetadataFetchResponse),
    _spec("CreateTopics", CreateTopicsRequest, CreateTopicsResponse),
    _spec("DeleteTopics", DeleteTopicsRequest, DeleteTopicsResponse),
    _spec("CreatePartitions", CreatePartitionsRequest, CreatePartitionsResponse),
    _spec("ListGroups", ListGroupsRequest, ListGroupsResponse),
    _spec("OffsetFetch", OffsetFetchRequest, OffsetFetchResponse, cap=7),
    _spec("AlterUserScramCredentials", AlterUserScramCredentialsRequest,
          AlterUserScramCredentialsResponse),
    _spec("CreateAcls", CreateAclsRequest, CreateAclsResponse),
    _spec("DeleteAcls", DeleteAclsRequest, DeleteAclsResponse),
    _spec("AlterConfigs", AlterConfigsRequest, AlterConfigsResponse),
    _spec("IncrementalAlterConfigs", IncrementalAlterConfigsRequest,
          IncrementalAlterConfigsResponse),
    _spec("ElectLeaders", ElectLeadersRequest, ElectLeadersResponse),
    _spec("ApiVersions", ApiVersionsRequest, ApiVersionsResponse),
    _spec("DescribeQuorum", DescribeQuorumRequest, DescribeQuorumResponse),
    _spec("DescribeCluster", DescribeClusterRequest, DescribeClusterResponse),
    _spec("AddRaftVoter", AddRaftVoterRequest, AddRaftVoterResponse),
    _spec("RemoveRaftVoter", RemoveRaftVoterRequest, RemoveRaftVoterResponse),
]}


#: KRaft's RPCs between controllers (KIP-595, KIP-630, KIP-853): elections, the metadata
#: log's replication by Fetch (every declared version, KRaft's fields from v12) and
#: FetchSnapshot, and voter changes. Codecs only: a controller that serves them adds them
#: to what its listener decodes and advertises (``CONTROLLER_APIS | RAFT_APIS``); a broker
#: never advertises them.
RAFT_APIS: dict[int, ApiSpec] = {s.key: s for s in [
    _spec("Fetch", FetchRequest, FetchResponse),
    _spec("Vote", VoteRequest, VoteResponse),
    _spec("BeginQuorumEpoch", BeginQuorumEpochRequest, BeginQuorumEpochResponse),
    _spec("EndQuorumEpoch", EndQuorumEpochRequest, EndQuorumEpochResponse),
    _spec("DescribeQuorum", DescribeQuorumRequest, DescribeQuorumResponse),
    _spec("FetchSnapshot", FetchSnapshotRequest, FetchSnapshotResponse),
    _spec("AddRaftVoter", AddRaftVoterRequest, AddRaftVoterResponse),
    _spec("RemoveRaftVoter", RemoveRaftVoterRequest, RemoveRaftVoterResponse),
    _spec("UpdateRaftVoter", UpdateRaftVoterRequest, UpdateRaftVoterResponse),
]}


class UnknownApiKey(MalformedFrame):
    def __init__(self, api_key: int) -> None:
        super().__init__(f"unknown api key {api_key}")
        self.api_key = api_key


class UnsupportedApiVersion(MalformedFrame):
    def __init__(self, header: RequestHeader, spec: ApiSpec) -> None:
        super().__init__(f"{spec.name} v{header.api_version} is not supported "
                         f"(supported: v{spec.min_version}-v{spec.max_version})")
        self.header = header


def spec_for(api_key: int, apis: dict[int, ApiSpec] | None = None) -> ApiSpec:
    spec = (APIS if apis is None else apis).get(api_key)
    if spec is None and apis is None:  # a client of the controller encodes these
        spec = CONTROLLER_APIS.get(api_key) or RAFT_APIS.get(api_key)
    if spec is None:
        raise UnknownApiKey(api_key)
    return spec


def supported_versions(apis: dict[int, ApiSpec] = APIS) -> list[Data]:
    """The ApiVersions ``api_keys`` list: exactly what this codec implements."""
    return [Data(api_key=s.key, min_version=s.min_version, max_version=s.max_version)
            for s in sorted(apis.values(), key=lambda s: s.key)]


def encode_request(api_key: int, version: int, correlation_id: int, client_id: str | None,
                   body: Any) -> bytearray:
    spec = spec_for(api_key)
    flexible = spec.request.is_flexible(version)
    out = bytearray(SIZE_PREFIX)
    write_request_header(out, RequestHeader(api_key, version, correlation_id, client_id),
                         request_header_version(flexible))
    spec.request.encode_into(out, version, body)
    return close_frame(out)


def decode_request(payload: Any, apis: dict[int, ApiSpec] = APIS) -> tuple[RequestHeader, Data]:
    """Decode one request frame (without its size prefix).

    Raises UnknownApiKey / UnsupportedApiVersion (after the header is known, so the
    caller can still answer ApiVersions) or MalformedFrame.
    """
    buf = memoryview(payload)
    api_key, version, _ = peek_request_header(buf)
    spec = apis.get(api_key)
    if spec is None:
        raise UnknownApiKey(api_key)
    if not spec.supports(version):
        # The header version of an unknown version is unknowable; v1 is enough to
        # identify the client for the UNSUPPORTED_VERSION answer.
        header, _ = read_request_header(buf, 1)
        raise UnsupportedApiVersion(header, spec)
    flexible = spec.request.is_flexible(version)
    header, pos = read_request_header(buf, request_header_version(flexible))
    return header, spec.request.decode(version, buf, pos)


def encode_response(api_key: int, version: int, correlation_id: int, body: Any) -> bytearray:
    spec = spec_for(api_key)
    flexible = spec.response.is_flexible(version)
    out = bytearray(SIZE_PREFIX)
    write_response_header(out, correlation_id, response_header_version(api_key, flexible))
    spec.response.encode_into(out, version, body)
    return close_frame(out)


_SIZE = struct.Struct(">i")
#: A framed response: one buffer, or (zero-copy) buffers and file regions in wire order.
ResponseParts = list[bytes | bytearray | memoryview | ExternalBytes]


def encode_response_parts(api_key: int, version: int, correlation_id: int,
                          body: Any) -> bytearray | ResponseParts:
    """Like :func:`encode_response`, but values that are :class:`ExternalBytes` (records in
    a segment file) are not copied in: the frame comes back as a list of parts, the
    encoded bytes between splice points and the external values, in wire order, with the
    size prefix counting them all. Without external values it is one ``bytearray``."""
    spec = spec_for(api_key)
    flexible = spec.response.is_flexible(version)
    out = SplicedBuffer(SIZE_PREFIX)
    write_response_header(out, correlation_id, response_header_version(api_key, flexible))
    spec.response.encode_into(out, version, body)
    if not out.splices:
        return close_frame(out)
    external = sum(len(value) for _, value in out.splices)
    _SIZE.pack_into(out, 0, len(out) - 4 + external)
    view = memoryview(out)
    parts: ResponseParts = []
    start = 0
    for pos, value in out.splices:
        if pos > start:
            parts.append(view[start:pos])
        parts.append(value)
        start = pos
    if start < len(out):
        parts.append(view[start:])
    return parts


def decode_response(api_key: int, version: int, payload: Any) -> tuple[int, Data]:
    spec = spec_for(api_key)
    buf = memoryview(payload)
    flexible = spec.response.is_flexible(version)
    correlation_id, pos = read_response_header(buf, response_header_version(api_key, flexible))
    return correlation_id, spec.response.decode(version, buf, pos)
