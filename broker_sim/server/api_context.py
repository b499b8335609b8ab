"""ApiContext: what a family of request handlers (a ``*_apis.py`` module) needs of the broker.

:class:`~broker_sim.server.kafka_apis.KafkaApis` dispatches each request to the handler of
its API key; most handlers live in their own modules, grouped by concept (security, groups,
configs, topics...), and each needs only a narrow view of the broker: its config, the
replicas, the metadata image, the controller, a way to answer and to check the principal's
rights. :class:`ApiContext` is that view. The handler modules depend on it; ``KafkaApis``
satisfies it structurally and imports them, so no handler module imports ``kafka_apis``
back (the import circle ``tests/test_import_layers.py`` would refuse).

Threading: the members are called from request-handler threads, several at a time; each
object behind them (the stores, the channel) keeps its own lock, the context keeps no state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..security.acl import CLUSTER_NAME

if TYPE_CHECKING:
    from ..network.request_channel import Request, RequestChannel
    from ..security.acl import Operation, ResourceType
    from .config import BrokerConfig
    from .controller_client import ControllerClient
    from .metadata_cache import MetadataCache
    from .replica_manager import ReplicaManager


class ApiContext(Protocol):
    """The broker as a handler module sees it (``KafkaApis`` is the one implementation)."""

    config: BrokerConfig
    channel: RequestChannel
    replica_manager: ReplicaManager
    metadata: MetadataCache
    controller: ControllerClient
    #: ask the controller's image again (after a change this broker forwarded)
    refresh_metadata: Callable[[], None]

    def respond(self, request: Request, body: Any, close_after_send: bool = False) -> None:
        """Send the answer to ``request``, encoded in the version the client used."""

    def listener_name(self, request: Request) -> str | None:
        """The name of the listener ``request`` came in on (None when it has no session)."""

    def authorized(self, request: Request, operation: Operation, resource_type: ResourceType,
                   name: str = CLUSTER_NAME) -> bool:
        """May this request's principal do ``operation`` on the resource?"""

    def authorized_operations(self, request: Request, resource_type: ResourceType,
                              name: str = CLUSTER_NAME) -> int:
        """KIP-430's bitfield of what the principal may do on a resource."""

    def handle_init_producer_id(self, request: Request) -> None:
        """InitProducerId without a transactional id (an idempotent producer's)."""
