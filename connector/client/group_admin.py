"""The group side of :class:`~connector.client.admin.Admin`: committed offsets, and
listing, describing and deleting consumer groups (as ``kafka-consumer-groups.sh`` does).

Every group request goes to the group's coordinator (FindCoordinator, batched v4 or the
single-key form), found again and retried while the answer is NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS (a coordinator moving or
loading), until the call's deadline. ListGroups asks every broker, since each lists only
the groups it coordinates.

Coordinators are cached per key (group or transactional id): a request goes to the cached
one, and the entry is dropped when the answer is NOT_COORDINATOR or
COORDINATOR_NOT_AVAILABLE (or COORDINATOR_LOAD_IN_PROGRESS), or when the request to it
fails, so the retry asks FindCoordinator again. :meth:`GroupAdmin.fetch_offsets_of_groups`
reads many groups' offsets in one FindCoordinator (v4 batches the keys) and one OffsetFetch
per coordinator (v8+ batches the groups; sent to all coordinators at once), falling back to
one OffsetFetch per group on a connection that negotiated v7 or older.

Offsets are committed as a *simple* group (generation -1, member id ""), as a consumer
without group membership does: accepted while the group has no members.

Threading: one thread at a time, like the Admin that owns it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    KafkaError,
    NotCoordinator,
    error_for_code,
)

from .config import AdminConfig
from .consumer_protocol import decode_assignment
from .errors import KafkaTimeoutError
from .metadata import TopicPartition
from .offset_fetch import group_answer, offset_fetch_body
from .sync_client import SyncClient

GROUP_KEY, TRANSACTION_KEY = 0, 1
MOVING = frozenset({NotCoordinator.code, CoordinatorNotAvailable.code, CoordinatorLoadInProgress.code})


class OffsetAndMetadata(NamedTuple):
    offset: int
    metadata: str = ""
    leader_epoch: int = -1


class GroupListing(NamedTuple):
    group_id: str
    protocol_type: str  # "consumer" for consumer groups, "" for offset-only ("simple") groups
    state: str
    coordinator: int
    #: "classic", or "consumer" for a group on the consumer protocol (KIP-848), whose
    #: members :meth:`GroupAdmin.describe_consumer_groups` describes.
    group_type: str = "classic"


class MemberDescription(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: list[TopicPartition]


class GroupDescription(NamedTuple):
    group_id: str
    state: str  # Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
    protocol_type: str
    protocol: str  # the assignor chosen, when Stable
    coordinator: int
    members: list[MemberDescription]


class TransactionListing(NamedTuple):
    transactional_id: str
    producer_id: int
    state: str  # Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort
    coordinator: int


class TransactionDescription(NamedTuple):
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int  # -1 when no transaction is open
    partitions: list[TopicPartition]
    coordinator: int


class ConsumerMemberDescription(NamedTuple):
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    member_epoch: int
    subscribed_topics: list[str]
    assignment: list[TopicPartition]
    target_assignment: list[TopicPartition]


class ConsumerGroupDescription(NamedTuple):
    """A consumer-protocol (KIP-848) group, as ConsumerGroupDescribe reports it."""

    group_id: str
    state: str  # Empty, Assigning, Reconciling, Stable
    group_epoch: int
    assignment_epoch: int
    assignor: str
    coordinator: int
    members: list[ConsumerMemberDescription]


def _partitions(assignment: Any) -> list[TopicPartition]:
    return sorted(TopicPartition(t.topic_name, p) for t in assignment.topic_partitions
                  for p in t.partitions)


def tp_of(key: TopicPartition | tuple[str, int]) -> TopicPartition:
    return key if isinstance(key, TopicPartition) else TopicPartition(*key)


def raise_for(code: int, what: str, message: str | None = None) -> None:
    if code:
        raise error_for_code(code)(f"{what}: {message}" if message else what)


def _committed(group_id: str, answer: Any) -> dict[TopicPartition, OffsetAndMetadata]:
    """One group's OffsetFetch answer (``topics`` and ``error_code``) as its committed
    offsets; a group or partition error raised by its Kafka name."""
    raise_for(answer.error_code, f"offset fetch for group {group_id!r}")
    out = {}
    for t in answer.topics:
        for p in t.partitions:
            raise_for(p.error_code, f"offset fetch of {t.name}-{p.partition_index} "
                                    f"for group {group_id!r}")
            if p.committed_offset >= 0:
                out[TopicPartition(t.name, p.partition_index)] = OffsetAndMetadata(
                    p.committed_offset, p.metadata or "", p.committed_leader_epoch)
    return out


class GroupAdmin:
    def __init__(self, sync: SyncClient, config: AdminConfig) -> None:
        self._sync = sync
        self.config = config
        #: (key type, key) -> the node id last found coordinating it (see the module doc).
        self._coordinators: dict[tuple[int, str], int] = {}

    # ---- offsets ------------------------------------------------------------------------
    def commit_offsets(self, group_id: str,
                       offsets: Mapping[TopicPartition | tuple[str, int], int | OffsetAndMetadata],
                       timeout_ms: float | None = None) -> None:
        topics: dict[str, list[dict[str, Any]]] = {}
        for key, value in offsets.items():
            tp = tp_of(key)
            om = value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(int(value))
            topics.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "committed_offset": om.offset,
                 "committed_leader_epoch": om.leader_epoch, "committed_metadata": om.metadata})
        body = {"group_id": group_id, "generation_id_or_member_epoch": -1, "member_id": "",
                "group_instance_id": None, "retention_time_ms": -1,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
        response = self._group_request(group_id, ApiKey.OFFSET_COMMIT, body, timeout_ms)
        for t in response.topics:
            for p in t.partitions:
                raise_for(p.error_code, f"commit of {t.name}-{p.partition_index} "
                                        f"for group {group_id!r}")

    def fetch_offsets(self, group_id: str,
                      partitions: Iterable[TopicPartition | tuple[str, int]] | None = None,
                      timeout_ms: float | None = None) -> dict[TopicPartition, OffsetAndMetadata]:
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for key in partitions:
                tp = tp_of(key)
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
        response = group_answer(self._group_request(group_id, ApiKey.OFFSET_FETCH,
                                                    offset_fetch_body(group_id, topics), timeout_ms))
        return _committed(group_id, response)

    def fetch_offsets_of_groups(self, group_ids: Iterable[str], timeout_ms: float | None = None
                                ) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        """Every committed offset of each group in ``group_ids``, as :meth:`fetch_offsets`
        gives one group's: one batched FindCoordinator for the coordinators not cached,
        then one OffsetFetch v8+ per coordinator for all its groups, sent to every
        coordinator before any answer is awaited. A group whose coordinator moved is
        fetched again on its own; on a connection older than v8, one request per group."""
        groups = list(dict.fromkeys(group_ids))
        deadline = self._sync.deadline(timeout_ms)
        nodes = self.find_coordinators(groups, deadline)
        by_node: dict[int, list[str]] = {}
        for g in groups:
            by_node.setdefault(nodes[g], []).append(g)
        out: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        alone: list[str] = []
        sent = []
        for node, members in sorted(by_node.items()):
            try:
                self._sync.await_ready(node, deadline)
                batched = self._sync.client.api_version(node, ApiKey.OFFSET_FETCH) >= 8
            except Exception:
                self._forget(members)
                raise
            if not batched:
                alone.extend(members)
                continue
            body = {"group_id": "", "topics": None, "require_stable": False,
                    "groups": [{"group_id": g, "member_id": None, "member_epoch": -1,
                                "topics": None} for g in members]}
            sent.append((members, self._sync.client.send(node, ApiKey.OFFSET_FETCH, body,
                                                          self._sync.now())))
        for members, future in sent:
            try:
                response = self._sync.wait(future, deadline)
            except Exception:
                self._forget(members)
                raise
            for answer in response.groups:
                if answer.error_code in MOVING:
                    self._forget([answer.group_id])
                    alone.append(answer.group_id)
                else:
                    out[answer.group_id] = _committed(answer.group_id, answer)
        for g in alone:
            out[g] = self.fetch_offsets(g, timeout_ms=max(0.0, deadline - self._sync.now()))
        return {g: out[g] for g in groups}

    def _forget(self, keys: Iterable[str], key_type: int = GROUP_KEY) -> None:
        for key in keys:
            self._coordinators.pop((key_type, key), None)

    def find_coordinators(self, keys: list[str], deadline: float,
                          key_type: int = GROUP_KEY) -> dict[str, int]:
        """The coordinator of each key: cached ones as they are, the others found in one
        FindCoordinator v4 (or one request per key on an older connection)."""
        out = {k: self._coordinators[(key_type, k)] for k in keys
               if (key_type, k) in self._coordinators}
        missing = [k for k in keys if k not in out]
        if missing:
            response = self._sync.request_any(ApiKey.FIND_COORDINATOR, {
                "key": missing[0], "key_type": key_type, "coordinator_keys": missing}, deadline)
            for c in response.coordinators or []:  # v4+: one answer per key asked for
                if c.error_code == 0:
                    self._sync.client.add_node(c.node_id, c.host, c.port)
                    out[c.key] = self._coordinators[(key_type, c.key)] = int(c.node_id)
            for k in missing:  # older versions, and keys answered with an error: one by one
                if k not in out:
                    out[k] = self.find_coordinator(k, deadline=deadline, key_type=key_type)
        return out

    def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition | tuple[str, int]],
                       timeout_ms: float | None = None) -> None:
        by_topic: dict[str, list[dict[str, int]]] = {}
        for key in partitions:
            tp = tp_of(key)
            by_topic.setdefault(tp.topic, []).append({"partition_index": tp.partition})
        body = {"group_id": group_id, "topics": [{"name": t, "partitions": ps}
                                                 for t, ps in by_topic.items()]}
        response = self._group_request(group_id, ApiKey.OFFSET_DELETE, body, timeout_ms)
        raise_for(response.error_code, f"offset delete for group {group_id!r}")
        for t in response.topics:
            for p in t.partitions:
                raise_for(p.error_code, f"offset delete of {t.name}-{p.partition_index} "
                                        f"for group {group_id!r}")

    # ---- groups -------------------------------------------------------------------------
    def list_groups(self, states: Iterable[str] | None = None,
                    timeout_ms: float | None = None) -> list[GroupListing]:
        deadline = self._sync.deadline(timeout_ms)
        cluster = self._sync.metadata.recent_cluster(self._sync.now())
        if cluster is None:
            cluster = self._sync.refresh_metadata([], deadline)
        out: list[GroupListing] = []
        for node in sorted(cluster.brokers):
            while True:
                response = self._sync.request(node, ApiKey.LIST_GROUPS, {
                    "states_filter": list(states or []), "types_filter": []}, deadline)
                if response.error_code != CoordinatorLoadInProgress.code:
                    break
                self._backoff(deadline, f"groups of broker {node}")
            raise_for(response.error_code, f"list groups of broker {node}")
            out.extend(GroupListing(g.group_id, g.protocol_type, g.group_state, node,
                                    g.group_type or "classic")
                       for g in response.groups)
        return sorted(out)

    def describe_groups(self, group_ids: Iterable[str],
                        timeout_ms: float | None = None) -> dict[str, GroupDescription]:
        out = {}
        for group_id in group_ids:
            node, response = self._group_call(group_id, ApiKey.DESCRIBE_GROUPS, {
                "groups": [group_id], "include_authorized_operations": False}, timeout_ms,
                lambda r: r.groups[0].error_code)
            g = response.groups[0]
            raise_for(g.error_code, f"describe group {group_id!r}")
            members = [MemberDescription(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                decode_assignment(bytes(m.member_assignment)) if g.protocol_type == "consumer" else [])
                for m in g.members]
            out[group_id] = GroupDescription(group_id, g.group_state, g.protocol_type,
                                             g.protocol_data, node, members)
        return out

    def describe_consumer_groups(self, group_ids: Iterable[str], timeout_ms: float | None = None
                                 ) -> dict[str, ConsumerGroupDescription]:
        """ConsumerGroupDescribe: groups on the consumer protocol (KIP-848); a group that is
        not one raises GroupIdNotFound."""
        out = {}
        for group_id in group_ids:
            node, response = self._group_call(group_id, ApiKey.CONSUMER_GROUP_DESCRIBE, {
                "group_ids": [group_id], "include_authorized_operations": False}, timeout_ms,
                lambda r: r.groups[0].error_code)
            g = response.groups[0]
            raise_for(g.error_code, f"describe consumer group {group_id!r}", g.error_message)
            out[group_id] = ConsumerGroupDescription(
                group_id, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name, node,
                [ConsumerMemberDescription(
                    m.member_id, m.instance_id, m.client_id, m.client_host, m.member_epoch,
                    list(m.subscribed_topic_names), _partitions(m.assignment),
                    _partitions(m.target_assignment)) for m in g.members])
        return out

    # ---- transactions -------------------------------------------------------------------
    def list_transactions(self, states: Iterable[str] | None = None,
                          producer_ids: Iterable[int] | None = None, min_duration_ms: int = -1,
                          timeout_ms: float | None = None) -> list[TransactionListing]:
        """ListTransactions on every broker (each lists the transactional ids it coordinates)."""
        deadline = self._sync.deadline(timeout_ms)
        cluster = self._sync.refresh_metadata([], deadline)
        out: list[TransactionListing] = []
        for node in sorted(cluster.brokers):
            response = self._sync.request(node, ApiKey.LIST_TRANSACTIONS, {
                "state_filters": list(states or []), "producer_id_filters": list(producer_ids or []),
                "duration_filter": min_duration_ms}, deadline)
            raise_for(response.error_code, f"list transactions of broker {node}")
            if response.unknown_state_filters:
                raise ValueError(f"unknown transaction state(s) {list(response.unknown_state_filters)}")
            out.extend(TransactionListing(t.transactional_id, t.producer_id, t.transaction_state, node)
                       for t in response.transaction_states)
        return sorted(out)

    def describe_transactions(self, transactional_ids: Iterable[str],
                              timeout_ms: float | None = None) -> dict[str, TransactionDescription]:
        """DescribeTransactions, each at its coordinator."""
        out = {}
        for txn_id in transactional_ids:
            deadline = self._sync.deadline(timeout_ms)
            while True:
                node = self.find_coordinator(txn_id, deadline=deadline, key_type=TRANSACTION_KEY)
                response = self._sync.request(node, ApiKey.DESCRIBE_TRANSACTIONS,
                                              {"transactional_ids": [txn_id]}, deadline)
                t = response.transaction_states[0]
                if t.error_code not in MOVING:
                    break
                self._backoff(deadline, f"the coordinator of transactional id {txn_id!r}")
            raise_for(t.error_code, f"describe transaction {txn_id!r}")
            out[txn_id] = TransactionDescription(
                txn_id, t.transaction_state, t.producer_id, t.producer_epoch,
                t.transaction_timeout_ms, t.transaction_start_time_ms,
                sorted(TopicPartition(d.topic, p) for d in t.topics for p in d.partitions), node)
        return out

    def delete_groups(self, group_ids: Iterable[str], timeout_ms: float | None = None) -> None:
        for group_id in group_ids:
            _, response = self._group_call(group_id, ApiKey.DELETE_GROUPS, {"groups_names": [group_id]},
                                           timeout_ms, lambda r: r.results[0].error_code)
            raise_for(response.results[0].error_code, f"delete group {group_id!r}")

    # ---- routing ------------------------------------------------------------------------
    def _group_request(self, group_id: str, api_key: int, body: Any,
                       timeout_ms: float | None) -> Any:
        def code(response: Any) -> int:
            if api_key == ApiKey.OFFSET_FETCH:
                response = group_answer(response)
            codes = {p.error_code for t in response.topics for p in t.partitions}
            codes.add(getattr(response, "error_code", 0))
            return next(iter(codes & MOVING), 0)
        return self._group_call(group_id, api_key, body, timeout_ms, code)[1]

    def _group_call(self, group_id: str, api_key: int, body: Any, timeout_ms: float | None,
                    error_of: Any) -> tuple[int, Any]:
        deadline = self._sync.deadline(timeout_ms)
        while True:
            node = self._coordinator(group_id, deadline)
            try:
                response = self._sync.request(node, api_key, body, deadline)
            except Exception:
                self._forget([group_id])
                raise
            if error_of(response) not in MOVING:
                return node, response
            self._forget([group_id])
            self._backoff(deadline, f"the coordinator of group {group_id!r}")

    def _coordinator(self, key: str, deadline: float, key_type: int = GROUP_KEY) -> int:
        """The cached coordinator of ``key``, or a newly found one."""
        node = self._coordinators.get((key_type, key))
        return node if node is not None else self.find_coordinator(key, deadline=deadline,
                                                                   key_type=key_type)

    def _backoff(self, deadline: float, what: str) -> None:
        if self._sync.now() + self.config.retry_backoff_ms >= deadline:
            raise KafkaTimeoutError(f"timed out waiting for {what}")
        self._sync.client.poll(self.config.retry_backoff_ms, self._sync.now())

    def find_coordinator(self, group_id: str, timeout_ms: float | None = None,
                         deadline: float | None = None, key_type: int = GROUP_KEY) -> int:
        """The id of the broker coordinating ``group_id`` (retried while none is known),
        asked of the cluster now (and cached for the group requests that follow);
        ``key_type=TRANSACTION_KEY``: the coordinator of a transactional id."""
        if deadline is None:
            deadline = self._sync.deadline(timeout_ms)
        while True:
            response = self._sync.request_any(ApiKey.FIND_COORDINATOR, {
                "key": group_id, "key_type": key_type, "coordinator_keys": [group_id]}, deadline)
            if response.coordinators:  # v4+: one answer per key asked for
                response = response.coordinators[0]
            if response.error_code == 0:
                self._sync.client.add_node(response.node_id, response.host, response.port)
                self._coordinators[(key_type, group_id)] = int(response.node_id)
                return int(response.node_id)
            error: KafkaError = error_for_code(response.error_code)(
                f"coordinator of group {group_id!r}: {response.error_message}")
            if not error.retriable or self._sync.now() >= deadline:
                raise error
            self._sync.client.poll(self.config.retry_backoff_ms, self._sync.now())
