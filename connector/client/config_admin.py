"""Topic and broker configs: DescribeConfigs, AlterConfigs, IncrementalAlterConfigs.

A resource is ``("topic", name)`` or ``("broker", id)``; ``("broker", "")`` is the
cluster-wide default of the dynamic broker configs. What comes back for each config is a
:class:`ConfigEntry`: its value in effect, where that value comes from (Kafka's config
source names: ``DYNAMIC_TOPIC_CONFIG``, ``DYNAMIC_BROKER_CONFIG``,
``DYNAMIC_DEFAULT_BROKER_CONFIG``, ``STATIC_BROKER_CONFIG``, ``DEFAULT_CONFIG``), whether it
is read-only or sensitive (then its value is None), and with ``include_synonyms`` the value
from every source that sets it, highest precedence first.

Example (needs a running broker)::

    admin.incremental_alter_configs({("topic", "events"): {"retention.ms": "3600000",
                                                            "cleanup.policy": None}})
    admin.describe_configs([("topic", "events")])[("topic", "events")]["retention.ms"].value
    # '3600000'

Routing: a broker's configs are described by that broker (only it knows its start-up
options); everything else goes to the least loaded broker, which forwards changes to the
controller. The change is in effect on every live broker when the call returns.
A refused resource raises its Kafka error (``InvalidConfig``, ``UnknownTopicOrPartition``,
``InvalidRequest``, ``TopicAuthorizationFailed`` ...), the message naming the resource and
the config.

Threading: one thread at a time (through the admin client's :class:`.sync_client.SyncClient`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import error_for_code

from .sync_client import SyncClient

RESOURCE_TYPES = {"topic": 2, "broker": 4}
_TYPE_NAMES = {v: k for k, v in RESOURCE_TYPES.items()}
SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
           3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
           6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "CLIENT_METRICS_CONFIG"}
TYPES = {0: "UNKNOWN", 1: "BOOLEAN", 2: "STRING", 3: "INT", 4: "SHORT", 5: "LONG", 6: "DOUBLE",
         7: "LIST", 8: "CLASS", 9: "PASSWORD"}
OPERATIONS = {"set": 0, "delete": 1, "append": 2, "subtract": 3}

Resource = tuple[str, str]


class ConfigSynonym(NamedTuple):
    name: str
    value: str | None
    source: str


class ConfigEntry(NamedTuple):
    name: str
    value: str | None
    source: str
    read_only: bool = False
    sensitive: bool = False
    synonyms: tuple[ConfigSynonym, ...] = ()
    type: str = "UNKNOWN"
    documentation: str | None = None

    @property
    def is_default(self) -> bool:
        return self.source == "DEFAULT_CONFIG"


class AlterConfigOp(NamedTuple):
    """One IncrementalAlterConfigs operation: ``op`` is set, delete, append or subtract
    (the last two for list configs such as ``cleanup.policy``)."""

    name: str
    op: str = "set"
    value: str | None = None


def resource(kind: str, name: str | int) -> Resource:
    """``("topic", "t")`` / ``("broker", 1)`` checked and normalised (names are strings)."""
    if kind not in RESOURCE_TYPES:
        raise ValueError(f"resource type {kind!r}: must be one of {', '.join(RESOURCE_TYPES)}")
    name = str(name)
    if kind == "broker" and name != "" and not name.isdigit():
        raise ValueError(f"broker resource {name!r}: must be a broker id, or '' for the "
                         "cluster-wide default")
    return kind, name


def _ops(changes: Mapping[str, str | None] | Iterable[AlterConfigOp]) -> list[AlterConfigOp]:
    if isinstance(changes, Mapping):
        return [AlterConfigOp(k, "delete") if v is None else AlterConfigOp(k, "set", str(v))
                for k, v in changes.items()]
    ops = [AlterConfigOp(*c) for c in changes]
    for o in ops:
        if o.op not in OPERATIONS:
            raise ValueError(f"config {o.name}: operation {o.op!r} is not one of "
                             f"{', '.join(OPERATIONS)}")
    return ops


def _raise_for(code: int, r: Resource, message: str | None) -> None:
    if code:
        what = f"{r[0]} {r[1]!r}" if r[1] else f"{r[0]} '' (cluster-wide default)"
        raise error_for_code(code)(f"{what}: {message}" if message else what)


class ConfigAdmin:
    def __init__(self, sync: SyncClient) -> None:
        self._sync = sync

    def describe_configs(self, resources: Iterable[tuple[str, str | int]],
                         names: Iterable[str] | None = None, *, include_synonyms: bool = False,
                         include_documentation: bool = False, timeout_ms: float | None = None
                         ) -> dict[Resource, dict[str, ConfigEntry]]:
        """Every config of each resource (only ``names``, if given), by name."""
        wanted = [resource(*r) for r in resources]
        keys = None if names is None else list(names)
        deadline = self._sync.deadline(timeout_ms)
        by_node: dict[int | None, list[Resource]] = {}
        for r in wanted:
            node = int(r[1]) if r[0] == "broker" and r[1] != "" else None
            by_node.setdefault(node, []).append(r)
        out: dict[Resource, dict[str, ConfigEntry]] = {}
        for node, group in by_node.items():
            body = {"resources": [{"resource_type": RESOURCE_TYPES[k], "resource_name": n,
                                   "configuration_keys": keys} for k, n in group],
                    "include_synonyms": include_synonyms,
                    "include_documentation": include_documentation}
            response = (self._sync.request_any(ApiKey.DESCRIBE_CONFIGS, body, deadline) if node is None
                        else self._sync.request(node, ApiKey.DESCRIBE_CONFIGS, body, deadline))
            for result in response.results:
                r = (_TYPE_NAMES.get(result.resource_type, str(result.resource_type)),
                     result.resource_name)
                _raise_for(result.error_code, r, result.error_message)
                out[r] = {c.name: ConfigEntry(
                    c.name, c.value, SOURCES.get(c.config_source, "UNKNOWN")
                    if c.config_source >= 0 else ("DEFAULT_CONFIG" if c.is_default else "UNKNOWN"),
                    c.read_only, c.is_sensitive,
                    tuple(ConfigSynonym(s.name, s.value, SOURCES.get(s.source, "UNKNOWN"))
                          for s in c.synonyms or ()),
                    TYPES.get(c.config_type, "UNKNOWN"), c.documentation) for c in result.configs}
        return {r: out[r] for r in wanted if r in out}

    def alter_configs(self, configs: Mapping[tuple[str, str | int], Mapping[str, str]], *,
                      validate_only: bool = False, timeout_ms: float | None = None) -> None:
        """AlterConfigs: each resource's overrides become exactly ``configs[resource]``
        (anything not named returns to its default)."""
        resources = {resource(*r): dict(c) for r, c in configs.items()}
        body = {"resources": [{"resource_type": RESOURCE_TYPES[k], "resource_name": n,
                               "configs": [{"name": name, "value": str(v)} for name, v in c.items()]}
                              for (k, n), c in resources.items()],
                "validate_only": validate_only}
        self._alter(ApiKey.ALTER_CONFIGS, body, timeout_ms)

    def incremental_alter_configs(
            self, changes: Mapping[tuple[str, str | int],
                                   Mapping[str, str | None] | Iterable[AlterConfigOp]], *,
            validate_only: bool = False, timeout_ms: float | None = None) -> None:
        """IncrementalAlterConfigs: per resource, a mapping ``{name: value}`` (None deletes
        the override) or a list of :class:`AlterConfigOp`; other configs are untouched."""
        body = {"resources": [{"resource_type": RESOURCE_TYPES[k], "resource_name": n,
                               "configs": [{"name": o.name, "config_operation": OPERATIONS[o.op],
                                            "value": o.value} for o in _ops(ops)]}
                              for (k, n), ops in ((resource(*r), c) for r, c in changes.items())],
                "validate_only": validate_only}
        self._alter(ApiKey.INCREMENTAL_ALTER_CONFIGS, body, timeout_ms)

    def _alter(self, api_key: int, body: dict[str, Any], timeout_ms: float | None) -> None:
        if not body["resources"]:
            return
        response = self._sync.request_any(api_key, body, self._sync.deadline(timeout_ms))
        for r in response.responses:
            _raise_for(r.error_code, (_TYPE_NAMES.get(r.resource_type, str(r.resource_type)),
                                      r.resource_name), r.error_message)
