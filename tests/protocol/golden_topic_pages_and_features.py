"""Golden bytes for DescribeTopicPartitions (75) and UpdateFeatures (57), written by hand from
Kafka's message definitions (both always flexible: compact strings and arrays, a tagged-field
count after every struct; a nullable struct is an int8 marker, -1 null or 1 present, then
its fields). :mod:`tests.protocol.test_golden_bytes` checks them in both directions."""

from __future__ import annotations

import uuid
from typing import Any

from broker_sim.protocol.messages.describe_topic_partitions import (
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
)
from broker_sim.protocol.messages.update_features import (
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)
from broker_sim.protocol.schema import Message


def h(text: str) -> bytes:
    """Hex digits with ``#`` comments and whitespace ignored."""
    return bytes.fromhex("".join(line.split("#", 1)[0] for line in text.splitlines()))


TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")

CASES: list[tuple[str, Message, int, dict[str, Any], bytes]] = [
    # --------------------------------------------------- DescribeTopicPartitions (75)
    ("describe_topic_partitions_req_v0_cursor", DescribeTopicPartitionsRequest, 0,
     {"topics": [{"name": "t"}], "response_partition_limit": 2000,
      "cursor": {"topic_name": "t", "partition_index": 3}}, h("""
        02                            # topics: 1
        02 74                         #   name "t"
        00                            #   tagged fields
        00 00 07 d0                   # response_partition_limit 2000
        01                            # cursor: present
        02 74                         #   topic_name "t"
        00 00 00 03                   #   partition_index 3
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    ("describe_topic_partitions_req_v0_all", DescribeTopicPartitionsRequest, 0,
     {"topics": [], "response_partition_limit": 2, "cursor": None}, h("""
        01                            # topics: 0 (every topic)
        00 00 00 02                   # response_partition_limit 2
        ff                            # cursor: null
        00                            # tagged fields
     """)),
    ("describe_topic_partitions_resp_v0_page", DescribeTopicPartitionsResponse, 0,
     {"throttle_time_ms": 0, "topics": [
         {"error_code": 0, "name": "t", "topic_id": TOPIC_ID, "is_internal": False, "partitions": [
             {"error_code": 0, "partition_index": 0, "leader_id": 1, "leader_epoch": 2,
              "replica_nodes": [1, 2], "isr_nodes": [1], "eligible_leader_replicas": None,
              "last_known_elr": None, "offline_replicas": [2]}],
          "topic_authorized_operations": -2147483648}],
      "next_cursor": {"topic_name": "t", "partition_index": 1}}, h("""
        00 00 00 00                   # throttle_time_ms 0
        02                            # topics: 1
        00 00                         #   error_code 0
        02 74                         #   name "t"
        01 23 45 67 89 ab cd ef       #   topic_id
        01 23 45 67 89 ab cd ef
        00                            #   is_internal false
        02                            #   partitions: 1
        00 00                         #     error_code 0
        00 00 00 00                   #     partition_index 0
        00 00 00 01                   #     leader_id 1
        00 00 00 02                   #     leader_epoch 2
        03 00 00 00 01 00 00 00 02    #     replica_nodes [1, 2]
        02 00 00 00 01                #     isr_nodes [1]
        00                            #     eligible_leader_replicas: null
        00                            #     last_known_elr: null
        02 00 00 00 02                #     offline_replicas [2]
        00                            #     tagged fields
        80 00 00 00                   #   topic_authorized_operations: not asked (INT32_MIN)
        00                            #   tagged fields
        01                            # next_cursor: present
        02 74                         #   topic_name "t"
        00 00 00 01                   #   partition_index 1
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    ("describe_topic_partitions_resp_v0_denied", DescribeTopicPartitionsResponse, 0,
     {"throttle_time_ms": 0, "topics": [
         {"error_code": 29, "name": "s", "topic_id": uuid.UUID(int=0), "is_internal": False,
          "partitions": [], "topic_authorized_operations": -2147483648}],
      "next_cursor": None}, h("""
        00 00 00 00                   # throttle_time_ms 0
        02                            # topics: 1
        00 1d                         #   error_code 29 TOPIC_AUTHORIZATION_FAILED
        02 73                         #   name "s"
        00 00 00 00 00 00 00 00       #   topic_id: zero (not told)
        00 00 00 00 00 00 00 00
        00                            #   is_internal false
        01                            #   partitions: 0
        80 00 00 00                   #   topic_authorized_operations
        00                            #   tagged fields
        ff                            # next_cursor: null (nothing left)
        00                            # tagged fields
     """)),
    # ------------------------------------------------------------ UpdateFeatures (57)
    ("update_features_req_v0", UpdateFeaturesRequest, 0,
     {"timeout_ms": 60_000, "feature_updates": [
         {"feature": "f", "max_version_level": 1, "allow_downgrade": False}]}, h("""
        00 00 ea 60                   # timeout_ms 60000
        02                            # feature_updates: 1
        02 66                         #   feature "f"
        00 01                         #   max_version_level 1
        00                            #   allow_downgrade false (v0 only)
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    ("update_features_req_v1", UpdateFeaturesRequest, 1,
     {"timeout_ms": 30_000, "feature_updates": [
         {"feature": "f", "max_version_level": 2, "upgrade_type": 2}], "validate_only": True}, h("""
        00 00 75 30                   # timeout_ms 30000
        02                            # feature_updates: 1
        02 66                         #   feature "f"
        00 02                         #   max_version_level 2
        02                            #   upgrade_type 2 safe downgrade (v1+)
        00                            #   tagged fields
        01                            # validate_only true (v1+)
        00                            # tagged fields
     """)),
    ("update_features_resp_v1", UpdateFeaturesResponse, 1,
     {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
      "results": [{"feature": "f", "error_code": 95, "error_message": "x"}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00                         # error_code 0
        00                            # error_message: null
        02                            # results: 1 (v0-1)
        02 66                         #   feature "f"
        00 5f                         #   error_code 95 INVALID_UPDATE_VERSION
        02 78                         #   error_message "x"
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    ("update_features_resp_v2", UpdateFeaturesResponse, 2,
     {"throttle_time_ms": 0, "error_code": 95, "error_message": "x"}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 5f                         # error_code 95 INVALID_UPDATE_VERSION
        02 78                         # error_message "x"
        00                            # tagged fields (no results from v2)
     """)),
]
