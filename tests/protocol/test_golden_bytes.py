"""Golden bytes written by hand from the Kafka protocol guide, checked in both directions.

Every expected byte string below is spelled out field by field (big-endian integers,
int16-length strings, int32-count arrays, int32-length records; compact uvarint
``length + 1`` forms plus a tagged-field count in flexible versions). None of it was
produced by our encoder: ``encode(value) == golden`` and ``decode(golden) == value``.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from broker_sim.protocol.api import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from broker_sim.protocol.header import RequestHeader
from broker_sim.protocol.messages.acls import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from broker_sim.protocol.messages.add_offsets_to_txn import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
)
from broker_sim.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
)
from broker_sim.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from broker_sim.protocol.messages.configs import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from broker_sim.protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from broker_sim.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from broker_sim.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
)
from broker_sim.protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsResponse
from broker_sim.protocol.messages.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from broker_sim.protocol.messages.delete_records import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
)
from broker_sim.protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from broker_sim.protocol.messages.describe_cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from broker_sim.protocol.messages.describe_groups import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from broker_sim.protocol.messages.describe_log_dirs import (
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)
from broker_sim.protocol.messages.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
)
from broker_sim.protocol.messages.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from broker_sim.protocol.messages.elect_leaders import ElectLeadersRequest, ElectLeadersResponse
from broker_sim.protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
from broker_sim.protocol.messages.fetch import FetchRequest, FetchResponse
from broker_sim.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from broker_sim.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from broker_sim.protocol.messages.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from broker_sim.protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse
from broker_sim.protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from broker_sim.protocol.messages.list_groups import ListGroupsRequest, ListGroupsResponse
from broker_sim.protocol.messages.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from broker_sim.protocol.messages.metadata import MetadataRequest, MetadataResponse
from broker_sim.protocol.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from broker_sim.protocol.messages.offset_delete import OffsetDeleteRequest, OffsetDeleteResponse
from broker_sim.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from broker_sim.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from broker_sim.protocol.messages.produce import ProduceRequest, ProduceResponse
from broker_sim.protocol.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from broker_sim.protocol.messages.scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from broker_sim.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from broker_sim.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from broker_sim.protocol.messages.write_txn_markers import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from broker_sim.protocol.schema import Message
from tests.protocol.golden_kraft import CASES as KRAFT_CASES
from tests.protocol.golden_topic_pages_and_features import CASES as TOPIC_PAGES_AND_FEATURES_CASES
from tests.protocol.protocol_samples import plain


def h(text: str) -> bytes:
    """Hex digits with ``#`` comments and whitespace ignored."""
    return bytes.fromhex("".join(line.split("#", 1)[0] for line in text.splitlines()))


def one_topic(**fields: Any) -> list[dict[str, Any]]:
    return [{"name": "t", **fields}]


#: A topic id for the Metadata v10+ cases: bytes 01 23 .. ef, twice.
TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")


# ---------------------------------------------------------------------------- bodies

CASES: list[tuple[str, Message, int, dict[str, Any], bytes]] = [
    # ---------------------------------------------------------------- ApiVersions (18)
    ("api_versions_req_v0", ApiVersionsRequest, 0, {}, b""),
    ("api_versions_req_v3", ApiVersionsRequest, 3,
     {"client_software_name": "pyq", "client_software_version": "0.1"}, h("""
        04 70 79 71       # client_software_name: compact string, uvarint 3+1, "pyq"
        04 30 2e 31       # client_software_version: compact string "0.1"
        00                # tagged fields: none
     """)),
    ("api_versions_resp_v0", ApiVersionsResponse, 0,
     {"error_code": 0, "api_keys": [{"api_key": 0, "min_version": 3, "max_version": 8},
                                    {"api_key": 18, "min_version": 0, "max_version": 4}]}, h("""
        00 00             # error_code 0
        00 00 00 02       # api_keys: int32 count 2
        00 00 00 03 00 08 # api_key 0 (Produce), min_version 3, max_version 8
        00 12 00 00 00 04 # api_key 18 (ApiVersions), min_version 0, max_version 4
     """)),
    ("api_versions_resp_v1", ApiVersionsResponse, 1,
     {"error_code": 0, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}],
      "throttle_time_ms": 100}, h("""
        00 00             # error_code 0
        00 00 00 01       # api_keys: count 1
        00 12 00 00 00 04 # api_key 18, 0..4
        00 00 00 64       # throttle_time_ms 100
     """)),
    ("api_versions_resp_v3", ApiVersionsResponse, 3,
     {"error_code": 0, "api_keys": [{"api_key": 0, "min_version": 3, "max_version": 8},
                                    {"api_key": 18, "min_version": 0, "max_version": 4}]}, h("""
        00 00             # error_code 0
        03                # api_keys: compact array, uvarint 2+1
        00 00 00 03 00 08 # api_key 0, min 3, max 8
        00                #   tagged fields of the entry: none
        00 12 00 00 00 04 # api_key 18, min 0, max 4
        00                #   tagged fields of the entry: none
        00 00 00 00       # throttle_time_ms 0
        00                # tagged fields: none
     """)),
    ("api_versions_resp_v4", ApiVersionsResponse, 4,
     {"error_code": 0, "api_keys": [], "throttle_time_ms": 0,
      "supported_features": [{"name": "g", "min_version": 0, "max_version": 1}],
      "finalized_features_epoch": 5,
      "finalized_features": [{"name": "g", "max_version_level": 1, "min_version_level": 1}]},
     h("""
        00 00             # error_code 0
        01                # api_keys: empty
        00 00 00 00       # throttle_time_ms 0
        03                # tagged fields: 3
        00 08             #   tag 0 supported_features, 8 bytes:
        02 02 67          #     1 feature, name "g"
        00 00 00 01 00    #     min_version 0, max_version 1, tagged fields
        01 08             #   tag 1 finalized_features_epoch, 8 bytes:
        00 00 00 00 00 00 00 05
        02 08             #   tag 2 finalized_features, 8 bytes:
        02 02 67          #     1 feature, name "g"
        00 01 00 01 00    #     max_version_level 1, min_version_level 1, tagged fields
     """)),
    # ---------------------------------------------------------------------- Produce (0)
    ("produce_req_v3", ProduceRequest, 3,
     {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
         {"name": "t", "partition_data": [{"index": 0, "records": b"\x01\x02\x03\x04\x05"}]}]},
     h("""
        ff ff             # transactional_id: null (int16 -1)
        ff ff             # acks -1 (all in-sync replicas)
        00 00 75 30       # timeout_ms 30000
        00 00 00 01       # topic_data: count 1
        00 01 74          #   name "t"
        00 00 00 01       #   partition_data: count 1
        00 00 00 00       #     index 0
        00 00 00 05       #     records: int32 size 5
        01 02 03 04 05    #     records bytes (opaque to the codec)
     """)),
    ("produce_req_v7_txn_null_records", ProduceRequest, 7,
     {"transactional_id": "tx", "acks": 1, "timeout_ms": 1000, "topic_data": [
         {"name": "t", "partition_data": [{"index": 3, "records": None}]}]}, h("""
        00 02 74 78       # transactional_id "tx"
        00 01             # acks 1
        00 00 03 e8       # timeout_ms 1000
        00 00 00 01       # topic_data: count 1
        00 01 74          #   name "t"
        00 00 00 01       #   partition_data: count 1
        00 00 00 03       #     index 3
        ff ff ff ff       #     records: null (int32 -1)
     """)),
    ("produce_resp_v3", ProduceResponse, 3,
     {"responses": [{"name": "t", "partition_responses": [
         {"index": 0, "error_code": 0, "base_offset": 42}]}], "throttle_time_ms": 0}, h("""
        00 00 00 01              # responses: count 1
        00 01 74                 #   name "t"
        00 00 00 01              #   partition_responses: count 1
        00 00 00 00              #     index 0
        00 00                    #     error_code 0
        00 00 00 00 00 00 00 2a  #     base_offset 42
        ff ff ff ff ff ff ff ff  #     log_append_time_ms -1 (default: CreateTime topic)
        00 00 00 00              # throttle_time_ms 0
     """)),
    ("produce_resp_v8", ProduceResponse, 8,
     {"responses": [{"name": "t", "partition_responses": [
         {"index": 0, "error_code": 87, "base_offset": -1, "log_start_offset": 0,
          "record_errors": [{"batch_index": 1, "batch_index_error_message": "bad"}],
          "error_message": None}]}], "throttle_time_ms": 0}, h("""
        00 00 00 01              # responses: count 1
        00 01 74                 #   name "t"
        00 00 00 01              #   partition_responses: count 1
        00 00 00 00              #     index 0
        00 57                    #     error_code 87 INVALID_RECORD
        ff ff ff ff ff ff ff ff  #     base_offset -1
        ff ff ff ff ff ff ff ff  #     log_append_time_ms -1
        00 00 00 00 00 00 00 00  #     log_start_offset 0
        00 00 00 01              #     record_errors: count 1
        00 00 00 01              #       batch_index 1
        00 03 62 61 64           #       batch_index_error_message "bad"
        ff ff                    #     error_message: null
        00 00 00 00              # throttle_time_ms 0
     """)),
    # ------------------------------------------------------------------------ Fetch (1)
    ("fetch_req_v4", FetchRequest, 4,
     {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 52428800,
      "isolation_level": 1, "topics": [{"topic": "t", "partitions": [
          {"partition": 2, "fetch_offset": 10, "partition_max_bytes": 1048576}]}]}, h("""
        ff ff ff ff              # replica_id -1 (a consumer)
        00 00 01 f4              # max_wait_ms 500
        00 00 00 01              # min_bytes 1
        03 20 00 00              # max_bytes 52428800
        01                       # isolation_level 1 READ_COMMITTED
        00 00 00 01              # topics: count 1
        00 01 74                 #   topic "t"
        00 00 00 01              #   partitions: count 1
        00 00 00 02              #     partition 2
        00 00 00 00 00 00 00 0a  #     fetch_offset 10
        00 10 00 00              #     partition_max_bytes 1048576
     """)),
    ("fetch_req_v11", FetchRequest, 11,
     {"max_wait_ms": 500, "min_bytes": 1, "max_bytes": 52428800,
      "topics": [{"topic": "t", "partitions": [
          {"partition": 0, "current_leader_epoch": 5, "fetch_offset": 10,
           "partition_max_bytes": 1048576}]}],
      "forgotten_topics_data": [{"topic": "u", "partitions": [1, 3]}], "rack_id": "r1"}, h("""
        ff ff ff ff              # replica_id -1 (default)
        00 00 01 f4              # max_wait_ms 500
        00 00 00 01              # min_bytes 1
        03 20 00 00              # max_bytes 52428800
        00                       # isolation_level 0 (default)
        00 00 00 00              # session_id 0 (default)
        ff ff ff ff              # session_epoch -1 (default: full fetch, no session)
        00 00 00 01              # topics: count 1
        00 01 74                 #   topic "t"
        00 00 00 01              #   partitions: count 1
        00 00 00 00              #     partition 0
        00 00 00 05              #     current_leader_epoch 5
        00 00 00 00 00 00 00 0a  #     fetch_offset 10
        ff ff ff ff ff ff ff ff  #     log_start_offset -1 (default)
        00 10 00 00              #     partition_max_bytes 1048576
        00 00 00 01              # forgotten_topics_data: count 1
        00 01 75                 #   topic "u"
        00 00 00 02              #   partitions: count 2
        00 00 00 01 00 00 00 03  #     1, 3
        00 02 72 31              # rack_id "r1"
     """)),
    ("fetch_resp_v4", FetchResponse, 4,
     {"throttle_time_ms": 0, "responses": [{"topic": "t", "partitions": [
         {"partition_index": 0, "error_code": 0, "high_watermark": 100,
          "last_stable_offset": 90,
          "aborted_transactions": [{"producer_id": 7, "first_offset": 80}],
          "records": b"abc"}]}]}, h("""
        00 00 00 00              # throttle_time_ms 0
        00 00 00 01              # responses: count 1
        00 01 74                 #   topic "t"
        00 00 00 01              #   partitions: count 1
        00 00 00 00              #     partition_index 0
        00 00                    #     error_code 0
        00 00 00 00 00 00 00 64  #     high_watermark 100
        00 00 00 00 00 00 00 5a  #     last_stable_offset 90
        00 00 00 01              #     aborted_transactions: count 1
        00 00 00 00 00 00 00 07  #       producer_id 7
        00 00 00 00 00 00 00 50  #       first_offset 80
        00 00 00 03              #     records: int32 size 3
        61 62 63                 #     records bytes "abc"
     """)),
    ("fetch_resp_v11_nulls", FetchResponse, 11,
     {"throttle_time_ms": 10, "error_code": 0, "session_id": 42, "responses": [
         {"topic": "t", "partitions": [
             {"partition_index": 0, "error_code": 1, "high_watermark": 100,
              "last_stable_offset": 100, "log_start_offset": 0,
              "aborted_transactions": None, "records": None}]}]}, h("""
        00 00 00 0a              # throttle_time_ms 10
        00 00                    # error_code 0
        00 00 00 2a              # session_id 42
        00 00 00 01              # responses: count 1
        00 01 74                 #   topic "t"
        00 00 00 01              #   partitions: count 1
        00 00 00 00              #     partition_index 0
        00 01                    #     error_code 1 OFFSET_OUT_OF_RANGE
        00 00 00 00 00 00 00 64  #     high_watermark 100
        00 00 00 00 00 00 00 64  #     last_stable_offset 100
        00 00 00 00 00 00 00 00  #     log_start_offset 0
        ff ff ff ff              #     aborted_transactions: null
        ff ff ff ff              #     preferred_read_replica -1 (default)
        ff ff ff ff              #     records: null
     """)),
    # ------------------------------------------------------------------ ListOffsets (2)
    ("list_offsets_req_v1", ListOffsetsRequest, 1,
     {"replica_id": -1, "topics": one_topic(partitions=[
         {"partition_index": 0, "timestamp": -2}])}, h("""
        ff ff ff ff              # replica_id -1
        00 00 00 01              # topics: count 1
        00 01 74                 #   name "t"
        00 00 00 01              #   partitions: count 1
        00 00 00 00              #     partition_index 0
        ff ff ff ff ff ff ff fe  #     timestamp -2 (earliest)
     """)),
    ("list_offsets_req_v5", ListOffsetsRequest, 5,
     {"replica_id": -1, "isolation_level": 1, "topics": one_topic(partitions=[
         {"partition_index": 0, "timestamp": -1}])}, h("""
        ff ff ff ff              # replica_id -1
        01                       # isolation_level 1
        00 00 00 01              # topics: count 1
        00 01 74                 #   name "t"
        00 00 00 01              #   partitions: count 1
        00 00 00 00              #     partition_index 0
        ff ff ff ff              #     current_leader_epoch -1 (default)
        ff ff ff ff ff ff ff ff  #     timestamp -1 (latest)
     """)),
    ("list_offsets_resp_v1", ListOffsetsResponse, 1,
     {"topics": one_topic(partitions=[
         {"partition_index": 0, "error_code": 0, "offset": 42}])}, h("""
        00 00 00 01              # topics: count 1
        00 01 74                 #   name "t"
        00 00 00 01              #   partitions: count 1
        00 00 00 00              #     partition_index 0
        00 00                    #     error_code 0
        ff ff ff ff ff ff ff ff  #     timestamp -1 (default)
        00 00 00 00 00 00 00 2a  #     offset 42
     """)),
    ("list_offsets_resp_v4", ListOffsetsResponse, 4,
     {"throttle_time_ms": 0, "topics": one_topic(partitions=[
         {"partition_index": 0, "error_code": 0, "timestamp": 1000, "offset": 42,
          "leader_epoch": 3}])}, h("""
        00 00 00 00              # throttle_time_ms 0
        00 00 00 01              # topics: count 1
        00 01 74                 #   name "t"
        00 00 00 01              #   partitions: count 1
        00 00 00 00              #     partition_index 0
        00 00                    #     error_code 0
        00 00 00 00 00 00 03 e8  #     timestamp 1000
        00 00 00 00 00 00 00 2a  #     offset 42
        00 00 00 03              #     leader_epoch 3
     """)),
    # --------------------------------------------------------------------- Metadata (3)
    ("metadata_req_v0", MetadataRequest, 0, {"topics": [{"name": "t"}]}, h("""
        00 00 00 01       # topics: count 1
        00 01 74          #   name "t"
     """)),
    ("metadata_req_v1_all_topics", MetadataRequest, 1, {"topics": None}, h("""
        ff ff ff ff       # topics: null (all topics)
     """)),
    ("metadata_req_v4", MetadataRequest, 4,
     {"topics": None, "allow_auto_topic_creation": False}, h("""
        ff ff ff ff       # topics: null
        00                # allow_auto_topic_creation false
     """)),
    ("metadata_req_v8", MetadataRequest, 8,
     {"topics": [{"name": "t"}], "include_topic_authorized_operations": True}, h("""
        00 00 00 01       # topics: count 1
        00 01 74          #   name "t"
        01                # allow_auto_topic_creation true (default)
        00                # include_cluster_authorized_operations false
        01                # include_topic_authorized_operations true
     """)),
    ("metadata_resp_v0", MetadataResponse, 0,
     {"brokers": [{"node_id": 1, "host": "h", "port": 9092}],
      "topics": [{"error_code": 0, "name": "t", "partitions": [
          {"error_code": 0, "partition_index": 0, "leader_id": 1,
           "replica_nodes": [1], "isr_nodes": [1]}]}]}, h("""
        00 00 00 01       # brokers: count 1
        00 00 00 01       #   node_id 1
        00 01 68          #   host "h"
        00 00 23 84       #   port 9092
        00 00 00 01       # topics: count 1
        00 00             #   error_code 0
        00 01 74          #   name "t"
        00 00 00 01       #   partitions: count 1
        00 00             #     error_code 0
        00 00 00 00       #     partition_index 0
        00 00 00 01       #     leader_id 1
        00 00 00 01       #     replica_nodes: count 1
        00 00 00 01       #       1
        00 00 00 01       #     isr_nodes: count 1
        00 00 00 01       #       1
     """)),
    ("metadata_resp_v8", MetadataResponse, 8,
     {"throttle_time_ms": 0, "brokers": [{"node_id": 1, "host": "h", "port": 9092}],
      "cluster_id": "clu", "controller_id": 1,
      "topics": [{"error_code": 0, "name": "t", "is_internal": False, "partitions": [
          {"error_code": 0, "partition_index": 0, "leader_id": 1, "leader_epoch": 0,
           "replica_nodes": [1], "isr_nodes": [1], "offline_replicas": []}]}]}, h("""
        00 00 00 00       # throttle_time_ms 0
        00 00 00 01       # brokers: count 1
        00 00 00 01       #   node_id 1
        00 01 68          #   host "h"
        00 00 23 84       #   port 9092
        ff ff             #   rack: null
        00 03 63 6c 75    # cluster_id "clu"
        00 00 00 01       # controller_id 1
        00 00 00 01       # topics: count 1
        00 00             #   error_code 0
        00 01 74          #   name "t"
        00                #   is_internal false
        00 00 00 01       #   partitions: count 1
        00 00             #     error_code 0
        00 00 00 00       #     partition_index 0
        00 00 00 01       #     leader_id 1
        00 00 00 00       #     leader_epoch 0
        00 00 00 01       #     replica_nodes: count 1
        00 00 00 01       #       1
        00 00 00 01       #     isr_nodes: count 1
        00 00 00 01       #       1
        00 00 00 00       #     offline_replicas: count 0
        80 00 00 00       #   topic_authorized_operations INT32_MIN (default)
        80 00 00 00       # cluster_authorized_operations INT32_MIN (default)
     """)),
    ("metadata_req_v9", MetadataRequest, 9,
     {"topics": [{"name": "t"}], "allow_auto_topic_creation": False}, h("""
        02                # topics: compact, 1 + 1
        02 74             #   name "t" (compact)
        00                #   tagged fields
        00                # allow_auto_topic_creation false
        00                # include_cluster_authorized_operations false
        00                # include_topic_authorized_operations false
        00                # tagged fields
     """)),
    ("metadata_req_v10_by_name", MetadataRequest, 10,
     {"topics": [{"name": "t"}], "allow_auto_topic_creation": False}, h("""
        02                # topics: 1 + 1
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  # topic_id: zero (by name; before the name)
        02 74             #   name "t"
        00                #   tagged fields
        00                # allow_auto_topic_creation false
        00                # include_cluster_authorized_operations false (v8-10 only)
        00                # include_topic_authorized_operations false
        00                # tagged fields
     """)),
    ("metadata_req_v12_by_id", MetadataRequest, 12,
     {"topics": [{"topic_id": TOPIC_ID, "name": None}], "allow_auto_topic_creation": False}, h("""
        02                # topics: 1 + 1
        01 23 45 67 89 ab cd ef 01 23 45 67 89 ab cd ef  # topic_id
        00                #   name: null (look the id up)
        00                #   tagged fields
        00                # allow_auto_topic_creation false
        00                # include_topic_authorized_operations false (no cluster flag from v11)
        00                # tagged fields
     """)),
    ("metadata_resp_v10", MetadataResponse, 10,
     {"throttle_time_ms": 0, "brokers": [{"node_id": 1, "host": "h", "port": 9092}],
      "cluster_id": "clu", "controller_id": 1,
      "topics": [{"error_code": 0, "name": "t", "topic_id": TOPIC_ID, "is_internal": True,
                  "partitions": [{"error_code": 0, "partition_index": 0, "leader_id": 1,
                                  "leader_epoch": 3, "replica_nodes": [1], "isr_nodes": [1],
                                  "offline_replicas": []}]}]}, h("""
        00 00 00 00       # throttle_time_ms 0
        02                # brokers: 1 + 1
        00 00 00 01       #   node_id 1
        02 68             #   host "h"
        00 00 23 84       #   port 9092
        00                #   rack: null
        00                #   tagged fields
        04 63 6c 75       # cluster_id "clu"
        00 00 00 01       # controller_id 1
        02                # topics: 1 + 1
        00 00             #   error_code 0
        02 74             #   name "t"
        01 23 45 67 89 ab cd ef 01 23 45 67 89 ab cd ef  # topic_id (after the name)
        01                #   is_internal true
        02                #   partitions: 1 + 1
        00 00             #     error_code 0
        00 00 00 00       #     partition_index 0
        00 00 00 01       #     leader_id 1
        00 00 00 03       #     leader_epoch 3
        02 00 00 00 01    #     replica_nodes [1]
        02 00 00 00 01    #     isr_nodes [1]
        01                #     offline_replicas []
        00                #     tagged fields
        80 00 00 00       #   topic_authorized_operations INT32_MIN
        00                #   tagged fields
        80 00 00 00       # cluster_authorized_operations INT32_MIN (v8-10 only)
        00                # tagged fields
     """)),
    ("metadata_resp_v12_unknown_id", MetadataResponse, 12,
     {"throttle_time_ms": 0, "brokers": [], "cluster_id": None, "controller_id": -1,
      "topics": [{"error_code": 100, "name": None, "topic_id": TOPIC_ID, "is_internal": False,
                  "partitions": []}]}, h("""
        00 00 00 00       # throttle_time_ms 0
        01                # brokers: 0 + 1
        00                # cluster_id: null
        ff ff ff ff       # controller_id -1
        02                # topics: 1 + 1
        00 64             #   error_code 100 UNKNOWN_TOPIC_ID
        00                #   name: null (nullable from v12)
        01 23 45 67 89 ab cd ef 01 23 45 67 89 ab cd ef  # topic_id, echoed
        00                #   is_internal false
        01                #   partitions: 0 + 1
        80 00 00 00       #   topic_authorized_operations INT32_MIN
        00                #   tagged fields
        00                # tagged fields (no cluster_authorized_operations from v11)
     """)),
    # ----------------------------------------------------------------- OffsetCommit (8)
    ("offset_commit_req_v2", OffsetCommitRequest, 2,
     {"group_id": "g", "generation_id_or_member_epoch": 1, "member_id": "m",
      "topics": one_topic(partitions=[
          {"partition_index": 0, "committed_offset": 5, "committed_metadata": ""}])}, h("""
        00 01 67                 # group_id "g"
        00 00 00 01              # generation_id_or_member_epoch 1
        00 01 6d                 # member_id "m"
        ff ff ff ff ff ff ff ff  # retention_time_ms -1 (default: broker retention)
        00 00 00 01              # topics: count 1
        00 01 74                 #   name "t"
        00 00 00 01              #   partitions: count 1
        00 00 00 00              #     partition_index 0
        00 00 00 00 00 00 00 05  #     committed_offset 5
        00 00                    #     committed_metadata ""
     """)),
    ("offset_commit_req_v7", OffsetCommitRequest, 7,
     {"group_id": "g", "generation_id_or_member_epoch": 1, "member_id": "m",
      "topics": one_topic(partitions=[
          {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": 2,
           "committed_metadata": None}])}, h("""
        00 01 67                 # group_id "g"
        00 00 00 01              # generation_id_or_member_epoch 1
        00 01 6d                 # member_id "m"
        ff ff                    # group_instance_id: null
        00 00 00 01              # topics: count 1
        00 01 74                 #   name "t"
        00 00 00 01              #   partitions: count 1
        00 00 00 00              #     partition_index 0
        00 00 00 00 00 00 00 05  #     committed_offset 5
        00 00 00 02              #     committed_leader_epoch 2
        ff ff                    #     committed_metadata: null
     """)),
    ("offset_commit_resp_v2", OffsetCommitResponse, 2,
     {"topics": one_topic(partitions=[{"partition_index": 0, "error_code": 0}])}, h("""
        00 00 00 01       # topics: count 1
        00 01 74          #   name "t"
        00 00 00 01       #   partitions: count 1
        00 00 00 00       #     partition_index 0
        00 00             #     error_code 0
     """)),
    ("offset_commit_resp_v3", OffsetCommitResponse, 3,
     {"throttle_time_ms": 5,
      "topics": one_topic(partitions=[{"partition_index": 1, "error_code": 22}])}, h("""
        00 00 00 05       # throttle_time_ms 5
        00 00 00 01       # topics: count 1
        00 01 74          #   name "t"
        00 00 00 01       #   partitions: count 1
        00 00 00 01       #     partition_index 1
        00 16             #     error_code 22 ILLEGAL_GENERATION
     """)),
    ("offset_commit_req_v9", OffsetCommitRequest, 9,
     {"group_id": "g", "generation_id_or_member_epoch": 4, "member_id": "m",
      "topics": one_topic(partitions=[
          {"partition_index": 0, "committed_offset": 5, "committed_metadata": None}])}, h("""
        02 67                    # group_id "g" (compact)
        00 00 00 04              # generation_id_or_member_epoch 4 (a KIP-848 member epoch)
        02 6d                    # member_id "m"
        00                       # group_instance_id: null
        02                       # topics: 1 + 1
        02 74                    #   name "t"
        02                       #   partitions: 1 + 1
        00 00 00 00              #     partition_index 0
        00 00 00 00 00 00 00 05  #     committed_offset 5
        ff ff ff ff              #     committed_leader_epoch -1 (default)
        00                       #     committed_metadata: null
        00                       #     tagged fields
        00                       #   tagged fields
        00                       # tagged fields
     """)),
    ("offset_commit_resp_v8", OffsetCommitResponse, 8,
     {"throttle_time_ms": 0,
      "topics": one_topic(partitions=[{"partition_index": 0, "error_code": 0}])}, h("""
        00 00 00 00       # throttle_time_ms 0
        02                # topics: 1 + 1
        02 74             #   name "t"
        02                #   partitions: 1 + 1
        00 00 00 00       #     partition_index 0
        00 00             #     error_code 0
        00                #     tagged fields
        00                #   tagged fields
        00                # tagged fields
     """)),
    # ------------------------------------------------------------------ OffsetFetch (9)
    ("offset_fetch_req_v1", OffsetFetchRequest, 1,
     {"group_id": "g", "topics": one_topic(partition_indexes=[0])}, h("""
        00 01 67          # group_id "g"
        00 00 00 01       # topics: count 1
        00 01 74          #   name "t"
        00 00 00 01       #   partition_indexes: count 1
        00 00 00 00       #     0
     """)),
    ("offset_fetch_req_v2_all", OffsetFetchRequest, 2, {"group_id": "g", "topics": None}, h("""
        00 01 67          # group_id "g"
        ff ff ff ff       # topics: null (all committed offsets of the group)
     """)),
    ("offset_fetch_resp_v1", OffsetFetchResponse, 1,
     {"topics": one_topic(partitions=[
         {"partition_index": 0, "committed_offset": 5, "metadata": "", "error_code": 0}])},
     h("""
        00 00 00 01              # topics: count 1
        00 01 74                 #   name "t"
        00 00 00 01              #   partitions: count 1
        00 00 00 00              #     partition_index 0
        00 00 00 00 00 00 00 05  #     committed_offset 5
        00 00                    #     metadata ""
        00 00                    #     error_code 0
     """)),
    ("offset_fetch_resp_v5", OffsetFetchResponse, 5,
     {"throttle_time_ms": 0, "topics": one_topic(partitions=[
         {"partition_index": 0, "committed_offset": -1, "metadata": None,
          "error_code": 0}]), "error_code": 0}, h("""
        00 00 00 00              # throttle_time_ms 0
        00 00 00 01              # topics: count 1
        00 01 74                 #   name "t"
        00 00 00 01              #   partitions: count 1
        00 00 00 00              #     partition_index 0
        ff ff ff ff ff ff ff ff  #     committed_offset -1 (nothing committed)
        ff ff ff ff              #     committed_leader_epoch -1 (default)
        ff ff                    #     metadata: null
        00 00                    #     error_code 0
        00 00                    # error_code 0
     """)),
    ("offset_fetch_req_v7", OffsetFetchRequest, 7,
     {"group_id": "g", "topics": None, "require_stable": True}, h("""
        02 67             # group_id "g" (compact)
        00                # topics: null (all)
        01                # require_stable true
        00                # tagged fields
     """)),
    ("offset_fetch_req_v8_two_groups", OffsetFetchRequest, 8,
     {"groups": [{"group_id": "g1", "topics": one_topic(partition_indexes=[0])},
                 {"group_id": "g2", "topics": None}], "require_stable": False}, h("""
        03                # groups: 2 + 1 (no top-level group_id/topics from v8)
        03 67 31          #   group_id "g1"
        02                #   topics: 1 + 1
        02 74             #     name "t"
        02 00 00 00 00    #     partition_indexes [0]
        00                #     tagged fields
        00                #   tagged fields
        03 67 32          #   group_id "g2"
        00                #   topics: null (all)
        00                #   tagged fields
        00                # require_stable false
        00                # tagged fields
     """)),
    ("offset_fetch_req_v9", OffsetFetchRequest, 9,
     {"groups": [{"group_id": "g", "member_id": "m", "member_epoch": 3, "topics": None}],
      "require_stable": True}, h("""
        02                # groups: 1 + 1
        02 67             #   group_id "g"
        02 6d             #   member_id "m"
        00 00 00 03       #   member_epoch 3
        00                #   topics: null (all)
        00                #   tagged fields
        01                # require_stable true
        00                # tagged fields
     """)),
    ("offset_fetch_resp_v8", OffsetFetchResponse, 8,
     {"throttle_time_ms": 0, "groups": [
         {"group_id": "g1", "error_code": 0, "topics": one_topic(partitions=[
             {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": 2,
              "metadata": "", "error_code": 0}])},
         {"group_id": "g2", "error_code": 16, "topics": []}]}, h("""
        00 00 00 00              # throttle_time_ms 0
        03                       # groups: 2 + 1 (no top-level topics/error_code from v8)
        03 67 31                 #   group_id "g1"
        02                       #   topics: 1 + 1
        02 74                    #     name "t"
        02                       #     partitions: 1 + 1
        00 00 00 00              #       partition_index 0
        00 00 00 00 00 00 00 05  #       committed_offset 5
        00 00 00 02              #       committed_leader_epoch 2
        01                       #       metadata ""
        00 00                    #       error_code 0
        00                       #       tagged fields
        00                       #     tagged fields
        00 00                    #   error_code 0
        00                       #   tagged fields
        03 67 32                 #   group_id "g2"
        01                       #   topics: 0 + 1
        00 10                    #   error_code 16 NOT_COORDINATOR
        00                       #   tagged fields
        00                       # tagged fields
     """)),
    # -------------------------------------------------------------- FindCoordinator (10)
    ("find_coordinator_req_v0", FindCoordinatorRequest, 0, {"key": "g"}, h("""
        00 01 67          # key "g"
     """)),
    ("find_coordinator_req_v2", FindCoordinatorRequest, 2, {"key": "tx", "key_type": 1}, h("""
        00 02 74 78       # key "tx"
        01                # key_type 1 (transaction)
     """)),
    ("find_coordinator_resp_v0", FindCoordinatorResponse, 0,
     {"error_code": 0, "node_id": 1, "host": "h", "port": 9092}, h("""
        00 00             # error_code 0
        00 00 00 01       # node_id 1
        00 01 68          # host "h"
        00 00 23 84       # port 9092
     """)),
    ("find_coordinator_resp_v1", FindCoordinatorResponse, 1,
     {"throttle_time_ms": 0, "error_code": 15, "error_message": None, "node_id": -1,
      "host": "", "port": -1}, h("""
        00 00 00 00       # throttle_time_ms 0
        00 0f             # error_code 15 COORDINATOR_NOT_AVAILABLE
        ff ff             # error_message: null
        ff ff ff ff       # node_id -1
        00 00             # host ""
        ff ff ff ff       # port -1
     """)),
    ("find_coordinator_req_v4_batch", FindCoordinatorRequest, 4,
     {"key_type": 0, "coordinator_keys": ["g"]}, h("""
        00                # key_type 0 (group)
        02                # coordinator_keys: compact, 1 + 1
        02 67             #   "g"
        00                # tagged fields
     """)),
    ("find_coordinator_resp_v4_batch", FindCoordinatorResponse, 4,
     {"throttle_time_ms": 0, "coordinators": [{"key": "g", "node_id": 1, "host": "h", "port": 9092,
                                               "error_code": 0, "error_message": None}]}, h("""
        00 00 00 00       # throttle_time_ms 0
        02                # coordinators: 1 + 1
        02 67             #   key "g"
        00 00 00 01       #   node_id 1
        02 68             #   host "h"
        00 00 23 84       #   port 9092
        00 00             #   error_code 0
        00                #   error_message: null
        00                #   tagged fields
        00                # tagged fields
     """)),
    # ----------------------------------------------------------------- JoinGroup (11)
    ("join_group_req_v5", JoinGroupRequest, 5,
     {"group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 30000, "member_id": "",
      "group_instance_id": "i", "protocol_type": "consumer",
      "protocols": [{"name": "range", "metadata": b"\x00\x01"}]}, h("""
        00 01 67                      # group_id "g"
        00 00 27 10                   # session_timeout_ms 10000
        00 00 75 30                   # rebalance_timeout_ms 30000
        00 00                         # member_id ""
        00 01 69                      # group_instance_id "i"
        00 08 63 6f 6e 73 75 6d 65 72 # protocol_type "consumer"
        00 00 00 01                   # protocols: count 1
        00 05 72 61 6e 67 65          #   name "range"
        00 00 00 02 00 01             #   metadata: 2 bytes
     """)),
    ("join_group_resp_v7", JoinGroupResponse, 7,
     {"throttle_time_ms": 0, "error_code": 0, "generation_id": 1, "protocol_type": "consumer",
      "protocol_name": "range", "leader": "m", "member_id": "m",
      "members": [{"member_id": "m", "group_instance_id": None, "metadata": b"\x01"}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00                         # error_code 0
        00 00 00 01                   # generation_id 1
        09 63 6f 6e 73 75 6d 65 72    # protocol_type "consumer": compact, 8 + 1
        06 72 61 6e 67 65             # protocol_name "range"
        02 6d                         # leader "m"
        02 6d                         # member_id "m"
        02                            # members: 1 + 1
        02 6d                         #   member_id "m"
        00                            #   group_instance_id: null
        02 01                         #   metadata: 1 byte
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    # ----------------------------------------------------------------- Heartbeat (12)
    ("heartbeat_req_v0", HeartbeatRequest, 0,
     {"group_id": "g", "generation_id": 3, "member_id": "m"}, h("""
        00 01 67          # group_id "g"
        00 00 00 03       # generation_id 3
        00 01 6d          # member_id "m"
     """)),
    ("heartbeat_resp_v1", HeartbeatResponse, 1, {"throttle_time_ms": 0, "error_code": 25}, h("""
        00 00 00 00       # throttle_time_ms 0
        00 19             # error_code 25 UNKNOWN_MEMBER_ID
     """)),
    # ---------------------------------------------------------------- LeaveGroup (13)
    ("leave_group_req_v3_batch", LeaveGroupRequest, 3,
     {"group_id": "g", "members": [{"member_id": "m", "group_instance_id": None}]}, h("""
        00 01 67          # group_id "g"
        00 00 00 01       # members: count 1
        00 01 6d          #   member_id "m"
        ff ff             #   group_instance_id: null
     """)),
    ("leave_group_resp_v3", LeaveGroupResponse, 3,
     {"throttle_time_ms": 0, "error_code": 0,
      "members": [{"member_id": "", "group_instance_id": "i", "error_code": 82}]}, h("""
        00 00 00 00       # throttle_time_ms 0
        00 00             # error_code 0
        00 00 00 01       # members: count 1
        00 00             #   member_id ""
        00 01 69          #   group_instance_id "i"
        00 52             #   error_code 82 FENCED_INSTANCE_ID
     """)),
    # ----------------------------------------------------------------- SyncGroup (14)
    ("sync_group_req_v3", SyncGroupRequest, 3,
     {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None,
      "assignments": [{"member_id": "m", "assignment": b"\xaa"}]}, h("""
        00 01 67          # group_id "g"
        00 00 00 01       # generation_id 1
        00 01 6d          # member_id "m"
        ff ff             # group_instance_id: null
        00 00 00 01       # assignments: count 1
        00 01 6d          #   member_id "m"
        00 00 00 01 aa    #   assignment: 1 byte
     """)),
    ("sync_group_resp_v5", SyncGroupResponse, 5,
     {"throttle_time_ms": 0, "error_code": 27, "protocol_type": None, "protocol_name": None,
      "assignment": b""}, h("""
        00 00 00 00       # throttle_time_ms 0
        00 1b             # error_code 27 REBALANCE_IN_PROGRESS
        00                # protocol_type: null
        00                # protocol_name: null
        01                # assignment: empty, compact 0 + 1
        00                # tagged fields
     """)),
    # ------------------------------------------------------------ DescribeGroups (15)
    ("describe_groups_req_v3", DescribeGroupsRequest, 3,
     {"groups": ["g"], "include_authorized_operations": True}, h("""
        00 00 00 01 00 01 67   # groups: ["g"]
        01                     # include_authorized_operations true
     """)),
    ("describe_groups_resp_v4", DescribeGroupsResponse, 4,
     {"throttle_time_ms": 0, "groups": [{
         "error_code": 0, "group_id": "g", "group_state": "Stable", "protocol_type": "consumer",
         "protocol_data": "range", "authorized_operations": -2147483648,
         "members": [{"member_id": "m", "group_instance_id": None, "client_id": "c",
                      "client_host": "/h", "member_metadata": b"\x01", "member_assignment": b""}]}]},
     h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00 00 01                   # groups: count 1
        00 00                         #   error_code 0
        00 01 67                      #   group_id "g"
        00 06 53 74 61 62 6c 65       #   group_state "Stable"
        00 08 63 6f 6e 73 75 6d 65 72 #   protocol_type "consumer"
        00 05 72 61 6e 67 65          #   protocol_data "range"
        00 00 00 01                   #   members: count 1
        00 01 6d                      #     member_id "m"
        ff ff                         #     group_instance_id: null
        00 01 63                      #     client_id "c"
        00 02 2f 68                   #     client_host "/h"
        00 00 00 01 01                #     member_metadata: 1 byte
        00 00 00 00                   #     member_assignment: empty
        80 00 00 00                   #   authorized_operations: INT32_MIN (not asked)
     """)),
    # ---------------------------------------------------------------- ListGroups (16)
    ("list_groups_req_v4", ListGroupsRequest, 4, {"states_filter": ["Stable"]}, h("""
        02                            # states_filter: 1 + 1
        07 53 74 61 62 6c 65          #   "Stable": compact, 6 + 1
        00                            # tagged fields
     """)),
    ("list_groups_resp_v4", ListGroupsResponse, 4,
     {"throttle_time_ms": 0, "error_code": 0,
      "groups": [{"group_id": "g", "protocol_type": "", "group_state": "Empty"}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00                         # error_code 0
        02                            # groups: 1 + 1
        02 67                         #   group_id "g"
        01                            #   protocol_type ""
        06 45 6d 70 74 79             #   group_state "Empty"
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    # -------------------------------------------------------------- DeleteGroups (42)
    ("delete_groups_req_v1", DeleteGroupsRequest, 1, {"groups_names": ["g"]}, h("""
        00 00 00 01 00 01 67          # groups_names: ["g"]
     """)),
    ("delete_groups_resp_v1", DeleteGroupsResponse, 1,
     {"throttle_time_ms": 0, "results": [{"group_id": "g", "error_code": 68}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00 00 01                   # results: count 1
        00 01 67                      #   group_id "g"
        00 44                         #   error_code 68 NON_EMPTY_GROUP
     """)),
    # ------------------------------------------- DescribeTransactions (65), List (66)
    ("describe_transactions_req_v0", DescribeTransactionsRequest, 0,
     {"transactional_ids": ["x"]}, h("""
        02 02 78                      # transactional_ids ["x"] (compact)
        00                            # tagged fields
     """)),
    ("describe_transactions_resp_v0", DescribeTransactionsResponse, 0,
     {"throttle_time_ms": 0, "transaction_states": [{
         "error_code": 0, "transactional_id": "x", "transaction_state": "Ongoing",
         "transaction_timeout_ms": 60_000, "transaction_start_time_ms": 5, "producer_id": 7,
         "producer_epoch": 1, "topics": [{"topic": "t", "partitions": [0]}]}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        02                            # transaction_states: 1
        00 00                         #   error_code 0
        02 78                         #   transactional_id "x"
        08 4f 6e 67 6f 69 6e 67       #   transaction_state "Ongoing"
        00 00 ea 60                   #   transaction_timeout_ms 60000
        00 00 00 00 00 00 00 05       #   transaction_start_time_ms 5
        00 00 00 00 00 00 00 07       #   producer_id 7
        00 01                         #   producer_epoch 1
        02                            #   topics: 1
        02 74                         #     topic "t"
        02 00 00 00 00                #     partitions [0]
        00                            #     tagged fields
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    ("list_transactions_req_v1", ListTransactionsRequest, 1,
     {"state_filters": ["Ongoing"], "producer_id_filters": [], "duration_filter": 1000}, h("""
        02 08 4f 6e 67 6f 69 6e 67    # state_filters ["Ongoing"]
        01                            # producer_id_filters: empty
        00 00 00 00 00 00 03 e8       # duration_filter 1000 (v1+)
        00                            # tagged fields
     """)),
    ("list_transactions_resp_v0", ListTransactionsResponse, 0,
     {"throttle_time_ms": 0, "error_code": 0, "unknown_state_filters": ["Bogus"],
      "transaction_states": [{"transactional_id": "x", "producer_id": 7,
                              "transaction_state": "Ongoing"}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00                         # error_code 0
        02 06 42 6f 67 75 73          # unknown_state_filters ["Bogus"]
        02                            # transaction_states: 1
        02 78                         #   transactional_id "x"
        00 00 00 00 00 00 00 07       #   producer_id 7
        08 4f 6e 67 6f 69 6e 67       #   transaction_state "Ongoing"
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    # ---------------------------------------------------- ConsumerGroupHeartbeat (68)
    ("consumer_group_heartbeat_req_v1_join", ConsumerGroupHeartbeatRequest, 1,
     {"group_id": "g", "member_id": "m", "member_epoch": 0, "instance_id": None,
      "rack_id": None, "rebalance_timeout_ms": 300_000, "subscribed_topic_names": ["t"],
      "subscribed_topic_regex": None, "server_assignor": "uniform", "topic_partitions": []},
     h("""
        02 67                         # group_id "g" (compact)
        02 6d                         # member_id "m"
        00 00 00 00                   # member_epoch 0: join
        00                            # instance_id null
        00                            # rack_id null
        00 04 93 e0                   # rebalance_timeout_ms 300000
        02 02 74                      # subscribed_topic_names: ["t"]
        00                            # subscribed_topic_regex null (v1+)
        08 75 6e 69 66 6f 72 6d       # server_assignor "uniform"
        01                            # topic_partitions: empty, not null
        00                            # tagged fields
     """)),
    ("consumer_group_heartbeat_resp_v1", ConsumerGroupHeartbeatResponse, 1,
     {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": "m",
      "member_epoch": 3, "heartbeat_interval_ms": 5000,
      "assignment": {"topic_partitions": [{"topic_id": TOPIC_ID, "partitions": [0, 2]}]}}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00                         # error_code 0
        00                            # error_message null
        02 6d                         # member_id "m"
        00 00 00 03                   # member_epoch 3
        00 00 13 88                   # heartbeat_interval_ms 5000
        01                            # assignment: present (nullable struct marker)
        02                            #   topic_partitions: 1
        01 23 45 67 89 ab cd ef 01 23 45 67 89 ab cd ef  # topic_id
        03 00 00 00 00 00 00 00 02    #     partitions [0, 2]
        00                            #     tagged fields
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    ("consumer_group_heartbeat_resp_v0_error", ConsumerGroupHeartbeatResponse, 0,
     {"throttle_time_ms": 0, "error_code": 110, "error_message": "x", "member_id": None,
      "member_epoch": -1, "heartbeat_interval_ms": 0, "assignment": None}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 6e                         # error_code 110 FENCED_MEMBER_EPOCH
        02 78                         # error_message "x"
        00                            # member_id null
        ff ff ff ff                   # member_epoch -1
        00 00 00 00                   # heartbeat_interval_ms 0
        ff                            # assignment: null
        00                            # tagged fields
     """)),
    # ----------------------------------------------------- ConsumerGroupDescribe (69)
    ("consumer_group_describe_req_v0", ConsumerGroupDescribeRequest, 0,
     {"group_ids": ["g"], "include_authorized_operations": False}, h("""
        02 02 67                      # group_ids: ["g"]
        00                            # include_authorized_operations false
        00                            # tagged fields
     """)),
    ("consumer_group_describe_resp_v0", ConsumerGroupDescribeResponse, 0,
     {"throttle_time_ms": 0, "groups": [{
         "error_code": 0, "error_message": None, "group_id": "g", "group_state": "Stable",
         "group_epoch": 2, "assignment_epoch": 2, "assignor_name": "uniform",
         "members": [{"member_id": "m", "instance_id": None, "rack_id": None,
                      "member_epoch": 2, "client_id": "c", "client_host": "/h",
                      "subscribed_topic_names": ["t"], "subscribed_topic_regex": None,
                      "assignment": {"topic_partitions": [
                          {"topic_id": TOPIC_ID, "topic_name": "t", "partitions": [1]}]},
                      "target_assignment": {"topic_partitions": []}}],
         "authorized_operations": -(2**31)}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        02                            # groups: 1
        00 00                         #   error_code 0
        00                            #   error_message null
        02 67                         #   group_id "g"
        07 53 74 61 62 6c 65          #   group_state "Stable"
        00 00 00 02                   #   group_epoch 2
        00 00 00 02                   #   assignment_epoch 2
        08 75 6e 69 66 6f 72 6d       #   assignor_name "uniform"
        02                            #   members: 1
        02 6d                         #     member_id "m"
        00                            #     instance_id null
        00                            #     rack_id null
        00 00 00 02                   #     member_epoch 2
        02 63                         #     client_id "c"
        03 2f 68                      #     client_host "/h"
        02 02 74                      #     subscribed_topic_names ["t"]
        00                            #     subscribed_topic_regex null
        02                            #     assignment.topic_partitions: 1
        01 23 45 67 89 ab cd ef 01 23 45 67 89 ab cd ef  # topic_id
        02 74                         #       topic_name "t"
        02 00 00 00 01                #       partitions [1]
        00                            #       tagged fields
        00                            #     assignment: tagged fields
        01                            #     target_assignment.topic_partitions: 0
        00                            #     target_assignment: tagged fields
        00                            #     member: tagged fields
        80 00 00 00                   #   authorized_operations INT32_MIN
        00                            #   group: tagged fields
        00                            # tagged fields
     """)),
    # ------------------------------------------------------- AddPartitionsToTxn (24)
    ("add_partitions_to_txn_req_v0", AddPartitionsToTxnRequest, 0,
     {"v3_and_below_transactional_id": "x", "v3_and_below_producer_id": 7,
      "v3_and_below_producer_epoch": 1,
      "v3_and_below_topics": [{"name": "t", "partitions": [0, 1]}]}, h("""
        00 01 78                      # transactional_id "x"
        00 00 00 00 00 00 00 07       # producer_id 7
        00 01                         # producer_epoch 1
        00 00 00 01                   # topics: 1
        00 01 74                      #   name "t"
        00 00 00 02 00 00 00 00 00 00 00 01  # partitions [0, 1]
     """)),
    ("add_partitions_to_txn_req_v3", AddPartitionsToTxnRequest, 3,
     {"v3_and_below_transactional_id": "x", "v3_and_below_producer_id": 7,
      "v3_and_below_producer_epoch": 1,
      "v3_and_below_topics": [{"name": "t", "partitions": [2]}]}, h("""
        02 78                         # transactional_id "x" (compact)
        00 00 00 00 00 00 00 07       # producer_id 7
        00 01                         # producer_epoch 1
        02                            # topics: 1
        02 74                         #   name "t"
        02 00 00 00 02                #   partitions [2]
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    ("add_partitions_to_txn_resp_v3", AddPartitionsToTxnResponse, 3,
     {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [{
         "name": "t", "results_by_partition": [
             {"partition_index": 2, "partition_error_code": 51}]}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        02                            # results: 1
        02 74                         #   name "t"
        02                            #   results: 1
        00 00 00 02                   #     partition_index 2
        00 33                         #     partition_error_code 51 CONCURRENT_TRANSACTIONS
        00                            #     tagged fields
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    # ---------------------------------------------------------- AddOffsetsToTxn (25)
    ("add_offsets_to_txn_req_v3", AddOffsetsToTxnRequest, 3,
     {"transactional_id": "x", "producer_id": 7, "producer_epoch": 1, "group_id": "g"}, h("""
        02 78                         # transactional_id "x" (compact)
        00 00 00 00 00 00 00 07       # producer_id 7
        00 01                         # producer_epoch 1
        02 67                         # group_id "g"
        00                            # tagged fields
     """)),
    ("add_offsets_to_txn_resp_v0", AddOffsetsToTxnResponse, 0,
     {"throttle_time_ms": 0, "error_code": 90}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 5a                         # error_code 90 PRODUCER_FENCED
     """)),
    # ------------------------------------------------------------------- EndTxn (26)
    ("end_txn_req_v0", EndTxnRequest, 0,
     {"transactional_id": "x", "producer_id": 7, "producer_epoch": 1, "committed": True}, h("""
        00 01 78                      # transactional_id "x"
        00 00 00 00 00 00 00 07       # producer_id 7
        00 01                         # producer_epoch 1
        01                            # committed true
     """)),
    ("end_txn_req_v3", EndTxnRequest, 3,
     {"transactional_id": "x", "producer_id": 7, "producer_epoch": 1, "committed": False}, h("""
        02 78                         # transactional_id "x" (compact)
        00 00 00 00 00 00 00 07       # producer_id 7
        00 01                         # producer_epoch 1
        00                            # committed false: abort
        00                            # tagged fields
     """)),
    ("end_txn_resp_v3", EndTxnResponse, 3, {"throttle_time_ms": 0, "error_code": 48}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 30                         # error_code 48 INVALID_TXN_STATE
        00                            # tagged fields
     """)),
    # ------------------------------------------------------------ WriteTxnMarkers (27)
    ("write_txn_markers_req_v0", WriteTxnMarkersRequest, 0,
     {"markers": [{"producer_id": 7, "producer_epoch": 1, "transaction_result": False,
                   "topics": [{"name": "t", "partition_indexes": [0]}],
                   "coordinator_epoch": 2}]}, h("""
        00 00 00 01                   # markers: 1
        00 00 00 00 00 00 00 07       #   producer_id 7
        00 01                         #   producer_epoch 1
        00                            #   transaction_result false: abort
        00 00 00 01                   #   topics: 1
        00 01 74                      #     name "t"
        00 00 00 01 00 00 00 00       #     partition_indexes [0]
        00 00 00 02                   #   coordinator_epoch 2
     """)),
    ("write_txn_markers_req_v1", WriteTxnMarkersRequest, 1,
     {"markers": [{"producer_id": 7, "producer_epoch": 1, "transaction_result": True,
                   "topics": [{"name": "t", "partition_indexes": [0]}],
                   "coordinator_epoch": 2}]}, h("""
        02                            # markers: 1 (compact)
        00 00 00 00 00 00 00 07       #   producer_id 7
        00 01                         #   producer_epoch 1
        01                            #   transaction_result true: commit
        02                            #   topics: 1
        02 74                         #     name "t"
        02 00 00 00 00                #     partition_indexes [0]
        00                            #     tagged fields
        00 00 00 02                   #   coordinator_epoch 2
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    ("write_txn_markers_resp_v1", WriteTxnMarkersResponse, 1,
     {"markers": [{"producer_id": 7, "topics": [
         {"name": "t", "partitions": [{"partition_index": 0, "error_code": 90}]}]}]}, h("""
        02                            # markers: 1
        00 00 00 00 00 00 00 07       #   producer_id 7
        02                            #   topics: 1
        02 74                         #     name "t"
        02                            #     partitions: 1
        00 00 00 00                   #       partition_index 0
        00 5a                         #       error_code 90 PRODUCER_FENCED
        00                            #       tagged fields
        00                            #     tagged fields
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    # ---------------------------------------------------------- TxnOffsetCommit (28)
    ("txn_offset_commit_req_v3", TxnOffsetCommitRequest, 3,
     {"transactional_id": "x", "group_id": "g", "producer_id": 7, "producer_epoch": 1,
      "generation_id": -1, "member_id": "", "group_instance_id": None,
      "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 5,
                                               "committed_leader_epoch": -1,
                                               "committed_metadata": None}]}]}, h("""
        02 78                         # transactional_id "x" (compact)
        02 67                         # group_id "g"
        00 00 00 00 00 00 00 07       # producer_id 7
        00 01                         # producer_epoch 1
        ff ff ff ff                   # generation_id -1
        01                            # member_id ""
        00                            # group_instance_id null
        02                            # topics: 1
        02 74                         #   name "t"
        02                            #   partitions: 1
        00 00 00 00                   #     partition_index 0
        00 00 00 00 00 00 00 05       #     committed_offset 5
        ff ff ff ff                   #     committed_leader_epoch -1
        00                            #     committed_metadata null
        00                            #     tagged fields
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    ("txn_offset_commit_resp_v0", TxnOffsetCommitResponse, 0,
     {"throttle_time_ms": 0, "topics": [{"name": "t", "partitions": [
         {"partition_index": 0, "error_code": 0}]}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00 00 01                   # topics: 1
        00 01 74                      #   name "t"
        00 00 00 01                   #   partitions: 1
        00 00 00 00                   #     partition_index 0
        00 00                         #     error_code 0
     """)),
    # -------------------------------------------------------------- OffsetDelete (47)
    ("offset_delete_req_v0", OffsetDeleteRequest, 0,
     {"group_id": "g", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]}, h("""
        00 01 67                      # group_id "g"
        00 00 00 01                   # topics: count 1
        00 01 74                      #   name "t"
        00 00 00 01 00 00 00 00       #   partitions: [0]
     """)),
    ("offset_delete_resp_v0", OffsetDeleteResponse, 0,
     {"error_code": 0, "throttle_time_ms": 0,
      "topics": [{"name": "t", "partitions": [{"partition_index": 0, "error_code": 86}]}]}, h("""
        00 00                         # error_code 0
        00 00 00 00                   # throttle_time_ms 0
        00 00 00 01                   # topics: count 1
        00 01 74                      #   name "t"
        00 00 00 01                   #   partitions: count 1
        00 00 00 00                   #     partition_index 0
        00 56                         #     error_code 86 GROUP_SUBSCRIBED_TO_TOPIC
     """)),
    # --------------------------------------------------------- OffsetForLeaderEpoch (23)
    ("offset_for_leader_epoch_req_v3", OffsetForLeaderEpochRequest, 3,
     {"replica_id": 2, "topics": [{"topic": "t", "partitions": [
         {"partition": 1, "current_leader_epoch": 5, "leader_epoch": 4}]}]}, h("""
        00 00 00 02       # replica_id 2
        00 00 00 01       # topics: 1
        00 01 74          #   topic "t"
        00 00 00 01       #   partitions: 1
        00 00 00 01       #     partition 1
        00 00 00 05       #     current_leader_epoch 5
        00 00 00 04       #     leader_epoch 4
     """)),
    ("offset_for_leader_epoch_resp_v2", OffsetForLeaderEpochResponse, 2,
     {"throttle_time_ms": 0, "topics": [{"topic": "t", "partitions": [
         {"error_code": 0, "partition": 1, "leader_epoch": 4, "end_offset": 300}]}]}, h("""
        00 00 00 00       # throttle_time_ms 0
        00 00 00 01       # topics: 1
        00 01 74          #   topic "t"
        00 00 00 01       #   partitions: 1
        00 00             #     error_code 0
        00 00 00 01       #     partition 1
        00 00 00 04       #     leader_epoch 4
        00 00 00 00 00 00 01 2c  # end_offset 300
     """)),
    # ----------------------------------------------------------------- CreateTopics (19)
    ("create_topics_req_v0", CreateTopicsRequest, 0,
     {"topics": [{"name": "t", "num_partitions": 3, "replication_factor": 1,
                  "assignments": [], "configs": [{"name": "k", "value": "v"}]}],
      "timeout_ms": 60000}, h("""
        00 00 00 01       # topics: count 1
        00 01 74          #   name "t"
        00 00 00 03       #   num_partitions 3
        00 01             #   replication_factor 1
        00 00 00 00       #   assignments: count 0
        00 00 00 01       #   configs: count 1
        00 01 6b          #     name "k"
        00 01 76          #     value "v"
        00 00 ea 60       # timeout_ms 60000
     """)),
    ("create_topics_req_v4", CreateTopicsRequest, 4,
     {"topics": [{"name": "t", "num_partitions": -1, "replication_factor": -1,
                  "assignments": [{"partition_index": 0, "broker_ids": [1, 2]}],
                  "configs": [{"name": "k", "value": None}]}],
      "timeout_ms": 10000, "validate_only": True}, h("""
        00 00 00 01       # topics: count 1
        00 01 74          #   name "t"
        ff ff ff ff       #   num_partitions -1 (taken from assignments)
        ff ff             #   replication_factor -1
        00 00 00 01       #   assignments: count 1
        00 00 00 00       #     partition_index 0
        00 00 00 02       #     broker_ids: count 2
        00 00 00 01       #       1
        00 00 00 02       #       2
        00 00 00 01       #   configs: count 1
        00 01 6b          #     name "k"
        ff ff             #     value: null
        00 00 27 10       # timeout_ms 10000
        01                # validate_only true
     """)),
    ("create_topics_resp_v0", CreateTopicsResponse, 0,
     {"topics": [{"name": "t", "error_code": 36}]}, h("""
        00 00 00 01       # topics: count 1
        00 01 74          #   name "t"
        00 24             #   error_code 36 TOPIC_ALREADY_EXISTS
     """)),
    ("create_topics_resp_v2", CreateTopicsResponse, 2,
     {"throttle_time_ms": 0,
      "topics": [{"name": "t", "error_code": 36, "error_message": "dup"}]}, h("""
        00 00 00 00       # throttle_time_ms 0
        00 00 00 01       # topics: count 1
        00 01 74          #   name "t"
        00 24             #   error_code 36
        00 03 64 75 70    #   error_message "dup"
     """)),
    # ----------------------------------------------------------------- DeleteTopics (20)
    ("delete_topics_req_v0", DeleteTopicsRequest, 0,
     {"topic_names": ["t"], "timeout_ms": 30000}, h("""
        00 00 00 01       # topic_names: count 1
        00 01 74          #   "t"
        00 00 75 30       # timeout_ms 30000
     """)),
    ("delete_topics_resp_v0", DeleteTopicsResponse, 0,
     {"responses": [{"name": "t", "error_code": 3}]}, h("""
        00 00 00 01       # responses: count 1
        00 01 74          #   name "t"
        00 03             #   error_code 3 UNKNOWN_TOPIC_OR_PARTITION
     """)),
    ("delete_topics_resp_v1", DeleteTopicsResponse, 1,
     {"throttle_time_ms": 7, "responses": [{"name": "t", "error_code": 0}]}, h("""
        00 00 00 07       # throttle_time_ms 7
        00 00 00 01       # responses: count 1
        00 01 74          #   name "t"
        00 00             #   error_code 0
     """)),
    # --------------------------------------------------------------- DeleteRecords (21)
    ("delete_records_req_v0", DeleteRecordsRequest, 0,
     {"topics": [{"name": "t", "partitions": [{"partition_index": 1, "offset": 5}]}],
      "timeout_ms": 30000}, h("""
        00 00 00 01                   # topics: count 1
        00 01 74                      #   name "t"
        00 00 00 01                   #   partitions: count 1
        00 00 00 01                   #     partition_index 1
        00 00 00 00 00 00 00 05       #     offset 5
        00 00 75 30                   # timeout_ms 30000
     """)),
    ("delete_records_req_v2", DeleteRecordsRequest, 2,
     {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "offset": -1}]}],
      "timeout_ms": 1000}, h("""
        02                            # topics: 1 (compact)
        02 74                         #   name "t"
        02                            #   partitions: 1
        00 00 00 00                   #     partition_index 0
        ff ff ff ff ff ff ff ff       #     offset -1 (the high watermark)
        00                            #     tagged fields
        00                            #   tagged fields
        00 00 03 e8                   # timeout_ms 1000
        00                            # tagged fields
     """)),
    ("delete_records_resp_v1", DeleteRecordsResponse, 1,
     {"throttle_time_ms": 0, "topics": [{"name": "t", "partitions": [
         {"partition_index": 1, "low_watermark": 5, "error_code": 0}]}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00 00 01                   # topics: count 1
        00 01 74                      #   name "t"
        00 00 00 01                   #   partitions: count 1
        00 00 00 01                   #     partition_index 1
        00 00 00 00 00 00 00 05       #     low_watermark 5
        00 00                         #     error_code 0
     """)),
    ("delete_records_resp_v2", DeleteRecordsResponse, 2,
     {"throttle_time_ms": 0, "topics": [{"name": "t", "partitions": [
         {"partition_index": 0, "low_watermark": -1, "error_code": 1}]}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        02                            # topics: 1 (compact)
        02 74                         #   name "t"
        02                            #   partitions: 1
        00 00 00 00                   #     partition_index 0
        ff ff ff ff ff ff ff ff       #     low_watermark -1
        00 01                         #     error_code 1 OFFSET_OUT_OF_RANGE
        00                            #     tagged fields
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    # --------------------------------------------------------------- InitProducerId (22)
    ("init_producer_id_req_v0", InitProducerIdRequest, 0,
     {"transactional_id": None, "transaction_timeout_ms": 60000}, h("""
        ff ff             # transactional_id: null (idempotent producer)
        00 00 ea 60       # transaction_timeout_ms 60000
     """)),
    ("init_producer_id_req_v1", InitProducerIdRequest, 1,
     {"transactional_id": "tx", "transaction_timeout_ms": 60000}, h("""
        00 02 74 78       # transactional_id "tx"
        00 00 ea 60       # transaction_timeout_ms 60000
     """)),
    ("init_producer_id_resp_v0", InitProducerIdResponse, 0,
     {"throttle_time_ms": 0, "error_code": 0, "producer_id": 1000, "producer_epoch": 0}, h("""
        00 00 00 00              # throttle_time_ms 0
        00 00                    # error_code 0
        00 00 00 00 00 00 03 e8  # producer_id 1000
        00 00                    # producer_epoch 0
     """)),
    ("init_producer_id_req_v2", InitProducerIdRequest, 2,
     {"transactional_id": None, "transaction_timeout_ms": 60000}, h("""
        00                # transactional_id: null (compact: length + 1 = 0)
        00 00 ea 60       # transaction_timeout_ms 60000
        00                # tagged fields: none
     """)),
    ("init_producer_id_req_v3", InitProducerIdRequest, 3,
     {"transactional_id": None, "transaction_timeout_ms": 60000,
      "producer_id": 4096, "producer_epoch": 7}, h("""
        00                       # transactional_id: null
        00 00 ea 60              # transaction_timeout_ms 60000
        00 00 00 00 00 00 10 00  # producer_id 4096 (KIP-360: bump my epoch)
        00 07                    # producer_epoch 7
        00                       # tagged fields: none
     """)),
    ("init_producer_id_req_v4_fresh", InitProducerIdRequest, 4,
     {"transactional_id": "tx", "transaction_timeout_ms": 30000,
      "producer_id": -1, "producer_epoch": -1}, h("""
        03 74 78                 # transactional_id "tx" (compact: length + 1 = 3)
        00 00 75 30              # transaction_timeout_ms 30000
        ff ff ff ff ff ff ff ff  # producer_id -1 (no id yet)
        ff ff                    # producer_epoch -1
        00                       # tagged fields: none
     """)),
    ("init_producer_id_resp_v2", InitProducerIdResponse, 2,
     {"throttle_time_ms": 0, "error_code": 31, "producer_id": -1, "producer_epoch": -1}, h("""
        00 00 00 00              # throttle_time_ms 0
        00 1f                    # error_code 31 CLUSTER_AUTHORIZATION_FAILED
        ff ff ff ff ff ff ff ff  # producer_id -1
        ff ff                    # producer_epoch -1
        00                       # tagged fields: none
     """)),
    ("init_producer_id_resp_v3", InitProducerIdResponse, 3,
     {"throttle_time_ms": 5, "error_code": 0, "producer_id": 4096, "producer_epoch": 8}, h("""
        00 00 00 05              # throttle_time_ms 5
        00 00                    # error_code 0
        00 00 00 00 00 00 10 00  # producer_id 4096
        00 08                    # producer_epoch 8 (bumped)
        00                       # tagged fields: none
     """)),
    ("init_producer_id_resp_v4", InitProducerIdResponse, 4,
     {"throttle_time_ms": 0, "error_code": 90, "producer_id": -1, "producer_epoch": -1}, h("""
        00 00 00 00              # throttle_time_ms 0
        00 5a                    # error_code 90 PRODUCER_FENCED
        ff ff ff ff ff ff ff ff  # producer_id -1
        ff ff                    # producer_epoch -1
        00                       # tagged fields: none
     """)),
    # ------------------------------------------------------------- CreatePartitions (37)
    ("create_partitions_req_v0", CreatePartitionsRequest, 0,
     {"topics": [{"name": "t", "count": 6, "assignments": None},
                 {"name": "u", "count": 2, "assignments": [{"broker_ids": [1, 2]}]}],
      "timeout_ms": 30000, "validate_only": False}, h("""
        00 00 00 02       # topics: count 2
        00 01 74          #   name "t"
        00 00 00 06       #   count 6 (the new total)
        ff ff ff ff       #   assignments: null (the controller places the replicas)
        00 01 75          #   name "u"
        00 00 00 02       #   count 2
        00 00 00 01       #   assignments: count 1 (one per new partition)
        00 00 00 02       #     broker_ids: count 2
        00 00 00 01       #       1
        00 00 00 02       #       2
        00 00 75 30       # timeout_ms 30000
        00                # validate_only false
     """)),
    ("create_partitions_resp_v1", CreatePartitionsResponse, 1,
     {"throttle_time_ms": 0,
      "results": [{"name": "t", "error_code": 37, "error_message": "no"}]}, h("""
        00 00 00 00       # throttle_time_ms 0
        00 00 00 01       # results: count 1
        00 01 74          #   name "t"
        00 25             #   error_code 37 INVALID_PARTITIONS
        00 02 6e 6f       #   error_message "no"
     """)),
    # --------------------------------------------------- SaslHandshake (17), KIP-43
    ("sasl_handshake_req_v1", SaslHandshakeRequest, 1, {"mechanism": "PLAIN"}, h("""
        00 05 50 4c 41 49 4e          # mechanism "PLAIN"
     """)),
    ("sasl_handshake_resp_v1", SaslHandshakeResponse, 1,
     {"error_code": 33, "mechanisms": ["PLAIN", "SCRAM-SHA-256"]}, h("""
        00 21                         # error_code 33 UNSUPPORTED_SASL_MECHANISM
        00 00 00 02                   # mechanisms: count 2
        00 05 50 4c 41 49 4e          #   "PLAIN"
        00 0d 53 43 52 41 4d 2d 53 48 41 2d 32 35 36   # "SCRAM-SHA-256"
     """)),
    # ------------------------------------------------ SaslAuthenticate (36), KIP-152
    ("sasl_authenticate_req_v1", SaslAuthenticateRequest, 1, {"auth_bytes": b"\x00u\x00p"}, h("""
        00 00 00 04 00 75 00 70       # auth_bytes: int32 length 4, NUL "u" NUL "p"
     """)),
    ("sasl_authenticate_req_v2", SaslAuthenticateRequest, 2, {"auth_bytes": b"ab"}, h("""
        03 61 62                      # auth_bytes: compact, length 2 + 1
        00                            # tagged fields: none
     """)),
    ("sasl_authenticate_resp_v1", SaslAuthenticateResponse, 1,
     {"error_code": 58, "error_message": "no", "auth_bytes": b"", "session_lifetime_ms": 0}, h("""
        00 3a                         # error_code 58 SASL_AUTHENTICATION_FAILED
        00 02 6e 6f                   # error_message "no"
        00 00 00 00                   # auth_bytes: empty
        00 00 00 00 00 00 00 00       # session_lifetime_ms 0 (no re-authentication)
     """)),
    ("sasl_authenticate_resp_v2", SaslAuthenticateResponse, 2,
     {"error_code": 0, "error_message": None, "auth_bytes": b"v=", "session_lifetime_ms": 0}, h("""
        00 00                         # error_code 0
        00                            # error_message: compact null
        03 76 3d                      # auth_bytes "v=": compact, length 2 + 1
        00 00 00 00 00 00 00 00       # session_lifetime_ms 0
        00                            # tagged fields: none
     """)),
    # -------------------------------------- DescribeUserScramCredentials (50), KIP-554
    ("describe_scram_req_v0", DescribeUserScramCredentialsRequest, 0,
     {"users": [{"name": "al"}]}, h("""
        02                            # users: compact array, 1 + 1
        03 61 6c                      #   name "al"
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    ("describe_scram_resp_v0", DescribeUserScramCredentialsResponse, 0,
     {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
      "results": [{"user": "al", "error_code": 0, "error_message": None,
                   "credential_infos": [{"mechanism": 2, "iterations": 8192}]}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00                         # error_code 0
        00                            # error_message: compact null
        02                            # results: compact array, 1 + 1
        03 61 6c                      #   user "al"
        00 00                         #   error_code 0
        00                            #   error_message: null
        02                            #   credential_infos: 1 + 1
        02                            #     mechanism 2 SCRAM-SHA-512
        00 00 20 00                   #     iterations 8192
        00                            #     tagged fields
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    # ----------------------------------------- AlterUserScramCredentials (51), KIP-554
    ("alter_scram_req_v0", AlterUserScramCredentialsRequest, 0,
     {"deletions": [{"name": "b", "mechanism": 1}],
      "upsertions": [{"name": "a", "mechanism": 1, "iterations": 4096, "salt": b"s",
                      "salted_password": b"pw"}]}, h("""
        02                            # deletions: 1 + 1
        02 62                         #   name "b"
        01                            #   mechanism 1 SCRAM-SHA-256
        00                            #   tagged fields
        02                            # upsertions: 1 + 1
        02 61                         #   name "a"
        01                            #   mechanism 1
        00 00 10 00                   #   iterations 4096
        02 73                         #   salt "s": compact bytes, 1 + 1
        03 70 77                      #   salted_password "pw"
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    # ------------------------------------------- DescribeAcls (29), CreateAcls (30), DeleteAcls (31)
    ("describe_acls_req_v1", DescribeAclsRequest, 1,
     {"resource_type_filter": 2, "resource_name_filter": "t", "pattern_type_filter": 2,
      "principal_filter": None, "host_filter": "*", "operation": 1, "permission_type": 3}, h("""
        02                # resource_type_filter 2 TOPIC
        00 01 74          # resource_name_filter "t"
        02                # pattern_type_filter 2 MATCH
        ff ff             # principal_filter: null (any)
        00 01 2a          # host_filter "*"
        01                # operation 1 ANY
        03                # permission_type 3 ALLOW
     """)),
    ("describe_acls_resp_v1", DescribeAclsResponse, 1,
     {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
      "resources": [{"resource_type": 2, "resource_name": "t", "pattern_type": 4,
                     "acls": [{"principal": "User:a", "host": "*", "operation": 4,
                               "permission_type": 3}]}]}, h("""
        00 00 00 00       # throttle_time_ms 0
        00 00             # error_code 0
        ff ff             # error_message: null
        00 00 00 01       # resources: count 1
        02                #   resource_type 2 TOPIC
        00 01 74          #   resource_name "t"
        04                #   pattern_type 4 PREFIXED
        00 00 00 01       #   acls: count 1
        00 06 55 73 65 72 3a 61   # principal "User:a"
        00 01 2a          #     host "*"
        04                #     operation 4 WRITE
        03                #     permission_type 3 ALLOW
     """)),
    ("create_acls_req_v0", CreateAclsRequest, 0,
     {"creations": [{"resource_type": 3, "resource_name": "g", "principal": "User:a", "host": "*",
                     "operation": 3, "permission_type": 2}]}, h("""
        00 00 00 01       # creations: count 1
        03                #   resource_type 3 GROUP
        00 01 67          #   resource_name "g"
        00 06 55 73 65 72 3a 61   # principal "User:a" (v0: no pattern type, LITERAL)
        00 01 2a          #   host "*"
        03                #   operation 3 READ
        02                #   permission_type 2 DENY
     """)),
    ("create_acls_req_v2", CreateAclsRequest, 2,
     {"creations": [{"resource_type": 4, "resource_name": "kafka-cluster", "resource_pattern_type": 3,
                     "principal": "User:a", "host": "*", "operation": 7, "permission_type": 3}]}, h("""
        02                # creations: compact array, 1 + 1
        04                #   resource_type 4 CLUSTER
        0e 6b 61 66 6b 61 2d 63 6c 75 73 74 65 72   # "kafka-cluster", 13 + 1
        03                #   resource_pattern_type 3 LITERAL
        07 55 73 65 72 3a 61   # principal "User:a", 6 + 1
        02 2a             #   host "*"
        07                #   operation 7 ALTER
        03                #   permission_type 3 ALLOW
        00                #   tagged fields
        00                # tagged fields
     """)),
    ("create_acls_resp_v1", CreateAclsResponse, 1,
     {"throttle_time_ms": 0, "results": [{"error_code": 42, "error_message": "no"}]}, h("""
        00 00 00 00       # throttle_time_ms 0
        00 00 00 01       # results: count 1
        00 2a             #   error_code 42 INVALID_REQUEST
        00 02 6e 6f       #   error_message "no"
     """)),
    ("delete_acls_req_v1", DeleteAclsRequest, 1,
     {"filters": [{"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                   "principal_filter": "User:a", "host_filter": None, "operation": 1,
                   "permission_type": 1}]}, h("""
        00 00 00 01       # filters: count 1
        01                #   resource_type_filter 1 ANY
        ff ff             #   resource_name_filter: null
        01                #   pattern_type_filter 1 ANY
        00 06 55 73 65 72 3a 61   # principal_filter "User:a"
        ff ff             #   host_filter: null
        01                #   operation 1 ANY
        01                #   permission_type 1 ANY
     """)),
    ("delete_acls_resp_v1", DeleteAclsResponse, 1,
     {"throttle_time_ms": 0, "filter_results": [{"error_code": 0, "error_message": None, "matching_acls": [
         {"error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "t",
          "pattern_type": 3, "principal": "User:a", "host": "*", "operation": 3,
          "permission_type": 3}]}]}, h("""
        00 00 00 00       # throttle_time_ms 0
        00 00 00 01       # filter_results: count 1
        00 00             #   error_code 0
        ff ff             #   error_message: null
        00 00 00 01       #   matching_acls: count 1
        00 00             #     error_code 0
        ff ff             #     error_message: null
        02                #     resource_type 2 TOPIC
        00 01 74          #     resource_name "t"
        03                #     pattern_type 3 LITERAL
        00 06 55 73 65 72 3a 61   # principal "User:a"
        00 01 2a          #     host "*"
        03                #     operation 3 READ
        03                #     permission_type 3 ALLOW
     """)),
    ("alter_scram_resp_v0", AlterUserScramCredentialsResponse, 0,
     {"throttle_time_ms": 0, "results": [{"user": "a", "error_code": 93, "error_message": None}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        02                            # results: 1 + 1
        02 61                         #   user "a"
        00 5d                         #   error_code 93 UNACCEPTABLE_CREDENTIAL
        00                            #   error_message: null
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    # ------------------------------------ DescribeConfigs (32), AlterConfigs (33), (44)
    ("describe_configs_req_v1", DescribeConfigsRequest, 1,
     {"resources": [{"resource_type": 2, "resource_name": "t", "configuration_keys": None}],
      "include_synonyms": True}, h("""
        00 00 00 01                   # resources: count 1
        02                            #   resource_type 2 (topic)
        00 01 74                      #   resource_name "t"
        ff ff ff ff                   #   configuration_keys: null (every config)
        01                            # include_synonyms true (v1+)
     """)),
    ("describe_configs_resp_v0", DescribeConfigsResponse, 0,
     {"throttle_time_ms": 0, "results": [{
         "error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "t",
         "configs": [{"name": "a", "value": "1", "read_only": False, "is_default": True,
                      "is_sensitive": False}]}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00 00 01                   # results: count 1
        00 00                         #   error_code 0
        ff ff                         #   error_message: null
        02                            #   resource_type 2
        00 01 74                      #   resource_name "t"
        00 00 00 01                   #   configs: count 1
        00 01 61                      #     name "a"
        00 01 31                      #     value "1"
        00                            #     read_only false
        01                            #     is_default true (v0 only)
        00                            #     is_sensitive false
     """)),
    ("describe_configs_resp_v4", DescribeConfigsResponse, 4,
     {"throttle_time_ms": 0, "results": [{
         "error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "t",
         "configs": [{"name": "a", "value": "1", "read_only": False, "config_source": 1,
                      "is_sensitive": False,
                      "synonyms": [{"name": "a", "value": "1", "source": 1}],
                      "config_type": 5, "documentation": None}]}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        02                            # results: 1 (compact)
        00 00                         #   error_code 0
        00                            #   error_message: null
        02                            #   resource_type 2
        02 74                         #   resource_name "t"
        02                            #   configs: 1
        02 61                         #     name "a"
        02 31                         #     value "1"
        00                            #     read_only false
        01                            #     config_source 1 DYNAMIC_TOPIC_CONFIG (v1+)
        00                            #     is_sensitive false
        02                            #     synonyms: 1 (v1+)
        02 61 02 31 01                #       name "a", value "1", source 1
        00                            #       tagged fields
        05                            #     config_type 5 LONG (v3+)
        00                            #     documentation: null (v3+)
        00                            #     tagged fields
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    ("alter_configs_req_v0", AlterConfigsRequest, 0,
     {"resources": [{"resource_type": 2, "resource_name": "t",
                     "configs": [{"name": "a", "value": "1"}]}], "validate_only": False}, h("""
        00 00 00 01                   # resources: count 1
        02                            #   resource_type 2
        00 01 74                      #   resource_name "t"
        00 00 00 01                   #   configs: count 1
        00 01 61                      #     name "a"
        00 01 31                      #     value "1"
        00                            # validate_only false
     """)),
    ("alter_configs_resp_v0", AlterConfigsResponse, 0,
     {"throttle_time_ms": 0, "responses": [{"error_code": 40, "error_message": "x",
                                            "resource_type": 2, "resource_name": "t"}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00 00 01                   # responses: count 1
        00 28                         #   error_code 40 INVALID_CONFIG
        00 01 78                      #   error_message "x"
        02                            #   resource_type 2
        00 01 74                      #   resource_name "t"
     """)),
    ("incremental_alter_configs_req_v1", IncrementalAlterConfigsRequest, 1,
     {"resources": [{"resource_type": 4, "resource_name": "",
                     "configs": [{"name": "a", "config_operation": 1, "value": None}]}],
      "validate_only": True}, h("""
        02                            # resources: 1 (compact)
        04                            #   resource_type 4 (broker)
        01                            #   resource_name "" (cluster-wide default)
        02                            #   configs: 1
        02 61                         #     name "a"
        01                            #     config_operation 1 DELETE
        00                            #     value: null
        00                            #     tagged fields
        00                            #   tagged fields
        01                            # validate_only true
        00                            # tagged fields
     """)),
    ("incremental_alter_configs_resp_v0", IncrementalAlterConfigsResponse, 0,
     {"throttle_time_ms": 0, "responses": [{"error_code": 0, "error_message": None,
                                            "resource_type": 2, "resource_name": "t"}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00 00 01                   # responses: count 1
        00 00                         #   error_code 0
        ff ff                         #   error_message: null
        02                            #   resource_type 2
        00 01 74                      #   resource_name "t"
     """)),
    # ------------------------------------------------------------ DescribeCluster (60)
    ("describe_cluster_req_v1", DescribeClusterRequest, 1,
     {"include_cluster_authorized_operations": True, "endpoint_type": 1}, h("""
        01                            # include_cluster_authorized_operations true
        01                            # endpoint_type 1 brokers (v1+)
        00                            # tagged fields
     """)),
    ("describe_cluster_resp_v1", DescribeClusterResponse, 1,
     {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "endpoint_type": 1,
      "cluster_id": "c", "controller_id": 1,
      "brokers": [{"broker_id": 1, "host": "h", "port": 9092, "rack": None}],
      "cluster_authorized_operations": -2147483648}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00                         # error_code 0
        00                            # error_message: null (compact)
        01                            # endpoint_type 1
        02 63                         # cluster_id "c"
        00 00 00 01                   # controller_id 1
        02                            # brokers: 1
        00 00 00 01                   #   broker_id 1
        02 68                         #   host "h"
        00 00 23 84                   #   port 9092
        00                            #   rack: null
        00                            #   tagged fields
        80 00 00 00                   # cluster_authorized_operations: unknown (INT32_MIN)
        00                            # tagged fields
     """)),
    # ------------------------------------------------------------ DescribeLogDirs (35)
    ("describe_log_dirs_req_v1", DescribeLogDirsRequest, 1,
     {"topics": [{"topic": "t", "partitions": [0]}]}, h("""
        00 00 00 01                   # topics: count 1
        00 01 74                      #   topic "t"
        00 00 00 01 00 00 00 00       #   partitions [0]
     """)),
    ("describe_log_dirs_req_v2", DescribeLogDirsRequest, 2, {"topics": None}, h("""
        00                            # topics: null (every partition)
        00                            # tagged fields
     """)),
    ("describe_log_dirs_resp_v1", DescribeLogDirsResponse, 1,
     {"throttle_time_ms": 0, "results": [{"error_code": 0, "log_dir": "/d", "topics": [
         {"name": "t", "partitions": [{"partition_index": 0, "partition_size": 16,
                                       "offset_lag": 0, "is_future_key": False}]}]}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00 00 01                   # results: count 1
        00 00                         #   error_code 0
        00 02 2f 64                   #   log_dir "/d"
        00 00 00 01                   #   topics: count 1
        00 01 74                      #     name "t"
        00 00 00 01                   #     partitions: count 1
        00 00 00 00                   #       partition_index 0
        00 00 00 00 00 00 00 10       #       partition_size 16
        00 00 00 00 00 00 00 00       #       offset_lag 0
        00                            #       is_future_key false
     """)),
    ("describe_log_dirs_resp_v4", DescribeLogDirsResponse, 4,
     {"throttle_time_ms": 0, "error_code": 0, "results": [{
         "error_code": 0, "log_dir": "/d", "topics": [], "total_bytes": 4096,
         "usable_bytes": 1024}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00                         # error_code 0 (v3+)
        02                            # results: 1
        00 00                         #   error_code 0
        03 2f 64                      #   log_dir "/d"
        01                            #   topics: empty
        00 00 00 00 00 00 10 00       #   total_bytes 4096 (v4+)
        00 00 00 00 00 00 04 00       #   usable_bytes 1024 (v4+)
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    # ---------------------------------------------------------- DescribeProducers (61)
    ("describe_producers_req_v0", DescribeProducersRequest, 0,
     {"topics": [{"name": "t", "partition_indexes": [0]}]}, h("""
        02                            # topics: 1
        02 74                         #   name "t"
        02 00 00 00 00                #   partition_indexes [0]
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    ("describe_producers_resp_v0", DescribeProducersResponse, 0,
     {"throttle_time_ms": 0, "topics": [{"name": "t", "partitions": [{
         "partition_index": 0, "error_code": 0, "error_message": None, "active_producers": [{
             "producer_id": 7, "producer_epoch": 1, "last_sequence": 9, "last_timestamp": 5,
             "coordinator_epoch": 2, "current_txn_start_offset": -1}]}]}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        02                            # topics: 1
        02 74                         #   name "t"
        02                            #   partitions: 1
        00 00 00 00                   #     partition_index 0
        00 00                         #     error_code 0
        00                            #     error_message: null
        02                            #     active_producers: 1
        00 00 00 00 00 00 00 07       #       producer_id 7
        00 00 00 01                   #       producer_epoch 1 (int32 here)
        00 00 00 09                   #       last_sequence 9
        00 00 00 00 00 00 00 05       #       last_timestamp 5
        00 00 00 02                   #       coordinator_epoch 2
        ff ff ff ff ff ff ff ff       #       current_txn_start_offset -1 (none open)
        00                            #       tagged fields
        00                            #     tagged fields
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    # -------------------------------------------------------------- ElectLeaders (43)
    ("elect_leaders_req_v0", ElectLeadersRequest, 0,
     {"topic_partitions": [{"topic": "t", "partitions": [0]}], "timeout_ms": 60_000}, h("""
        00 00 00 01                   # topic_partitions: count 1
        00 01 74                      #   topic "t"
        00 00 00 01 00 00 00 00       #   partitions [0]
        00 00 ea 60                   # timeout_ms 60000
     """)),
    ("elect_leaders_req_v2", ElectLeadersRequest, 2,
     {"election_type": 1, "topic_partitions": None, "timeout_ms": 60_000}, h("""
        01                            # election_type 1 unclean (v1+)
        00                            # topic_partitions: null (every partition)
        00 00 ea 60                   # timeout_ms 60000
        00                            # tagged fields
     """)),
    ("elect_leaders_resp_v0", ElectLeadersResponse, 0,
     {"throttle_time_ms": 0, "replica_election_results": [{"topic": "t", "partition_result": [
         {"partition_id": 0, "error_code": 84, "error_message": "x"}]}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00 00 01                   # replica_election_results: count 1
        00 01 74                      #   topic "t"
        00 00 00 01                   #   partition_result: count 1
        00 00 00 00                   #     partition_id 0
        00 54                         #     error_code 84 ELECTION_NOT_NEEDED
        00 01 78                      #     error_message "x"
     """)),
    ("elect_leaders_resp_v2", ElectLeadersResponse, 2,
     {"throttle_time_ms": 0, "error_code": 0, "replica_election_results": [
         {"topic": "t", "partition_result": [
             {"partition_id": 0, "error_code": 0, "error_message": None}]}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00                         # error_code 0 (v1+)
        02                            # replica_election_results: 1
        02 74                         #   topic "t"
        02                            #   partition_result: 1
        00 00 00 00                   #     partition_id 0
        00 00                         #     error_code 0
        00                            #     error_message: null
        00                            #     tagged fields
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    *TOPIC_PAGES_AND_FEATURES_CASES,
    # DescribeQuorum (55), AddRaftVoter (80), RemoveRaftVoter (81): forwarded to the controller
    *(c for c in KRAFT_CASES if c[1].api_key in (55, 80, 81)),
]


@pytest.mark.parametrize(("msg", "version", "value", "golden"),
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_encode_matches_golden(msg: Message, version: int, value: dict, golden: bytes) -> None:
    assert msg.encode(version, value).hex(" ") == golden.hex(" ")


@pytest.mark.parametrize(("msg", "version", "value", "golden"),
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_decode_golden(msg: Message, version: int, value: dict, golden: bytes) -> None:
    assert plain(msg.decode(version, golden), msg, version) == plain(value, msg, version)


def test_every_api_has_golden_request_and_response() -> None:
    from broker_sim.protocol.api import APIS

    covered = {(c[1].api_key, c[1] is APIS[c[1].api_key].request) for c in CASES}
    assert covered == {(key, is_req) for key in APIS for is_req in (True, False)}


# ---------------------------------------------------------------------------- frames

API_VERSIONS_V3_REQUEST_FRAME = h("""
    00 00 00 15       # size 21
    00 12             # request header v2: api_key 18
    00 03             #   api_version 3
    00 00 00 07       #   correlation_id 7
    00 01 63          #   client_id "c" (int16 length even in header v2)
    00                #   tagged fields: none
    04 70 79 71       # client_software_name "pyq" (compact)
    04 30 2e 31       # client_software_version "0.1" (compact)
    00                # tagged fields: none
""")

API_VERSIONS_V0_RESPONSE_FRAME = h("""
    00 00 00 16       # size 22
    00 00 00 07       # response header v0: correlation_id 7
    00 00             # error_code 0
    00 00 00 02       # api_keys: count 2
    00 00 00 03 00 08 #   Produce 3..8
    00 12 00 00 00 04 #   ApiVersions 0..4
""")

API_VERSIONS_V3_RESPONSE_FRAME = h("""
    00 00 00 1a       # size 26
    00 00 00 07       # response header v0 (never v1 for ApiVersions): correlation_id 7
    00 00             # error_code 0
    03                # api_keys: compact count 2+1
    00 00 00 03 00 08 00  # Produce 3..8, no tags
    00 12 00 00 00 04 00  # ApiVersions 0..4, no tags
    00 00 00 00       # throttle_time_ms 0
    00                # tagged fields: none
""")

PRODUCE_V3_REQUEST_FRAME = h("""
    00 00 00 2b       # size 43
    00 00             # request header v1: api_key 0
    00 03             #   api_version 3
    00 00 00 01       #   correlation_id 1
    00 01 63          #   client_id "c"
    ff ff             # transactional_id: null
    ff ff             # acks -1
    00 00 75 30       # timeout_ms 30000
    00 00 00 01       # topic_data: count 1
    00 01 74          #   name "t"
    00 00 00 01       #   partition_data: count 1
    00 00 00 00       #     index 0
    00 00 00 05       #     records: size 5
    01 02 03 04 05    #     records bytes
""")

FETCH_V4_RESPONSE_FRAME = h("""
    00 00 00 44              # size 68
    00 00 00 02              # response header v0: correlation_id 2
    00 00 00 00              # throttle_time_ms 0
    00 00 00 01              # responses: count 1
    00 01 74                 #   topic "t"
    00 00 00 01              #   partitions: count 1
    00 00 00 00              #     partition_index 0
    00 00                    #     error_code 0
    00 00 00 00 00 00 00 64  #     high_watermark 100
    00 00 00 00 00 00 00 5a  #     last_stable_offset 90
    00 00 00 01              #     aborted_transactions: count 1
    00 00 00 00 00 00 00 07  #       producer_id 7
    00 00 00 00 00 00 00 50  #       first_offset 80
    00 00 00 03              #     records: size 3
    61 62 63                 #     "abc"
""")

_BODIES = {c[0]: c for c in CASES}


@pytest.mark.parametrize(("api_key", "version", "correlation_id", "body", "golden"), [
    pytest.param(18, 3, 7, "api_versions_req_v3", API_VERSIONS_V3_REQUEST_FRAME, id="api_versions_v3"),
    pytest.param(0, 3, 1, "produce_req_v3", PRODUCE_V3_REQUEST_FRAME, id="produce_v3"),
])
def test_request_frame_golden(api_key: int, version: int, correlation_id: int, body: str,
                              golden: bytes) -> None:
    _, msg, _, value, _ = _BODIES[body]
    assert encode_request(api_key, version, correlation_id, "c", value) == golden
    header, decoded = decode_request(golden[4:])
    assert header == RequestHeader(api_key, version, correlation_id, "c")
    assert plain(decoded, msg, version) == plain(value, msg, version)


@pytest.mark.parametrize(("api_key", "version", "correlation_id", "body", "golden"), [
    pytest.param(18, 0, 7, "api_versions_resp_v0", API_VERSIONS_V0_RESPONSE_FRAME,
                 id="api_versions_v0"),
    pytest.param(18, 3, 7, "api_versions_resp_v3", API_VERSIONS_V3_RESPONSE_FRAME,
                 id="api_versions_v3"),
    pytest.param(1, 4, 2, "fetch_resp_v4", FETCH_V4_RESPONSE_FRAME, id="fetch_v4"),
])
def test_response_frame_golden(api_key: int, version: int, correlation_id: int, body: str,
                               golden: bytes) -> None:
    _, msg, _, value, _ = _BODIES[body]
    assert encode_response(api_key, version, correlation_id, value) == golden
    got_id, decoded = decode_response(api_key, version, golden[4:])
    assert got_id == correlation_id
    assert plain(decoded, msg, version) == plain(value, msg, version)
