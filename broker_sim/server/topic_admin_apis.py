"""The topic changes a broker forwards to the controller: CreateTopics, DeleteTopics and
CreatePartitions, and the topics Metadata creates when ``auto.create.topics.enable`` is on.

* **CreateTopics** needs Create on the cluster or on the topic (else that topic's slot is
  TOPIC_AUTHORIZATION_FAILED); ``num_partitions`` / ``replication_factor`` of -1 take the
  broker's ``num.partitions`` / ``default.replication.factor``.
* **DeleteTopics** needs Delete on the topic; **CreatePartitions** Alter on the topic.
* The allowed part of a request is forwarded to the controller as one request (nothing is
  sent when no part is allowed); the broker refreshes its metadata before answering, so a
  Metadata request that follows on the same connection sees the change. The refused
  topics are answered beside the controller's results.

Threading: request-handler threads, several at once; no state of its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..network.request_channel import Request
from ..protocol.api import ApiKey
from ..protocol.errors import TopicAuthorizationFailed
from ..protocol.schema import Data
from ..security.acl import Operation as Op
from ..security.acl import ResourceType as RT

if TYPE_CHECKING:
    from .api_context import ApiContext

log = logging.getLogger(__name__)


class TopicAdminApis:
    def __init__(self, apis: ApiContext) -> None:
        self.apis = apis
        self.handlers: dict[int, Callable[[Request], None]] = {
            ApiKey.CREATE_TOPICS: self.handle_create_topics,
            ApiKey.DELETE_TOPICS: self.handle_delete_topics,
            ApiKey.CREATE_PARTITIONS: self.handle_create_partitions,
        }

    def may_create(self, request: Request, topic: str) -> bool:
        return (self.apis.authorized(request, Op.CREATE, RT.CLUSTER)
                or self.apis.authorized(request, Op.CREATE, RT.TOPIC, topic))

    def auto_create(self, names: list[str]) -> None:
        body = Data(topics=[Data(name=n, num_partitions=self.apis.config.num_partitions,
                                 replication_factor=-1, assignments=[], configs=[]) for n in names],
                    timeout_ms=30_000, validate_only=False)
        for r in self.apis.controller.create_topics(body).topics:
            if r.error_code == 0:
                log.info("auto-created topic %s", r.name)
        self.apis.refresh_metadata()

    def handle_create_topics(self, request: Request) -> None:
        body = request.body
        for t in body.topics:
            if t.num_partitions == -1 and not t.assignments:
                t.num_partitions = self.apis.config.num_partitions
            if t.replication_factor == -1 and not t.assignments and self.apis.config.default_replication_factor > 0:
                t.replication_factor = self.apis.config.default_replication_factor
        allowed = [t for t in body.topics if self.may_create(request, t.name)]
        refused = [Data(name=t.name, error_code=TopicAuthorizationFailed.code,
                        error_message="Create on the cluster or the topic is needed")
                   for t in body.topics if t not in allowed]
        response = self._forward(self.apis.controller.create_topics, body, "topics", allowed, "topics")
        response.topics = list(response.topics) + refused
        self.apis.respond(request, response)

    def handle_delete_topics(self, request: Request) -> None:
        body = request.body
        allowed = [n for n in body.topic_names if self.apis.authorized(request, Op.DELETE, RT.TOPIC, n)]
        response = self._forward(self.apis.controller.delete_topics, body, "topic_names", allowed, "responses")
        response.responses = list(response.responses) + [
            Data(name=n, error_code=TopicAuthorizationFailed.code) for n in body.topic_names
            if n not in allowed]
        self.apis.respond(request, response)

    def handle_create_partitions(self, request: Request) -> None:
        body = request.body
        allowed = [t for t in body.topics if self.apis.authorized(request, Op.ALTER, RT.TOPIC, t.name)]
        response = self._forward(self.apis.controller.create_partitions, body, "topics", allowed, "results")
        response.results = list(response.results) + [
            Data(name=t.name, error_code=TopicAuthorizationFailed.code,
                 error_message="Alter on the topic is needed") for t in body.topics if t not in allowed]
        self.apis.respond(request, response)

    def _forward(self, call: Callable[[Any], Any], body: Any, field: str, allowed: list[Any],
                 results: str) -> Any:
        """Forward the allowed part of ``body`` to the controller (nothing if none is)."""
        if not allowed:
            return Data(throttle_time_ms=0, **{results: []})
        response = call(Data(**{**body.__dict__, field: allowed}))
        self.apis.refresh_metadata()
        return response
