"""How a broker talks to its controller: in-process, or over the network.

Both implementations take and return the same request/response bodies, so the broker
does not care whether its controller is embedded (a single broker) or its own process
(a cluster). The remote client serialises callers on one connection with a lock and
reconnects after a failure; a failed call raises NetworkException (retriable). Config
changes travel on a second connection of their own: the controller answers them only once
every broker has applied the change, which this broker reports in a metadata poll or a
heartbeat that must not queue behind them. The metadata long poll (:meth:`fetch_metadata`,
called only by the broker's metadata poller thread) has a third: parked at the controller
for up to ``max_wait_ms``, it must hold up neither heartbeats nor forwarded requests.
:meth:`wake_metadata_fetch` makes a poll in flight return at once (the broker stopping).

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

    def __init__(self, host: str, port: int, broker_id: int) -> None:
        self._conn = BlockingConnection(host, port, f"broker-{broker_id}", timeout_s=10.0)
        self._lock = threading.Lock()
        self._configs_conn = BlockingConnection(host, port, f"broker-{broker_id}-configs",
                                                timeout_s=10.0)
        self._configs_lock = threading.Lock()
        # One caller only (the metadata poller thread): no lock.
        self._metadata_conn = BlockingConnection(host, port, f"broker-{broker_id}-metadata",
                                                 timeout_s=10.0)

    def _call(self, key: int, version: int, body: Any) -> Any:
        with self._lock:
            return self._conn.request(key, version, body)

    def _call_configs(self, key: int, version: int, body: Any) -> Any:
        with self._configs_lock:
            return self._configs_conn.request(key, version, body)

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
        return self._call(ApiKey.CREATE_TOPICS, self.CREATE_TOPICS_VERSION, body)

    def delete_topics(self, body: Any) -> Any:
        return self._call(ApiKey.DELETE_TOPICS, self.DELETE_TOPICS_VERSION, body)

    def create_partitions(self, body: Any) -> Any:
        return self._call(ApiKey.CREATE_PARTITIONS, self.CREATE_PARTITIONS_VERSION, body)

    def legacy_groups(self) -> list[str]:
        return [g.group_id for g in self._call(ApiKey.LIST_GROUPS, self.LIST_GROUPS_VERSION, {}).groups]

    def legacy_offsets(self, group: str) -> dict[tuple[str, int], CommittedOffset]:
        response = self._call(ApiKey.OFFSET_FETCH, self.OFFSET_FETCH_VERSION,
                              {"group_id": group, "topics": None})
        return {(t.name, p.partition_index): CommittedOffset(p.committed_offset, p.committed_leader_epoch,
                                                              p.metadata or "")
                for t in response.topics for p in t.partitions}

    def alter_scram(self, body: Any) -> Any:
        return self._call(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, self.ALTER_SCRAM_VERSION, body)

    def create_acls(self, body: Any) -> Any:
        return self._call(ApiKey.CREATE_ACLS, self.ACLS_VERSION, body)

    def alter_configs(self, body: Any) -> Any:
        return self._call_configs(ApiKey.ALTER_CONFIGS, self.ALTER_CONFIGS_VERSION, body)

    def incremental_alter_configs(self, body: Any) -> Any:
        return self._call_configs(ApiKey.INCREMENTAL_ALTER_CONFIGS,
                                  self.INCREMENTAL_ALTER_CONFIGS_VERSION, body)

    def delete_acls(self, body: Any) -> Any:
        return self._call(ApiKey.DELETE_ACLS, self.ACLS_VERSION, body)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
        with self._configs_lock:
            self._configs_conn.close()
        self._metadata_conn.close()
