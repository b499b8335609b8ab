"""DescribeQuorum (API 55): the controller quorum of the metadata log, what
``kafka-metadata-quorum describe --status`` / ``--replication`` print; and its voter changes,
AddRaftVoter (80) and RemoveRaftVoter (81). Any broker forwards these requests to the active
controller, so they go to the least loaded one.

A replica's *lag* is the high watermark minus its log end offset (never negative); its
*last fetch age* is how long ago it last fetched, in milliseconds, by this machine's clock
against the timestamps the leader reports (None when unknown). On Kafka the observers are
the brokers following the metadata log; on pyq they are its brokers following the
controller's image, at the image version they applied.
"""

from __future__ import annotations

import time
import uuid
from typing import NamedTuple

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import error_for_code
from broker_sim.protocol.schema import Data

from .sync_client import SyncClient

METADATA_TOPIC = "__cluster_metadata"


class QuorumReplica(NamedTuple):
    node_id: int
    log_end_offset: int
    lag: int
    #: milliseconds since the last fetch / since last caught up (None: unknown)
    last_fetch_age_ms: int | None
    last_caught_up_age_ms: int | None
    #: the replica's log directory id (DescribeQuorum v2; zero when unknown)
    directory_id: uuid.UUID = uuid.UUID(int=0)


class QuorumInfo(NamedTuple):
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: list[QuorumReplica]
    observers: list[QuorumReplica]
    #: node id -> "LISTENER://host:port" of each voter that reported one (DescribeQuorum v2)
    endpoints: dict[int, list[str]]


def describe_quorum(sync: SyncClient, deadline_ms: float) -> QuorumInfo:
    """The quorum as the active controller reports it; raises its error (e.g.
    ClusterAuthorizationFailed without Describe on the cluster)."""
    body = {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]}
    response = sync.request_any(ApiKey.DESCRIBE_QUORUM, body, deadline_ms)
    if response.error_code:
        raise error_for_code(response.error_code)(
            f"DescribeQuorum: {response.get('error_message') or 'refused'}")
    partition = response.topics[0].partitions[0]
    if partition.error_code:
        raise error_for_code(partition.error_code)(
            f"DescribeQuorum of {METADATA_TOPIC}-0: {partition.get('error_message') or 'refused'}")
    now = int(time.time() * 1000)
    hw = partition.high_watermark

    def age(ts: int) -> int | None:
        return None if ts < 0 else max(0, now - ts)

    def replica(r: Data) -> QuorumReplica:
        return QuorumReplica(r.replica_id, r.log_end_offset, max(0, hw - r.log_end_offset),
                             age(r.last_fetch_timestamp), age(r.last_caught_up_timestamp),
                             r.replica_directory_id)

    endpoints = {n.node_id: [f"{lst.name}://{lst.host}:{lst.port}" for lst in n.listeners]
                 for n in response.get("nodes") or ()}
    return QuorumInfo(partition.leader_id, partition.leader_epoch, hw,
                      [replica(r) for r in partition.current_voters],
                      [replica(r) for r in partition.observers], endpoints)


def _raise_voter_error(api: str, voter_id: int, response: Data) -> None:
    if response.error_code:
        raise error_for_code(response.error_code)(
            f"{api} of node {voter_id}: {response.get('error_message') or 'refused'}")


def add_raft_voter(sync: SyncClient, voter_id: int, host: str, port: int, deadline_ms: float,
                   directory_id: uuid.UUID | None = None, listener: str = "CONTROLLER") -> None:
    """Make controller ``voter_id`` (reachable at ``host:port``, fetching the metadata log as
    an observer already) a voter (AddRaftVoter); returns once the new voter set is
    committed."""
    timeout_ms = max(0, int(deadline_ms - sync.now()))
    body = {"cluster_id": None, "timeout_ms": timeout_ms, "voter_id": voter_id,
            "voter_directory_id": directory_id or uuid.UUID(int=0),
            "listeners": [{"name": listener, "host": host, "port": port}],
            "ack_when_committed": True}
    _raise_voter_error("AddRaftVoter", voter_id,
                       sync.request_any(ApiKey.ADD_RAFT_VOTER, body, deadline_ms))


def remove_raft_voter(sync: SyncClient, voter_id: int, deadline_ms: float,
                      directory_id: uuid.UUID | None = None) -> None:
    """Take controller ``voter_id`` out of the voter set (RemoveRaftVoter). A voter is named
    by its id and directory id (KIP-853): without ``directory_id``, the one DescribeQuorum
    reports for it."""
    if directory_id is None:
        voters = describe_quorum(sync, deadline_ms).voters
        directory_id = next((v.directory_id for v in voters if v.node_id == voter_id), None)
    body = {"cluster_id": None, "voter_id": voter_id,
            "voter_directory_id": directory_id or uuid.UUID(int=0)}
    _raise_voter_error("RemoveRaftVoter", voter_id,
                       sync.request_any(ApiKey.REMOVE_RAFT_VOTER, body, deadline_ms))
