"""Administrative operations: topics, topic and broker configs, offsets, consumer groups and
their offsets, cluster description, SCRAM users, ACLs.

Example (needs a running broker)::

    admin = Admin(bootstrap_servers="127.0.0.1:9092")
    admin.create_topics([NewTopic("events", 3, configs={"retention.ms": "3600000"})])
    admin.list_offsets({("events", 0): "earliest", ("events", 1): "latest"})
    # {TopicPartition('events', 0): OffsetAndTimestamp(offset=0, ...), ...}
    admin.commit_offsets("my-query", {("events", 0): OffsetAndMetadata(42, "batch 7")})
    admin.fetch_offsets("my-query")
    # {TopicPartition('events', 0): OffsetAndMetadata(offset=42, metadata='batch 7', ...)}
    admin.delete_records({("events", 0): 40})  # records before offset 40 are gone
    # {TopicPartition('events', 0): 40}

Each call blocks the calling thread until the brokers answer, up to ``timeout_ms``
(default ``default.api.timeout.ms``), and raises the Kafka error of the first topic or
partition that failed (e.g. ``TopicAlreadyExists``, ``UnknownTopicOrPartition``), its
message naming the topic.

Routing: topic creation, growth (CreatePartitions) and deletion go to the controller;
everything about a consumer group to its coordinator (:mod:`.group_admin`); ListOffsets
and DeleteRecords to each partition's leader; a broker's DescribeConfigs to that broker
(:mod:`.config_admin`); the rest to the least loaded broker. Group offsets are
committed as a *simple* group (generation -1, member id ""), as a consumer without group
membership does: the group exists only to hold offsets, so tools can show a reader's
progress and lag.

Threading: one thread at a time (see :mod:`connector.client.sync_client`).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from broker_sim.common import SYSTEM_CLOCK, Clock
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    TopicAlreadyExists,
    UnknownTopicOrPartition,
    error_for_code,
)
from broker_sim.security.acl import AclBinding, AclFilter
from broker_sim.security.scram import (
    DEFAULT_ITERATIONS,
    MECHANISM_BY_ID,
    MECHANISMS,
    salted_password,
)

from .config import AdminConfig
from .config_admin import AlterConfigOp, ConfigAdmin, ConfigEntry, Resource
from .delete_records import delete_records
from .group_admin import (
    TRANSACTION_KEY,
    ConsumerGroupDescription,
    GroupAdmin,
    GroupDescription,
    GroupListing,
    OffsetAndMetadata,
    TransactionDescription,
    TransactionListing,
)
from .log_dirs import describe_log_dirs
from .metadata import Cluster, Node, PartitionInfo, TopicPartition
from .offsets import EARLIEST, LATEST, OffsetAndTimestamp, list_offsets
from .quorum import QuorumInfo, add_raft_voter, describe_quorum, remove_raft_voter
from .sync_client import SyncClient

log = logging.getLogger(__name__)


class NewTopic(NamedTuple):
    name: str
    num_partitions: int = 1
    replication_factor: int = 1
    configs: Mapping[str, str] | None = None


class TopicDescription(NamedTuple):
    name: str
    partitions: list[PartitionInfo]
    is_internal: bool = False


class ClusterDescription(NamedTuple):
    cluster_id: str | None
    controller_id: int
    brokers: list[Node]




OffsetQuery = int | str  # EARLIEST (-2), LATEST (-1), a timestamp (ms), "earliest", "latest"
_NAMED_QUERIES = {"earliest": EARLIEST, "latest": LATEST}


def _tp(key: TopicPartition | tuple[str, int]) -> TopicPartition:
    return key if isinstance(key, TopicPartition) else TopicPartition(*key)


def _filter_body(f: AclFilter) -> dict[str, Any]:
    return {"resource_type_filter": int(f.resource_type), "resource_name_filter": f.name,
            "pattern_type_filter": int(f.pattern), "principal_filter": f.principal,
            "host_filter": f.host, "operation": int(f.operation), "permission_type": int(f.permission)}


def _raise_for(code: int, what: str, message: str | None = None) -> None:
    if code:
        raise error_for_code(code)(f"{what}: {message}" if message else what)


class Admin:
    def __init__(self, config: AdminConfig | Mapping[str, Any] | None = None, *,
                 clock: Clock = SYSTEM_CLOCK, **options: Any) -> None:
        self.config = AdminConfig.coerce(config, **options)
        self._sync = SyncClient(self.config, clock=clock)
        self._groups = GroupAdmin(self._sync, self.config)
        self._configs = ConfigAdmin(self._sync)

    # ---- topics ---------------------------------------------------------------------
    def create_topics(self, topics: Iterable[NewTopic | str], *, validate_only: bool = False,
                      if_not_exists: bool = False, timeout_ms: float | None = None) -> None:
        """Create topics (a bare name means 1 partition, replication factor 1)."""
        new = [NewTopic(t) if isinstance(t, str) else t for t in topics]
        deadline = self._sync.deadline(timeout_ms)
        body = {"topics": [{"name": t.name, "num_partitions": t.num_partitions,
                            "replication_factor": t.replication_factor, "assignments": [],
                            "configs": [{"name": k, "value": str(v)}
                                        for k, v in (t.configs or {}).items()]}
                           for t in new],
                "timeout_ms": int(deadline - self._sync.now()), "validate_only": validate_only}
        response = self._sync.request(self._controller(deadline), ApiKey.CREATE_TOPICS, body,
                                      deadline)
        for result in response.topics:
            if result.error_code == TopicAlreadyExists.code and if_not_exists:
                continue
            _raise_for(result.error_code, f"topic {result.name!r}", result.error_message)

    def create_topic(self, name: str, num_partitions: int = 1, replication_factor: int = 1,
                     configs: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        self.create_topics([NewTopic(name, num_partitions, replication_factor, configs)], **kwargs)

    def create_partitions(self, new_counts: Mapping[str, int], *, validate_only: bool = False,
                          timeout_ms: float | None = None) -> None:
        """Grow each topic to its new total partition count (brokers place the replicas)."""
        deadline = self._sync.deadline(timeout_ms)
        body = {"topics": [{"name": name, "count": int(count), "assignments": None}
                           for name, count in new_counts.items()],
                "timeout_ms": int(deadline - self._sync.now()), "validate_only": validate_only}
        response = self._sync.request(self._controller(deadline), ApiKey.CREATE_PARTITIONS, body,
                                      deadline)
        for result in response.results:
            _raise_for(result.error_code, f"topic {result.name!r}", result.error_message)

    def delete_topics(self, names: Iterable[str], *, if_exists: bool = False,
                      timeout_ms: float | None = None) -> None:
        deadline = self._sync.deadline(timeout_ms)
        names = list(names)
        body = {"topic_names": names, "timeout_ms": int(deadline - self._sync.now())}
        response = self._sync.request(self._controller(deadline), ApiKey.DELETE_TOPICS, body,
                                      deadline)
        for result in response.responses:
            if result.error_code == UnknownTopicOrPartition.code and if_exists:
                continue
            _raise_for(result.error_code, f"topic {result.name!r}")

    def list_topics(self, timeout_ms: float | None = None) -> set[str]:
        return set(self._metadata(None, timeout_ms).topics)

    def await_topic(self, name: str, timeout_ms: float | None = None) -> int | None:
        """Partitions of topic ``name`` once the brokers know it; None if it is still unknown
        at the timeout (a topic created a moment ago reaches every broker's metadata a
        heartbeat later)."""
        return self._sync.await_topic(name, self._sync.deadline(timeout_ms))

    def describe_topics(self, names: Iterable[str] | None = None,
                        timeout_ms: float | None = None) -> dict[str, TopicDescription]:
        """Partitions, leaders, replicas and ISR of ``names`` (all topics if None)."""
        wanted = None if names is None else list(names)
        cluster = self._metadata(wanted, timeout_ms)
        for name in wanted or ():
            error = cluster.topic_error(name)
            if error is not None:
                raise error
        return {name: TopicDescription(name, cluster.partitions_for_topic(name))
                for name in (wanted if wanted is not None else sorted(cluster.topics))}

    def describe_cluster(self, timeout_ms: float | None = None) -> ClusterDescription:
        cluster = self._metadata([], timeout_ms)
        return ClusterDescription(cluster.cluster_id, cluster.controller_id,
                                  sorted(cluster.brokers.values()))

    def describe_quorum(self, timeout_ms: float | None = None) -> QuorumInfo:
        """The controller quorum: leader, epoch, high watermark, voters and observers with
        their lag (see :mod:`.quorum`)."""
        return describe_quorum(self._sync, self._sync.deadline(timeout_ms))

    def add_raft_voter(self, voter_id: int, host: str, port: int, timeout_ms: float | None = None,
                       directory_id: uuid.UUID | None = None) -> None:
        """Make controller ``voter_id``, an observer of the metadata log reachable at
        ``host:port``, a voter of the controller quorum (KIP-853)."""
        add_raft_voter(self._sync, voter_id, host, port, self._sync.deadline(timeout_ms),
                       directory_id)

    def remove_raft_voter(self, voter_id: int, timeout_ms: float | None = None,
                          directory_id: uuid.UUID | None = None) -> None:
        """Take controller ``voter_id`` out of the controller quorum's voters (KIP-853)."""
        remove_raft_voter(self._sync, voter_id, self._sync.deadline(timeout_ms), directory_id)

    def cluster_metadata(self, timeout_ms: float | None = None) -> Cluster:
        """Brokers, controller and every topic's partitions from one Metadata request: a
        consistent snapshot (two calls may straddle a change, e.g. a broker fenced between
        them)."""
        return self._metadata(None, timeout_ms)

    def _metadata(self, topics: list[str] | None, timeout_ms: float | None) -> Cluster:
        deadline = self._sync.deadline(timeout_ms)
        body = {"topics": None if topics is None else [{"name": t} for t in topics],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False}
        answer = self._sync.request_any(ApiKey.METADATA, body, deadline)
        metadata = self._sync.metadata
        if topics and metadata.topics <= set(topics):
            # The answer covers every topic the client's metadata tracks, so it becomes the
            # client's metadata: a request about these topics right after (ListOffsets,
            # DeleteRecords) finds their leaders there instead of asking again, which would
            # wait retry.backoff.ms after this answer (the planning of every streaming
            # query asks for a topic's partitions, then for their offsets).
            metadata.add_topics(*topics)
            return metadata.update(answer, self._sync.now())
        return Cluster.from_response(answer)

    def _controller(self, deadline: float) -> int:
        cluster = self._sync.refresh_metadata([], deadline)
        if cluster.controller_id in cluster.brokers:
            return cluster.controller_id
        return self._sync.any_node(deadline)

    # ---- configs (see :mod:`.config_admin`) ----------------------------------------------
    def describe_configs(self, resources: Iterable[tuple[str, str | int]],
                         names: Iterable[str] | None = None, *, include_synonyms: bool = False,
                         include_documentation: bool = False, timeout_ms: float | None = None
                         ) -> dict[Resource, dict[str, ConfigEntry]]:
        """Configs of ``("topic", name)`` / ``("broker", id)`` resources: value, source,
        read-only, sensitive (and synonyms, documentation on request), by config name."""
        return self._configs.describe_configs(resources, names, include_synonyms=include_synonyms,
                                              include_documentation=include_documentation,
                                              timeout_ms=timeout_ms)

    def alter_configs(self, configs: Mapping[tuple[str, str | int], Mapping[str, str]], *,
                      validate_only: bool = False, timeout_ms: float | None = None) -> None:
        """Replace each resource's overrides with the given set (AlterConfigs)."""
        self._configs.alter_configs(configs, validate_only=validate_only, timeout_ms=timeout_ms)

    def incremental_alter_configs(
            self, changes: Mapping[tuple[str, str | int],
                                   Mapping[str, str | None] | Iterable[AlterConfigOp]], *,
            validate_only: bool = False, timeout_ms: float | None = None) -> None:
        """Set (a value), delete (None), append or subtract configs of each resource, leaving
        the others as they are (IncrementalAlterConfigs)."""
        self._configs.incremental_alter_configs(changes, validate_only=validate_only,
                                                timeout_ms=timeout_ms)

    # ---- partition offsets ----------------------------------------------------------
    def list_offsets(self, queries: Mapping[TopicPartition | tuple[str, int], OffsetQuery],
                     timeout_ms: float | None = None, *, read_committed: bool = False
                     ) -> dict[TopicPartition, OffsetAndTimestamp]:
        """``{tp: "earliest" | "latest" | timestamp_ms}`` -> offsets (see :mod:`.offsets`);
        ``read_committed``: "latest" is the last stable offset."""
        parsed = {}
        for key, query in queries.items():
            if isinstance(query, str):
                if query.lower() not in _NAMED_QUERIES:
                    raise ValueError(f"offset query {query!r} for {key}: must be 'earliest', "
                                     f"'latest' or a timestamp in ms")
                query = _NAMED_QUERIES[query.lower()]
            parsed[_tp(key)] = int(query)
        return list_offsets(self._sync, parsed, self._sync.deadline(timeout_ms), read_committed)

    def describe_log_dirs(self, broker_ids: Iterable[int] | None = None,
                          timeout_ms: float | None = None) -> dict[int, dict[TopicPartition, int]]:
        """Bytes on disk of each replica, ``{broker: {tp: size}}``, from each broker in
        ``broker_ids`` (every broker if None) by DescribeLogDirs (see :mod:`.log_dirs`)."""
        deadline = self._sync.deadline(timeout_ms)
        ids = sorted(broker_ids) if broker_ids is not None else \
            sorted(self._sync.refresh_metadata([], deadline).brokers)
        return describe_log_dirs(self._sync, ids, deadline)

    def delete_records(self, offsets: Mapping[TopicPartition | tuple[str, int], int],
                       timeout_ms: float | None = None) -> dict[TopicPartition, int]:
        """Delete every record before ``offsets[tp]`` (-1: the high watermark, i.e. all of
        them) by moving each partition's log start offset up; returns each partition's new
        low watermark, once its in-sync replicas all moved (see :mod:`.delete_records`).
        An offset above the high watermark raises OffsetOutOfRange."""
        return delete_records(self._sync, {_tp(k): int(v) for k, v in offsets.items()},
                              self._sync.deadline(timeout_ms))

    # ---- consumer groups (see :mod:`.group_admin`) -------------------------------------
    def commit_offsets(self, group_id: str,
                       offsets: Mapping[TopicPartition | tuple[str, int], int | OffsetAndMetadata],
                       timeout_ms: float | None = None) -> None:
        """Store ``offsets`` (the next offset to read, per partition) for ``group_id``."""
        self._groups.commit_offsets(group_id, offsets, timeout_ms)

    def fetch_offsets(self, group_id: str,
                      partitions: Iterable[TopicPartition | tuple[str, int]] | None = None,
                      timeout_ms: float | None = None) -> dict[TopicPartition, OffsetAndMetadata]:
        """Committed offsets of ``group_id`` (all its partitions if None); partitions
        without a committed offset are left out."""
        return self._groups.fetch_offsets(group_id, partitions, timeout_ms)

    def fetch_offsets_of_groups(self, group_ids: Iterable[str], timeout_ms: float | None = None
                                ) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        """Every committed offset of each group, as :meth:`fetch_offsets` gives one
        group's, in one OffsetFetch per coordinator (v8+ batches groups)."""
        return self._groups.fetch_offsets_of_groups(group_ids, timeout_ms)

    def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition | tuple[str, int]],
                       timeout_ms: float | None = None) -> None:
        """Forget ``group_id``'s committed offsets of ``partitions`` (OffsetDelete)."""
        self._groups.delete_offsets(group_id, partitions, timeout_ms)

    def find_coordinator(self, group_id: str, timeout_ms: float | None = None) -> int:
        """The id of the broker that coordinates ``group_id``."""
        return self._groups.find_coordinator(group_id, timeout_ms)

    def list_transactions(self, states: Iterable[str] | None = None,
                          producer_ids: Iterable[int] | None = None, min_duration_ms: int = -1,
                          timeout_ms: float | None = None) -> list[TransactionListing]:
        """Every transactional id the cluster's coordinators hold (filtered by state names,
        producer ids, and transactions open longer than ``min_duration_ms``)."""
        return self._groups.list_transactions(states, producer_ids, min_duration_ms, timeout_ms)

    def describe_transactions(self, transactional_ids: Iterable[str],
                              timeout_ms: float | None = None) -> dict[str, TransactionDescription]:
        """State, producer id and epoch, timeout and partitions of each transactional id."""
        return self._groups.describe_transactions(transactional_ids, timeout_ms)

    def find_transaction_coordinator(self, transactional_id: str,
                                     timeout_ms: float | None = None) -> int:
        """The id of the broker that coordinates ``transactional_id``'s transactions."""
        return self._groups.find_coordinator(transactional_id, timeout_ms,
                                             key_type=TRANSACTION_KEY)

    def list_groups(self, states: Iterable[str] | None = None,
                    timeout_ms: float | None = None) -> list[GroupListing]:
        """Every group of the cluster (only those in ``states``, if given)."""
        return self._groups.list_groups(states, timeout_ms)

    def describe_groups(self, group_ids: Iterable[str],
                        timeout_ms: float | None = None) -> dict[str, GroupDescription]:
        """State, protocol, members and their assignments of each group."""
        return self._groups.describe_groups(group_ids, timeout_ms)

    def describe_consumer_groups(self, group_ids: Iterable[str], timeout_ms: float | None = None
                                 ) -> dict[str, ConsumerGroupDescription]:
        """Epochs, members, their assignments and targets of consumer-protocol (KIP-848)
        groups."""
        return self._groups.describe_consumer_groups(group_ids, timeout_ms)

    def delete_groups(self, group_ids: Iterable[str], timeout_ms: float | None = None) -> None:
        """Delete empty groups and their committed offsets (NonEmptyGroup otherwise)."""
        self._groups.delete_groups(group_ids, timeout_ms)

    # ---- lifecycle ------------------------------------------------------------------
    # ---- SCRAM users (KIP-554) ----------------------------------------------------------
    def describe_users(self, users: Iterable[str] | None = None,
                       timeout_ms: float | None = None) -> dict[str, dict[str, int]]:
        """user -> {SCRAM mechanism: iterations}; every user with credentials if None.
        A named user without any raises ResourceNotFound."""
        body = {"users": None if users is None else [{"name": u} for u in users]}
        response = self._sync.request_any(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, body,
                                          self._sync.deadline(timeout_ms))
        _raise_for(response.error_code, "describe users", response.error_message)
        out = {}
        for r in response.results:
            _raise_for(r.error_code, f"describe user {r.user!r}", r.error_message)
            out[r.user] = {MECHANISM_BY_ID.get(c.mechanism, str(c.mechanism)): c.iterations
                           for c in r.credential_infos}
        return out

    def upsert_user(self, user: str, password: str, mechanism: str = "SCRAM-SHA-256",
                    iterations: int = DEFAULT_ITERATIONS, timeout_ms: float | None = None) -> None:
        """Create or replace ``user``'s credential for ``mechanism``. The password never
        leaves this process: only a random salt and the salted password are sent."""
        if mechanism not in MECHANISMS:
            raise ValueError(f"mechanism {mechanism!r} is not one of {', '.join(MECHANISMS)}")
        salt = os.urandom(32)
        self._alter_users([], [{"name": user, "mechanism": MECHANISMS[mechanism][1],
                                "iterations": iterations, "salt": salt,
                                "salted_password": salted_password(mechanism, password, salt,
                                                                   iterations)}], timeout_ms)

    def delete_user(self, user: str, mechanism: str = "SCRAM-SHA-256",
                    timeout_ms: float | None = None) -> None:
        """Delete ``user``'s credential for ``mechanism`` (ResourceNotFound if none)."""
        if mechanism not in MECHANISMS:
            raise ValueError(f"mechanism {mechanism!r} is not one of {', '.join(MECHANISMS)}")
        self._alter_users([{"name": user, "mechanism": MECHANISMS[mechanism][1]}], [], timeout_ms)

    def _alter_users(self, deletions: list[dict[str, Any]], upsertions: list[dict[str, Any]],
                     timeout_ms: float | None) -> None:
        response = self._sync.request_any(ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
                                          {"deletions": deletions, "upsertions": upsertions},
                                          self._sync.deadline(timeout_ms))
        for r in response.results:
            _raise_for(r.error_code, f"user {r.user!r}", r.error_message)

    # ---- ACLs -------------------------------------------------------------------------
    def create_acls(self, bindings: Iterable[AclBinding], timeout_ms: float | None = None) -> None:
        """Store ACL bindings (the first refused one raises, e.g. InvalidRequest)."""
        bindings = list(bindings)
        body = {"creations": [{"resource_type": int(b.resource_type), "resource_name": b.name,
                               "resource_pattern_type": int(b.pattern), "principal": b.principal,
                               "host": b.host, "operation": int(b.operation),
                               "permission_type": int(b.permission)} for b in bindings]}
        response = self._sync.request_any(ApiKey.CREATE_ACLS, body, self._sync.deadline(timeout_ms))
        for b, r in zip(bindings, response.results, strict=True):
            _raise_for(r.error_code, f"ACL {b}", r.error_message)

    def describe_acls(self, acl_filter: AclFilter | None = None,
                      timeout_ms: float | None = None) -> list[AclBinding]:
        """The stored bindings ``acl_filter`` matches (every binding by default)."""
        response = self._sync.request_any(ApiKey.DESCRIBE_ACLS, _filter_body(acl_filter or AclFilter()),
                                          self._sync.deadline(timeout_ms))
        _raise_for(response.error_code, "describe ACLs", response.error_message)
        return [AclBinding.from_json({"resource_type": r.resource_type, "name": r.resource_name,
                                      "pattern": r.pattern_type, "principal": a.principal,
                                      "host": a.host, "operation": a.operation,
                                      "permission": a.permission_type})
                for r in response.resources for a in r.acls]

    def delete_acls(self, filters: Iterable[AclFilter], timeout_ms: float | None = None) -> list[AclBinding]:
        """Delete what each filter matches; returns the deleted bindings."""
        response = self._sync.request_any(ApiKey.DELETE_ACLS,
                                          {"filters": [_filter_body(f) for f in filters]},
                                          self._sync.deadline(timeout_ms))
        out: list[AclBinding] = []
        for r in response.filter_results:
            _raise_for(r.error_code, "delete ACLs", r.error_message)
            out.extend(AclBinding.from_json({"resource_type": m.resource_type, "name": m.resource_name,
                                             "pattern": m.pattern_type, "principal": m.principal,
                                             "host": m.host, "operation": m.operation,
                                             "permission": m.permission_type})
                       for m in r.matching_acls)
        return out

    def close(self) -> None:
        self._sync.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
