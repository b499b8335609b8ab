"""How a broker talks to its controller: in-process, or over the network.

Both implementations take and return the same request/response bodies, so the broker
does not care whether its controller is embedded (a single broker) or its own process
(a cluster). Remote calls use three kinds of connections, so that nothing slow waits in
front of something urgent (a connection carries one request at a time):

* heartbeats, AlterPartition and the legacy offset reads share one connection, callers
  serialised by a lock: the controller answers them at once;
* forwarded admin changes (topics, partitions, configs, credentials, ACLs) each take a
  connection of a small pool (opened on demand, one per concurrent caller): the
  controller answers them only once every live broker has applied the change (up to a
  session timeout if a broker died), and a heartbeat queued behind one could cost this
  broker its own session;
* the metadata long poll (:meth:`fetch_metadata`, called only by the broker's metadata
  poller thread) has its own: parked at the controller for up to ``max_wait_ms``.
  :meth:`wake_metadata_fetch` makes a poll in flight return at once (the broker stopping).

Connections reconnect lazily after a failure; a failed call raises NetworkException
(retriable).

In process, the changes that the controller answers only once propagated
(:data:`~broker_sim.controller.apis.ControllerApis.propagated_apis`) wait on the calling
thread (:meth:`ControllerApis.propagated`), as the remote controller parks them.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from ..controller.apis import ControllerApis
from ..coordinator.group.group import CommittedOffset
from ..network.blocking_client import BlockingConnection
from ..protocol.api import ApiKey


class ControllerClient(Protocol):
    def heartbeat(self, body: dict) -> Any: ...
    def fetch_metadata(self, body: dict) -> Any: ...
    def wake_metadata_fetch(self) -> None: ...
    def alter_partition(self, body: dict) -> Any: ...
    def create_topics(self, body: Any) -> Any: ...
    def delete_topics(self, body: Any) -> Any: ...
    def create_partitions(self, body: Any) -> Any: ...
    def legacy_groups(self) -> list[str]: ...
    def legacy_offsets(self, group: str) -> dict[tuple[str, int], CommittedOffset]: ...
    def alter_scram(self, body: Any) -> Any: ...
    def create_acls(self, body: Any) -> Any: ...
    def alter_configs(self, body: Any) -> Any: ...
    def incremental_alter_configs(self, body: Any) -> Any: ...
    def delete_acls(self, body: Any) -> Any: ...
    def elect_leaders(self, body: Any) -> Any: ...
    def describe_quorum(self, body: Any) -> Any: ...
    def add_raft_voter(self, body: Any) -> Any: ...
    def remove_raft_voter(self, body: Any) -> Any: ...
    def close(self) -> None: ...


class LocalControllerClient:
    def __init__(self, apis: ControllerApis) -> None:
        self.apis = apis

    @staticmethod
    def _data(body: Any) -> Any:
        from ..protocol.schema import Data
        return Data(**body) if isinstance(body, dict) else body

    def heartbeat(self, body: dict) -> Any:
        return self.apis.heartbeat_body(self._data(body))

    def fetch_metadata(self, body: dict) -> Any:
        return self.apis.metadata_fetch_body(self._data(body))

    def wake_metadata_fetch(self) -> None:
        self.apis.controller.wake_fetchers()

    def alter_partition(self, body: dict) -> Any:
        return self.apis.alter_partition_body(self._data(body))

    def create_topics(self, body: Any) -> Any:
        return self.apis.propagated(self.apis.create_topics_body, body)

    def delete_topics(self, body: Any) -> Any:
        return self.apis.propagated(self.apis.delete_topics_body, body)

    def create_partitions(self, body: Any) -> Any:
        return self.apis.propagated(self.apis.create_partitions_body, body)

    def legacy_groups(self) -> list[str]:
        return self.apis.legacy_offsets.groups()

    def legacy_offsets(self, group: str) -> dict[tuple[str, int], CommittedOffset]:
        return self.apis.legacy_offsets.fetch(group)

    def alter_scram(self, body: Any) -> Any:
        return self.apis.propagated(self.apis.alter_scram_body, body)

    def create_acls(self, body: Any) -> Any:
        return self.apis.propagated(self.apis.create_acls_body, body)

    def alter_configs(self, body: Any) -> Any:
        return self.apis.propagated(self.apis.alter_configs_body, body)

    def incremental_alter_configs(self, body: Any) -> Any:
        return self.apis.propagated(self.apis.incremental_alter_configs_body, body)

    def delete_acls(self, body: Any) -> Any:
        return self.apis.propagated(self.apis.delete_acls_body, body)

    def elect_leaders(self, body: Any) -> Any:
        return self.apis.propagated(self.apis.elect_leaders_body, body)

    def describe_quorum(self, body: Any) -> Any:
        return self.apis.quorum.describe_quorum_body(body)

    def add_raft_voter(self, body: Any) -> Any:
        return self.apis.voter_changes.add_body(body)

    def remove_raft_voter(self, body: Any) -> Any:
        return self.apis.voter_changes.remove_body(body)

    def close(self) -> None:
        pass


class RemoteControllerClient:
    CREATE_TOPICS_VERSION = 4
    DELETE_TOPICS_VERSION = 3
    CREATE_PARTITIONS_VERSION = 1
    LIST_GROUPS_VERSION = 0
    OFFSET_FETCH_VERSION = 5
    ALTER_SCRAM_VERSION = 0
    ACLS_VERSION = 3
    ALTER_CONFIGS_VERSION = 1
    INCREMENTAL_ALTER_CONFIGS_VERSION = 0
    METADATA_FETCH_VERSION = 0
    ELECT_LEADERS_VERSION = 2
    DESCRIBE_QUORUM_VERSION = 2
    ADD_RAFT_VOTER_VERSION = 1
    REMOVE_RAFT_VOTER_VERSION = 0
    #: An admin change may wait at the controller for a session timeout: a generous limit.
    ADMIN_TIMEOUT_S = 60.0

    def __init__(self, host: str, port: int, broker_id: int) -> None:
        self.host, self.port, self.broker_id = host, port, broker_id
        self._conn = BlockingConnection(host, port, f"broker-{broker_id}", timeout_s=10.0)
        self._lock = threading.Lock()
        self._admin_idle: list[BlockingConnection] = []  # the pool; guarded by _admin_lock
        self._admin_lock = threading.Lock()
        # One caller only (the metadata poller thread): no lock.
        self._metadata_conn = BlockingConnection(host, port, f"broker-{broker_id}-metadata",
                                                 timeout_s=10.0)

    def _call(self, key: int, version: int, body: Any) -> Any:
        with self._lock:
            return self._conn.request(key, version, body)

    def _call_admin(self, key: int, version: int, body: Any) -> Any:
        """On a pooled admin connection of its own (see the module docstring)."""
        with self._admin_lock:
            conn = self._admin_idle.pop() if self._admin_idle else None
        if conn is None:
            conn = BlockingConnection(self.host, self.port, f"broker-{self.broker_id}-admin",
                                      timeout_s=self.ADMIN_TIMEOUT_S)
        try:
            return conn.request(key, version, body)
        finally:
            with self._admin_lock:
                self._admin_idle.append(conn)  # closed after an error: reconnects when reused

    def heartbeat(self, body: dict) -> Any:
        return self._call(ApiKey.BROKER_HEARTBEAT, 0, body)

    def fetch_metadata(self, body: dict) -> Any:
        return self._metadata_conn.request(ApiKey.BROKER_METADATA_FETCH, self.METADATA_FETCH_VERSION,
                                           body, timeout_s=10.0 + body["max_wait_ms"] / 1000)

    def wake_metadata_fetch(self) -> None:
        self._metadata_conn.abort()

    def alter_partition(self, body: dict) -> Any:
        return self._call(ApiKey.ALTER_PARTITION, 0, body)

    def create_topics(self, body: Any) -> Any:
        return self._call_admin(ApiKey.CREATE_TOPICS, self.CREATE_TOPICS_VERSION, body)

    def delete_topics(self, body: Any) -> Any:
        return self._call_admin(ApiKey.DELETE_TOPICS, self.DELETE_TOPICS_VERSION, body)

    def create_partitions(self, body: Any) -> Any:
        return self._call_admin(ApiKey.CREATE_PARTITIONS, self.CREATE_PARTITIONS_VERSION, body)

    def legacy_groups(self) -> list[str]:
        return [g.group_id for g in self._call(ApiKey.LIST_GROUPS, self.LIST_GROUPS_VERSION, {}).groups]

    def legacy_offsets(self, group: str) -> dict[tuple[str, int], CommittedOffset]:
        response = self._call(ApiKey.OFFSET_FETCH, self.OFFSET_FETCH_VERSION,
                              {"group_id": group, "topics": None})
        return {(t.name, p.partition_index): CommittedOffset(p.committed_offset, p.committed_leader_epoch,
                                                              p.metadata or "")
                for t in response.topics for p in t.partitions}

    def alter_scram(self, body: Any) -> Any:
        return self._call_admin(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, self.ALTER_SCRAM_VERSION, body)

    def create_acls(self, body: Any) -> Any:
        return self._call_admin(ApiKey.CREATE_ACLS, self.ACLS_VERSION, body)

    def alter_configs(self, body: Any) -> Any:
        return self._call_admin(ApiKey.ALTER_CONFIGS, self.ALTER_CONFIGS_VERSION, body)

    def incremental_alter_configs(self, body: Any) -> Any:
        return self._call_admin(ApiKey.INCREMENTAL_ALTER_CONFIGS,
                                  self.INCREMENTAL_ALTER_CONFIGS_VERSION, body)

    def delete_acls(self, body: Any) -> Any:
        return self._call_admin(ApiKey.DELETE_ACLS, self.ACLS_VERSION, body)

    def elect_leaders(self, body: Any) -> Any:
        return self._call_admin(ApiKey.ELECT_LEADERS, self.ELECT_LEADERS_VERSION, body)

    def describe_quorum(self, body: Any) -> Any:
        return self._call_admin(ApiKey.DESCRIBE_QUORUM, self.DESCRIBE_QUORUM_VERSION, body)

    def add_raft_voter(self, body: Any) -> Any:
        return self._call_admin(ApiKey.ADD_RAFT_VOTER, self.ADD_RAFT_VOTER_VERSION, body)

    def remove_raft_voter(self, body: Any) -> Any:
        return self._call_admin(ApiKey.REMOVE_RAFT_VOTER, self.REMOVE_RAFT_VOTER_VERSION, body)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
        with self._admin_lock:
            idle, self._admin_idle = self._admin_idle, []
        for conn in idle:
            conn.close()
        self._metadata_conn.close()
