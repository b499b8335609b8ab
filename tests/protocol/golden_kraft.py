"""Golden bytes for KRaft's RPCs, written by hand from Kafka's message definitions: Vote (52),
BeginQuorumEpoch (53), EndQuorumEpoch (54), DescribeQuorum (55), FetchSnapshot (59),
AddRaftVoter (80), RemoveRaftVoter (81), UpdateRaftVoter (82) and Fetch's KRaft versions.
Flexible versions: compact strings and arrays (uvarint length + 1), a tagged-field section
after every struct (count, then tag, size, value); a tagged field equal to its default is
left out. :mod:`tests.protocol.test_kraft_codecs` checks them in both directions."""

from __future__ import annotations

import uuid
from typing import Any

from broker_sim.protocol.messages.describe_quorum import (
    DescribeQuorumRequest,
    DescribeQuorumResponse,
)
from broker_sim.protocol.messages.fetch import FetchRequest, FetchResponse
from broker_sim.protocol.messages.fetch_snapshot import FetchSnapshotRequest, FetchSnapshotResponse
from broker_sim.protocol.messages.quorum_epoch import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    VoteRequest,
    VoteResponse,
)
from broker_sim.protocol.messages.raft_voters import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
)
from broker_sim.protocol.schema import Message


def h(text: str) -> bytes:
    """Hex digits with ``#`` comments and whitespace ignored."""
    return bytes.fromhex("".join(line.split("#", 1)[0] for line in text.splitlines()))


#: A directory id: bytes 00 .. 0f.
DIR = uuid.UUID("000102030405060708090a0b0c0d0e0f")
META = "__cluster_metadata"
#: "__cluster_metadata" as a compact string: uvarint 18 + 1, then its bytes.
META_COMPACT = "13 5f 5f 63 6c 75 73 74 65 72 5f 6d 65 74 61 64 61 74 61"
#: ... and as a classic string: int16 length 18.
META_CLASSIC = "00 12 5f 5f 63 6c 75 73 74 65 72 5f 6d 65 74 61 64 61 74 61"

CASES: list[tuple[str, Message, int, dict[str, Any], bytes]] = [
    # ------------------------------------------------------------------------ Vote (52)
    ("vote_req_v2_pre_vote", VoteRequest, 2,
     {"cluster_id": "c", "voter_id": 2, "topics": [{"topic_name": META, "partitions": [
         {"partition_index": 0, "replica_epoch": 5, "replica_id": 1, "replica_directory_id": DIR,
          "voter_directory_id": uuid.UUID(int=0), "last_offset_epoch": 4, "last_offset": 100,
          "pre_vote": True}]}]}, h(f"""
        02 63                         # cluster_id "c" (compact, nullable)
        00 00 00 02                   # voter_id 2 (v1+)
        02                            # topics: 1
        {META_COMPACT}                #   topic_name
        02                            #   partitions: 1
        00 00 00 00                   #     partition_index 0
        00 00 00 05                   #     replica_epoch 5
        00 00 00 01                   #     replica_id 1
        00 01 02 03 04 05 06 07       #     replica_directory_id (v1+)
        08 09 0a 0b 0c 0d 0e 0f
        00 00 00 00 00 00 00 00       #     voter_directory_id: zero (v1+)
        00 00 00 00 00 00 00 00
        00 00 00 04                   #     last_offset_epoch 4
        00 00 00 00 00 00 00 64       #     last_offset 100
        01                            #     pre_vote true (v2+)
        00                            #     tagged fields
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    ("vote_req_v0", VoteRequest, 0,
     {"cluster_id": None, "topics": [{"topic_name": META, "partitions": [
         {"partition_index": 0, "replica_epoch": 1, "replica_id": 3, "last_offset_epoch": 0,
          "last_offset": 0}]}]}, h(f"""
        00                            # cluster_id: null
        02                            # topics: 1
        {META_COMPACT}
        02                            #   partitions: 1
        00 00 00 00                   #     partition_index 0
        00 00 00 01                   #     replica_epoch 1
        00 00 00 03                   #     replica_id 3
        00 00 00 00                   #     last_offset_epoch 0
        00 00 00 00 00 00 00 00       #     last_offset 0
        00 00 00                      #     tagged fields x3 (partition, topic, request)
     """)),
    ("vote_resp_v1_endpoints", VoteResponse, 1,
     {"error_code": 0, "topics": [{"topic_name": META, "partitions": [
         {"partition_index": 0, "error_code": 0, "leader_id": 2, "leader_epoch": 5,
          "vote_granted": True}]}],
      "node_endpoints": [{"node_id": 2, "host": "h", "port": 9093}]}, h(f"""
        00 00                         # error_code 0
        02                            # topics: 1
        {META_COMPACT}
        02                            #   partitions: 1
        00 00 00 00                   #     partition_index 0
        00 00                         #     error_code 0
        00 00 00 02                   #     leader_id 2
        00 00 00 05                   #     leader_epoch 5
        01                            #     vote_granted true
        00                            #     tagged fields
        00                            #   tagged fields
        01                            # tagged fields: 1
        00                            #   tag 0: node_endpoints
        0a                            #   size 10
        02                            #     1 endpoint
        00 00 00 02                   #       node_id 2
        02 68                         #       host "h"
        23 85                         #       port 9093 (uint16)
        00                            #       tagged fields
     """)),
    # ------------------------------------------------------------ BeginQuorumEpoch (53)
    ("begin_quorum_epoch_req_v0", BeginQuorumEpochRequest, 0,
     {"cluster_id": "c", "topics": [{"topic_name": META, "partitions": [
         {"partition_index": 0, "leader_id": 1, "leader_epoch": 7}]}]}, h(f"""
        00 01 63                      # cluster_id "c" (int16 length: not flexible at v0)
        00 00 00 01                   # topics: int32 count 1
        {META_CLASSIC}                #   topic_name
        00 00 00 01                   #   partitions: 1
        00 00 00 00                   #     partition_index 0
        00 00 00 01                   #     leader_id 1
        00 00 00 07                   #     leader_epoch 7
     """)),
    ("begin_quorum_epoch_req_v1", BeginQuorumEpochRequest, 1,
     {"cluster_id": "c", "voter_id": 3, "topics": [{"topic_name": META, "partitions": [
         {"partition_index": 0, "voter_directory_id": DIR, "leader_id": 1, "leader_epoch": 7}]}],
      "leader_endpoints": [{"name": "CONTROLLER", "host": "h", "port": 9093}]}, h(f"""
        02 63                         # cluster_id "c"
        00 00 00 03                   # voter_id 3
        02                            # topics: 1
        {META_COMPACT}
        02                            #   partitions: 1
        00 00 00 00                   #     partition_index 0
        00 01 02 03 04 05 06 07       #     voter_directory_id
        08 09 0a 0b 0c 0d 0e 0f
        00 00 00 01                   #     leader_id 1
        00 00 00 07                   #     leader_epoch 7
        00 00                         #     tagged fields (partition, topic)
        02                            # leader_endpoints: 1
        0b 43 4f 4e 54 52 4f 4c 4c 45 52  # name "CONTROLLER"
        02 68                         #   host "h"
        23 85                         #   port 9093
        00                            #   tagged fields
        00                            # tagged fields
     """)),
    ("begin_quorum_epoch_resp_v0", BeginQuorumEpochResponse, 0,
     {"error_code": 0, "topics": [{"topic_name": META, "partitions": [
         {"partition_index": 0, "error_code": 0, "leader_id": 1, "leader_epoch": 7}]}]}, h(f"""
        00 00                         # error_code 0
        00 00 00 01                   # topics: 1
        {META_CLASSIC}
        00 00 00 01                   #   partitions: 1
        00 00 00 00                   #     partition_index 0
        00 00                         #     error_code 0
        00 00 00 01                   #     leader_id 1
        00 00 00 07                   #     leader_epoch 7
     """)),
    # -------------------------------------------------------------- EndQuorumEpoch (54)
    ("end_quorum_epoch_req_v0", EndQuorumEpochRequest, 0,
     {"cluster_id": None, "topics": [{"topic_name": META, "partitions": [
         {"partition_index": 0, "leader_id": 1, "leader_epoch": 7,
          "preferred_successors": [2, 3]}]}]}, h(f"""
        ff ff                         # cluster_id: null (int16 -1)
        00 00 00 01                   # topics: 1
        {META_CLASSIC}
        00 00 00 01                   #   partitions: 1
        00 00 00 00                   #     partition_index 0
        00 00 00 01                   #     leader_id 1
        00 00 00 07                   #     leader_epoch 7
        00 00 00 02                   #     preferred_successors (v0): 2
        00 00 00 02 00 00 00 03       #       2, 3
     """)),
    ("end_quorum_epoch_req_v1", EndQuorumEpochRequest, 1,
     {"cluster_id": "c", "topics": [{"topic_name": META, "partitions": [
         {"partition_index": 0, "leader_id": 1, "leader_epoch": 7,
          "preferred_candidates": [{"candidate_id": 2, "candidate_directory_id": DIR}]}]}],
      "leader_endpoints": []}, h(f"""
        02 63                         # cluster_id "c"
        02                            # topics: 1
        {META_COMPACT}
        02                            #   partitions: 1
        00 00 00 00                   #     partition_index 0
        00 00 00 01                   #     leader_id 1
        00 00 00 07                   #     leader_epoch 7
        02                            #     preferred_candidates (v1+): 1
        00 00 00 02                   #       candidate_id 2
        00 01 02 03 04 05 06 07       #       candidate_directory_id
        08 09 0a 0b 0c 0d 0e 0f
        00 00 00                      #       tagged fields (candidate, partition, topic)
        01                            # leader_endpoints: empty
        00                            # tagged fields
     """)),
    ("end_quorum_epoch_resp_v1", EndQuorumEpochResponse, 1,
     {"error_code": 0, "topics": [{"topic_name": META, "partitions": [
         {"partition_index": 0, "error_code": 0, "leader_id": -1, "leader_epoch": 8}]}]}, h(f"""
        00 00                         # error_code 0
        02                            # topics: 1
        {META_COMPACT}
        02                            #   partitions: 1
        00 00 00 00                   #     partition_index 0
        00 00                         #     error_code 0
        ff ff ff ff                   #     leader_id -1 (unknown)
        00 00 00 08                   #     leader_epoch 8
        00 00                         #     tagged fields (partition, topic)
        00                            # tagged fields: node_endpoints empty, so left out
     """)),
    # -------------------------------------------------------------- DescribeQuorum (55)
    ("describe_quorum_req_v0", DescribeQuorumRequest, 0,
     {"topics": [{"topic_name": META, "partitions": [{"partition_index": 0}]}]}, h(f"""
        02                            # topics: 1
        {META_COMPACT}
        02                            #   partitions: 1
        00 00 00 00                   #     partition_index 0
        00 00 00                      #     tagged fields (partition, topic, request)
     """)),
    ("describe_quorum_resp_v2", DescribeQuorumResponse, 2,
     {"error_code": 0, "error_message": None, "topics": [{"topic_name": META, "partitions": [
         {"partition_index": 0, "error_code": 0, "error_message": None, "leader_id": 1,
          "leader_epoch": 3, "high_watermark": 42,
          "current_voters": [{"replica_id": 1, "replica_directory_id": DIR, "log_end_offset": 42,
                              "last_fetch_timestamp": 1000, "last_caught_up_timestamp": 1000}],
          "observers": []}]}],
      "nodes": [{"node_id": 1, "listeners": [{"name": "C", "host": "h", "port": 9093}]}]},
     h(f"""
        00 00                         # error_code 0
        00                            # error_message: null (v2+)
        02                            # topics: 1
        {META_COMPACT}
        02                            #   partitions: 1
        00 00 00 00                   #     partition_index 0
        00 00                         #     error_code 0
        00                            #     error_message: null
        00 00 00 01                   #     leader_id 1
        00 00 00 03                   #     leader_epoch 3
        00 00 00 00 00 00 00 2a       #     high_watermark 42
        02                            #     current_voters: 1
        00 00 00 01                   #       replica_id 1
        00 01 02 03 04 05 06 07       #       replica_directory_id (v2+)
        08 09 0a 0b 0c 0d 0e 0f
        00 00 00 00 00 00 00 2a       #       log_end_offset 42
        00 00 00 00 00 00 03 e8       #       last_fetch_timestamp 1000 (v1+)
        00 00 00 00 00 00 03 e8       #       last_caught_up_timestamp 1000 (v1+)
        00                            #       tagged fields
        01                            #     observers: empty
        00 00                         #     tagged fields (partition, topic)
        02                            # nodes: 1 (v2+)
        00 00 00 01                   #   node_id 1
        02                            #   listeners: 1
        02 43                         #     name "C"
        02 68                         #     host "h"
        23 85                         #     port 9093
        00 00                         #     tagged fields (listener, node)
        00                            # tagged fields
     """)),
    ("describe_quorum_resp_v0", DescribeQuorumResponse, 0,
     {"error_code": 0, "topics": [{"topic_name": META, "partitions": [
         {"partition_index": 0, "error_code": 0, "leader_id": 1, "leader_epoch": 3,
          "high_watermark": 42, "current_voters": [{"replica_id": 1, "log_end_offset": 42}],
          "observers": [{"replica_id": 4, "log_end_offset": 40}]}]}]}, h(f"""
        00 00                         # error_code 0
        02                            # topics: 1
        {META_COMPACT}
        02                            #   partitions: 1
        00 00 00 00                   #     partition_index 0
        00 00                         #     error_code 0
        00 00 00 01                   #     leader_id 1
        00 00 00 03                   #     leader_epoch 3
        00 00 00 00 00 00 00 2a       #     high_watermark 42
        02                            #     current_voters: 1
        00 00 00 01                   #       replica_id 1
        00 00 00 00 00 00 00 2a       #       log_end_offset 42 (no timestamps before v1)
        00                            #       tagged fields
        02                            #     observers: 1
        00 00 00 04                   #       replica_id 4
        00 00 00 00 00 00 00 28       #       log_end_offset 40
        00                            #       tagged fields
        00 00 00                      #     tagged fields (partition, topic, response)
     """)),
    # --------------------------------------------------------------- FetchSnapshot (59)
    ("fetch_snapshot_req_v1", FetchSnapshotRequest, 1,
     {"cluster_id": "c", "replica_id": 2, "max_bytes": 1024, "topics": [{"name": META, "partitions": [
         {"partition": 0, "current_leader_epoch": 3,
          "snapshot_id": {"end_offset": 100, "epoch": 2}, "position": 512,
          "replica_directory_id": DIR}]}]}, h(f"""
        00 00 00 02                   # replica_id 2
        00 00 04 00                   # max_bytes 1024
        02                            # topics: 1
        {META_COMPACT}                #   name
        02                            #   partitions: 1
        00 00 00 00                   #     partition 0
        00 00 00 03                   #     current_leader_epoch 3
        00 00 00 00 00 00 00 64       #     snapshot_id.end_offset 100
        00 00 00 02                   #     snapshot_id.epoch 2
        00                            #     snapshot_id's tagged fields
        00 00 00 00 00 00 02 00       #     position 512
        01                            #     tagged fields: 1
        00 10                         #       tag 0 (replica_directory_id, v1+), size 16
        00 01 02 03 04 05 06 07
        08 09 0a 0b 0c 0d 0e 0f
        00                            #   tagged fields (topic)
        01                            # tagged fields: 1
        00 02 02 63                   #   tag 0 (cluster_id), size 2: "c"
     """)),
    ("fetch_snapshot_resp_v0", FetchSnapshotResponse, 0,
     {"throttle_time_ms": 0, "error_code": 0, "topics": [{"name": META, "partitions": [
         {"index": 0, "error_code": 0, "snapshot_id": {"end_offset": 100, "epoch": 2},
          "current_leader": {"leader_id": 1, "leader_epoch": 3}, "size": 3, "position": 0,
          "unaligned_records": b"abc"}]}]}, h(f"""
        00 00 00 00                   # throttle_time_ms 0
        00 00                         # error_code 0
        02                            # topics: 1
        {META_COMPACT}
        02                            #   partitions: 1
        00 00 00 00                   #     index 0
        00 00                         #     error_code 0
        00 00 00 00 00 00 00 64       #     snapshot_id.end_offset 100
        00 00 00 02                   #     snapshot_id.epoch 2
        00                            #     snapshot_id's tagged fields
        00 00 00 00 00 00 00 03       #     size 3
        00 00 00 00 00 00 00 00       #     position 0
        04 61 62 63                   #     unaligned_records: compact bytes "abc"
        01                            #     tagged fields: 1
        00 09                         #       tag 0 (current_leader), size 9
        00 00 00 01 00 00 00 03 00    #         leader_id 1, leader_epoch 3, no tags
        00                            #   tagged fields (topic)
        00                            # tagged fields
     """)),
    # ---------------------------------------------------------------- AddRaftVoter (80)
    ("add_raft_voter_req_v1", AddRaftVoterRequest, 1,
     {"cluster_id": "c", "timeout_ms": 30_000, "voter_id": 4, "voter_directory_id": DIR,
      "listeners": [{"name": "C", "host": "h", "port": 9093}], "ack_when_committed": False}, h("""
        02 63                         # cluster_id "c"
        00 00 75 30                   # timeout_ms 30000
        00 00 00 04                   # voter_id 4
        00 01 02 03 04 05 06 07       # voter_directory_id
        08 09 0a 0b 0c 0d 0e 0f
        02                            # listeners: 1
        02 43 02 68 23 85 00          #   "C", "h", 9093, no tags
        00                            # ack_when_committed false (v1+)
        00                            # tagged fields
     """)),
    ("add_raft_voter_resp_v0", AddRaftVoterResponse, 0,
     {"throttle_time_ms": 0, "error_code": 35, "error_message": "x"}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 23                         # error_code 35 UNSUPPORTED_VERSION
        02 78                         # error_message "x"
        00                            # tagged fields
     """)),
    # ------------------------------------------------------------- RemoveRaftVoter (81)
    ("remove_raft_voter_req_v0", RemoveRaftVoterRequest, 0,
     {"cluster_id": None, "voter_id": 4, "voter_directory_id": DIR}, h("""
        00                            # cluster_id: null
        00 00 00 04                   # voter_id 4
        00 01 02 03 04 05 06 07       # voter_directory_id
        08 09 0a 0b 0c 0d 0e 0f
        00                            # tagged fields
     """)),
    ("remove_raft_voter_resp_v0", RemoveRaftVoterResponse, 0,
     {"throttle_time_ms": 0, "error_code": 0, "error_message": None}, h("""
        00 00 00 00 00 00 00 00       # throttle_time_ms 0, error_code 0, error_message null, no tags
     """)),
    # ------------------------------------------------------------- UpdateRaftVoter (82)
    ("update_raft_voter_req_v0", UpdateRaftVoterRequest, 0,
     {"cluster_id": "c", "current_leader_epoch": 3, "voter_id": 2, "voter_directory_id": DIR,
      "listeners": [], "kraft_version_feature": {"min_supported_version": 0,
                                                 "max_supported_version": 1}}, h("""
        02 63                         # cluster_id "c"
        00 00 00 03                   # current_leader_epoch 3
        00 00 00 02                   # voter_id 2
        00 01 02 03 04 05 06 07       # voter_directory_id
        08 09 0a 0b 0c 0d 0e 0f
        01                            # listeners: empty
        00 00 00 01 00                # kraft_version_feature: min 0, max 1, no tags
        00                            # tagged fields
     """)),
    ("update_raft_voter_resp_v0", UpdateRaftVoterResponse, 0,
     {"throttle_time_ms": 0, "error_code": 0,
      "current_leader": {"leader_id": 1, "leader_epoch": 3, "host": "h", "port": 9093}}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00                         # error_code 0
        01                            # tagged fields: 1
        00 0f                         #   tag 0 (current_leader), size 15
        00 00 00 01                   #     leader_id 1
        00 00 00 03                   #     leader_epoch 3
        02 68                         #     host "h"
        00 00 23 85                   #     port 9093 (int32 here)
        00                            #     tagged fields
     """)),
    # --------------------------------------------------------- Fetch, KRaft's versions (1)
    ("fetch_req_v17_kraft", FetchRequest, 17,
     {"cluster_id": "c", "replica_state": {"replica_id": 2, "replica_epoch": -1},
      "max_wait_ms": 500, "min_bytes": 0, "max_bytes": 8_388_608, "isolation_level": 0,
      "session_id": 0, "session_epoch": -1,
      "topics": [{"topic_id": DIR, "partitions": [
          {"partition": 0, "current_leader_epoch": 3, "fetch_offset": 42, "last_fetched_epoch": 3,
           "log_start_offset": -1, "partition_max_bytes": 1_048_576, "replica_directory_id": DIR}]}],
      "forgotten_topics_data": [], "rack_id": ""}, h("""
        00 00 01 f4                   # max_wait_ms 500 (no replica_id from v15)
        00 00 00 00                   # min_bytes 0
        00 80 00 00                   # max_bytes 8 MiB
        00                            # isolation_level 0
        00 00 00 00                   # session_id 0
        ff ff ff ff                   # session_epoch -1
        02                            # topics: 1
        00 01 02 03 04 05 06 07       #   topic_id (v13+)
        08 09 0a 0b 0c 0d 0e 0f
        02                            #   partitions: 1
        00 00 00 00                   #     partition 0
        00 00 00 03                   #     current_leader_epoch 3
        00 00 00 00 00 00 00 2a       #     fetch_offset 42
        00 00 00 03                   #     last_fetched_epoch 3 (v12+)
        ff ff ff ff ff ff ff ff       #     log_start_offset -1
        00 10 00 00                   #     partition_max_bytes 1 MiB
        01 00 10                      #     tagged fields: 1; tag 0 (replica_directory_id), size 16
        00 01 02 03 04 05 06 07
        08 09 0a 0b 0c 0d 0e 0f
        00                            #   tagged fields (topic)
        01                            # forgotten_topics_data: empty
        01                            # rack_id ""
        02                            # tagged fields: 2
        00 02 02 63                   #   tag 0 (cluster_id), size 2: "c"
        01 0d                         #   tag 1 (replica_state), size 13
        00 00 00 02                   #     replica_id 2
        ff ff ff ff ff ff ff ff       #     replica_epoch -1
        00                            #     tagged fields
     """)),
    ("fetch_resp_v16_diverging", FetchResponse, 16,
     {"throttle_time_ms": 0, "error_code": 0, "session_id": 0,
      "responses": [{"topic_id": DIR, "partitions": [
          {"partition_index": 0, "error_code": 0, "high_watermark": 40, "last_stable_offset": -1,
           "log_start_offset": 0, "diverging_epoch": {"epoch": 2, "end_offset": 30},
           "current_leader": {"leader_id": 1, "leader_epoch": 3}, "snapshot_id": None,
           "aborted_transactions": None, "preferred_read_replica": -1, "records": None}]}],
      "node_endpoints": [{"node_id": 1, "host": "h", "port": 9093, "rack": None}]}, h("""
        00 00 00 00                   # throttle_time_ms 0
        00 00                         # error_code 0
        00 00 00 00                   # session_id 0
        02                            # responses: 1
        00 01 02 03 04 05 06 07       #   topic_id (v13+)
        08 09 0a 0b 0c 0d 0e 0f
        02                            #   partitions: 1
        00 00 00 00                   #     partition_index 0
        00 00                         #     error_code 0
        00 00 00 00 00 00 00 28       #     high_watermark 40
        ff ff ff ff ff ff ff ff       #     last_stable_offset -1
        00 00 00 00 00 00 00 00       #     log_start_offset 0
        00                            #     aborted_transactions: null
        ff ff ff ff                   #     preferred_read_replica -1
        00                            #     records: null
        02                            #     tagged fields: 2 (snapshot_id absent)
        00 0d                         #       tag 0 (diverging_epoch), size 13
        00 00 00 02                   #         epoch 2
        00 00 00 00 00 00 00 1e       #         end_offset 30
        00                            #         tagged fields
        01 09                         #       tag 1 (current_leader), size 9
        00 00 00 01 00 00 00 03 00    #         leader_id 1, leader_epoch 3, no tags
        00                            #   tagged fields (topic)
        01                            # tagged fields: 1
        00 0d                         #   tag 0 (node_endpoints, v16+), size 13
        02                            #     1 endpoint
        00 00 00 01                   #       node_id 1
        02 68                         #       host "h"
        00 00 23 85                   #       port 9093 (int32 in Fetch)
        00                            #       rack: null
        00                            #       tagged fields
     """)),
]
