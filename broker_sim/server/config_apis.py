"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs on a broker.

DescribeConfigs is answered from this broker's own copy of the cluster image and its own
start-up options:

* a **topic** (resource type 2) lists every topic config (:data:`~broker_sim.controller.
  configs.TOPIC_CONFIGS`) with the value in effect and where it comes from: the topic's
  override (DYNAMIC_TOPIC_CONFIG), else this broker's dynamic ``log.*`` config
  (DYNAMIC_BROKER_CONFIG), the cluster-wide one (DYNAMIC_DEFAULT_BROKER_CONFIG), the
  broker's start-up option (STATIC_BROKER_CONFIG), or the default (DEFAULT_CONFIG); with
  ``include_synonyms`` every one of those that is set, highest precedence first.
* a **broker** (resource type 4) named by *this* broker's id lists every broker option:
  the dynamic ones (``log.retention.ms`` ...) writable, the others read-only; sensitive
  ones (``ssl.key.password``) without their value. Which options are dynamic and
  sensitive, and the type each states, are read from the declarations
  (:data:`~broker_sim.server.config.BROKER_OPTIONS`). ``""`` lists the cluster-wide dynamic
  configs. Another broker's id is INVALID_REQUEST: only that broker knows its options
  (Kafka's clients send a broker's DescribeConfigs to that broker).

``configuration_keys`` null or empty asks for every config; names a resource does not have
are left out. The two alter APIs are checked here (AlterConfigs on the topic, or on the cluster for a
broker: TOPIC_/CLUSTER_AUTHORIZATION_FAILED otherwise) and forwarded to the controller,
which validates the whole new set (INVALID_CONFIG naming the config; an unknown topic is
UNKNOWN_TOPIC_OR_PARTITION; a resource named twice, a duplicated config or a null value
INVALID_REQUEST), stores it in the image and answers once every live broker applied it.
Answers keep the request's resource order.

Threading: request-handler threads, several at once; no state of its own (the image is
read from the metadata cache, replaced whole on each update).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..controller.configs import (
    DYNAMIC_BROKER_CONFIGS,
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    TOPIC_CONFIGS,
    ConfigSource,
    ConfigType,
    config_type,
    default_min_isr,
)
from ..controller.image import ClusterImage
from ..log import LogConfig
from ..network.request_channel import Request
from ..protocol.api import ApiKey
from ..protocol.errors import (
    ClusterAuthorizationFailed,
    InvalidRequest,
    KafkaError,
    TopicAuthorizationFailed,
    UnknownTopicOrPartition,
)
from ..protocol.schema import Data
from ..security.acl import Operation as Op
from ..security.acl import ResourceType as RT
from .config import BROKER_OPTIONS

if TYPE_CHECKING:
    from .api_context import ApiContext

log = logging.getLogger(__name__)



def _dynamic_doc(name: str) -> str | None:
    topic = DYNAMIC_BROKER_CONFIGS.get(name)
    return None if topic is None else f"Default {topic} of topics that do not set it."


def _dynamic_type(name: str) -> ConfigType:
    spec = BROKER_OPTIONS.get(name)
    return ConfigType.INT if spec is None else config_type(spec)


Synonym = tuple[str, str | None, ConfigSource]
#: (name, synonyms highest first, read-only, sensitive, type, documentation)
Entry = tuple[str, list[Synonym], bool, bool, ConfigType, str | None]


class ConfigApis:
    def __init__(self, apis: ApiContext) -> None:
        self.apis = apis
        self.config = apis.config
        self.handlers: dict[int, Callable[[Request], None]] = {
            ApiKey.DESCRIBE_CONFIGS: self.handle_describe_configs,
            ApiKey.ALTER_CONFIGS: self.handle_alter_configs,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self.handle_incremental_alter_configs,
        }

    # ---- DescribeConfigs -------------------------------------------------------------
    def handle_describe_configs(self, request: Request) -> None:
        body = request.body
        image = self.apis.metadata.image
        results = []
        for r in body.resources:
            out = Data(error_code=0, error_message=None, resource_type=r.resource_type,
                       resource_name=r.resource_name, configs=[])
            try:
                entries = self._describe(request, image, r.resource_type, r.resource_name)
                # null or empty: every config (as Kafka; kafka-python sends an empty list)
                wanted = set(r.configuration_keys) if r.configuration_keys else None
                out.configs = [self._entry(name, synonyms, read_only, sensitive, ctype, doc,
                                           body.include_synonyms, body.include_documentation)
                               for name, synonyms, read_only, sensitive, ctype, doc in entries
                               if wanted is None or name in wanted]
            except KafkaError as e:
                out.error_code = e.code
                out.error_message = e.message or None
            results.append(out)
        self.apis.respond(request, Data(throttle_time_ms=0, results=results))

    def _describe(self, request: Request, image: ClusterImage, resource_type: int,
                  name: str) -> list[Entry]:
        if resource_type == RESOURCE_TOPIC:
            if not self.apis.authorized(request, Op.DESCRIBE_CONFIGS, RT.TOPIC, name):
                raise TopicAuthorizationFailed(f"DescribeConfigs on topic {name!r} is not allowed")
            return self.describe_topic(image, name)
        if resource_type == RESOURCE_BROKER:
            if not self.apis.authorized(request, Op.DESCRIBE_CONFIGS, RT.CLUSTER):
                raise ClusterAuthorizationFailed("DescribeConfigs on the cluster is not allowed")
            return self.describe_broker(image, name)
        raise InvalidRequest(f"resource type {resource_type} has no configs in pyq "
                             f"(topic {RESOURCE_TOPIC}, broker {RESOURCE_BROKER})")

    def _broker_synonyms(self, image: ClusterImage, broker_name: str,
                         static: dict[str, tuple[str | None, bool]]) -> list[Synonym]:
        out: list[Synonym] = []
        mine = image.broker_configs.get(str(self.config.broker_id), {})
        cluster = image.broker_configs.get("", {})
        if broker_name in mine:
            out.append((broker_name, mine[broker_name], ConfigSource.DYNAMIC_BROKER_CONFIG))
        if broker_name in cluster:
            out.append((broker_name, cluster[broker_name], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG))
        value, changed = static.get(broker_name, (None, False))
        if changed:
            out.append((broker_name, value, ConfigSource.STATIC_BROKER_CONFIG))
        return out

    def describe_topic(self, image: ClusterImage, topic: str
                       ) -> list[Entry]:
        info = image.topics.get(topic)
        if info is None:
            raise UnknownTopicOrPartition(f"topic {topic!r} does not exist")
        static = self.config.static_properties()
        defaults = LogConfig().to_properties()
        defaults["min.insync.replicas"] = str(default_min_isr(len(info.partitions[0].replicas)))
        out: list[Entry] = []
        for name, d in TOPIC_CONFIGS.items():
            synonyms: list[Synonym] = []
            if name in info.configs:
                synonyms.append((name, info.configs[name], ConfigSource.DYNAMIC_TOPIC_CONFIG))
            if d.broker_name is not None:
                synonyms += self._broker_synonyms(image, d.broker_name, static)
            synonyms.append((d.broker_name or name, defaults[name], ConfigSource.DEFAULT_CONFIG))
            out.append((name, synonyms, False, False, d.type, d.doc))
        return out

    def describe_broker(self, image: ClusterImage, name: str
                        ) -> list[Entry]:
        if name == "":
            return [(n, [(n, v, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)], False, False,
                     _dynamic_type(n), _dynamic_doc(n))
                    for n, v in sorted(image.broker_configs.get("", {}).items())]
        if name != str(self.config.broker_id):
            raise InvalidRequest(f"this is broker {self.config.broker_id}: ask broker {name} for its "
                                 "configs (or '' for the cluster-wide ones)")
        static = self.config.static_properties()
        default = type(self.config)().static_properties()
        out: list[Entry] = []
        for option, (value, changed) in static.items():
            base = default.get(option, (None, False))[0]
            spec = BROKER_OPTIONS.get(option)
            if spec is not None and spec.dynamic:
                synonyms = self._broker_synonyms(image, option, static)
                synonyms.append((option, base, ConfigSource.DEFAULT_CONFIG))
                out.append((option, synonyms, False, False, config_type(spec), _dynamic_doc(option)))
                continue
            source = ConfigSource.STATIC_BROKER_CONFIG if changed else ConfigSource.DEFAULT_CONFIG
            sensitive = spec is not None and spec.secret
            ctype = ConfigType.PASSWORD if sensitive else ConfigType.STRING
            synonyms = [(option, value, source)]
            if changed:
                synonyms.append((option, base, ConfigSource.DEFAULT_CONFIG))
            out.append((option, synonyms, True, sensitive, ctype,
                        "Read-only: set at start-up (--override); a restart changes it."))
        return out

    @staticmethod
    def _entry(name: str, synonyms: list[Synonym], read_only: bool, sensitive: bool,
               ctype: ConfigType, doc: str | None, include_synonyms: bool,
               include_documentation: bool) -> Data:
        _, value, source = synonyms[0]
        hide = sensitive
        return Data(
            name=name, value=None if hide else value, read_only=read_only,
            is_default=source == ConfigSource.DEFAULT_CONFIG, config_source=int(source),
            is_sensitive=sensitive,
            synonyms=[Data(name=n, value=None if hide else v, source=int(s)) for n, v, s in synonyms]
            if include_synonyms else [],
            config_type=int(ctype), documentation=doc if include_documentation else None)

    # ---- AlterConfigs / IncrementalAlterConfigs --------------------------------------
    def handle_alter_configs(self, request: Request) -> None:
        self._alter(request, self.apis.controller.alter_configs)

    def handle_incremental_alter_configs(self, request: Request) -> None:
        self._alter(request, self.apis.controller.incremental_alter_configs)

    def _alter(self, request: Request, forward: Callable[[Any], Any]) -> None:
        body = request.body
        answers: list[Data | None] = []
        allowed = []
        for r in body.resources:
            refused: KafkaError | None = None
            if r.resource_type == RESOURCE_TOPIC:
                if not self.apis.authorized(request, Op.ALTER_CONFIGS, RT.TOPIC, r.resource_name):
                    refused = TopicAuthorizationFailed(
                        f"AlterConfigs on topic {r.resource_name!r} is not allowed")
            elif r.resource_type == RESOURCE_BROKER:
                if not self.apis.authorized(request, Op.ALTER_CONFIGS, RT.CLUSTER):
                    refused = ClusterAuthorizationFailed("AlterConfigs on the cluster is not allowed")
            else:
                refused = InvalidRequest(f"resource type {r.resource_type} has no configs in pyq "
                                         f"(topic {RESOURCE_TOPIC}, broker {RESOURCE_BROKER})")
            if refused is None:
                allowed.append(r)
                answers.append(None)
            else:
                answers.append(Data(error_code=refused.code, error_message=refused.message,
                                    resource_type=r.resource_type, resource_name=r.resource_name))
        forwarded: list[Data] = []
        if allowed:
            forwarded = list(forward(Data(resources=allowed, validate_only=body.validate_only)).responses)
            self.apis.refresh_metadata()
        it = iter(forwarded)
        self.apis.respond(request, Data(throttle_time_ms=0,
                                        responses=[a if a is not None else next(it) for a in answers]))
