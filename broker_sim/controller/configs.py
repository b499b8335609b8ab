"""Which configs a topic and a broker have, how they change, and how they are validated.

Pure functions and tables, shared by the controller (which validates and stores changes)
and the brokers (which describe configs and apply them). Nothing here does I/O or holds a
lock; every function returns a new dict and leaves its arguments alone.

Kafka's vocabulary (DescribeConfigs / AlterConfigs / IncrementalAlterConfigs):

* **resource**: a topic (type 2, named by the topic) or a broker (type 4, named by its id;
  ``""`` is the cluster-wide default every broker inherits).
* **topic configs** (:data:`TOPIC_CONFIGS`): the :class:`~broker_sim.log.LogConfig` settings
  plus ``min.insync.replicas``. A topic stores only its *overrides*; what is not overridden
  comes from the broker (its dynamic ``log.*`` configs, then its start-up options) or from
  the default.
* **dynamic broker configs** (:data:`DYNAMIC_BROKER_CONFIGS`): the broker-wide log defaults
  (``log.retention.ms`` ...), settable per broker or cluster-wide. Every other broker option
  is static: described read-only, changed only by a restart.
* **config source** (:class:`ConfigSource`), in Kafka's order of precedence:
  DYNAMIC_TOPIC_CONFIG > DYNAMIC_BROKER_CONFIG > DYNAMIC_DEFAULT_BROKER_CONFIG >
  STATIC_BROKER_CONFIG > DEFAULT_CONFIG. The *synonyms* of a topic config are the values it
  would take from each of those sources, highest first.

``min.insync.replicas`` not set on a topic is pyq's default: 2, capped at the topic's
replication factor (:func:`default_min_isr`), so a single-replica topic still accepts
acks=all writes.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from ..common.options import INT32_MAX, OptionSpec, declared
from ..log.config import BROKER_LOG_PROPERTIES, LogConfig, parse_cleanup_policy
from ..protocol.errors import InvalidConfig, InvalidRequest

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4

DEFAULT_MIN_ISR = 2


class ConfigSource(enum.IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


class ConfigType(enum.IntEnum):
    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class AlterOp(enum.IntEnum):
    """IncrementalAlterConfigs operations (APPEND and SUBTRACT only on list configs)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True)
class TopicConfigDef:
    name: str
    type: ConfigType
    #: The broker-wide option that supplies this config's default (None: pyq's default only).
    broker_name: str | None
    doc: str


def config_type(spec: OptionSpec) -> ConfigType:
    """The Kafka type DescribeConfigs states for a declared option."""
    if spec.secret:
        return ConfigType.PASSWORD
    if spec.kind.name == "int":
        try:  # an integer option whose range passes 32 bits is a LONG, as in Kafka
            spec.kind.parse(INT32_MAX + 1)
            return ConfigType.LONG
        except ValueError:
            return ConfigType.INT
    return {"bool": ConfigType.BOOLEAN, "double": ConfigType.DOUBLE,
            "list": ConfigType.LIST}.get(spec.kind.name, ConfigType.STRING)


#: Every topic config: LogConfig's declarations (type, broker-wide synonym and meaning
#: read from them) and min.insync.replicas, in name order.
TOPIC_CONFIGS: dict[str, TopicConfigDef] = dict(sorted({
    **{spec.name: TopicConfigDef(spec.name, config_type(spec), spec.synonym, spec.doc)
       for spec in declared(LogConfig).values()},
    "min.insync.replicas": TopicConfigDef(
        "min.insync.replicas", ConfigType.INT, None,
        "The fewest in-sync replicas with which an acks=all write is accepted "
        "(pyq's default: 2, at most the replication factor)."),
}.items()))

#: Topic configs that are not log settings (the partition, not the log, enforces them).
NON_LOG_TOPIC_CONFIGS = frozenset({"min.insync.replicas"})

#: Broker options that may change at runtime (per broker, or cluster-wide with name ""):
#: Kafka name -> the topic config whose default it is.
DYNAMIC_BROKER_CONFIGS: dict[str, str] = dict(BROKER_LOG_PROPERTIES)

_LIST_CONFIGS = {name for name, d in TOPIC_CONFIGS.items() if d.type == ConfigType.LIST}


def default_min_isr(replication_factor: int) -> int:
    """pyq's ``min.insync.replicas`` for a topic that does not set it."""
    return max(1, min(DEFAULT_MIN_ISR, replication_factor))


def effective_min_isr(configs: Mapping[str, str], replication_factor: int) -> int:
    raw = configs.get("min.insync.replicas")
    return int(raw) if raw is not None else default_min_isr(replication_factor)


def validate_topic_configs(configs: Mapping[str, str]) -> None:
    """Raise InvalidConfig naming the option for anything a topic cannot take."""
    LogConfig.from_properties({k: v for k, v in configs.items() if k not in NON_LOG_TOPIC_CONFIGS})
    if "min.insync.replicas" in configs:
        raw = configs["min.insync.replicas"]
        if not str(raw).strip().isdigit() or int(raw) < 1:
            raise InvalidConfig(f"Invalid value {raw!r} for configuration min.insync.replicas: "
                                "must be an integer of at least 1")


def normalize_topic_configs(configs: Mapping[str, str]) -> dict[str, str]:
    """The configs as stored: ``cleanup.policy`` in its canonical order (``compact,delete``)."""
    out = dict(configs)
    if "cleanup.policy" in out:
        out["cleanup.policy"] = parse_cleanup_policy(out["cleanup.policy"])
    return out


def validate_broker_configs(configs: Mapping[str, str]) -> None:
    """Raise InvalidConfig naming the option for anything a broker cannot take at runtime."""
    static = sorted(n for n in configs if n not in DYNAMIC_BROKER_CONFIGS)
    if static:
        raise InvalidConfig(f"Cannot change broker config {', '.join(static)} at runtime: only "
                            f"{', '.join(sorted(DYNAMIC_BROKER_CONFIGS))} are dynamic; the "
                            "others take effect at the next start (--override)")
    try:
        LogConfig.from_properties({DYNAMIC_BROKER_CONFIGS[k]: v for k, v in configs.items()})
    except InvalidConfig as e:  # name the broker option, not the topic-level one
        message = e.message
        for broker, topic in DYNAMIC_BROKER_CONFIGS.items():
            if broker in configs:
                message = message.replace(f"configuration {topic} ", f"configuration {broker} ")
        raise InvalidConfig(message) from None


def broker_log_overrides(broker_configs: Mapping[str, Mapping[str, str]],
                         broker_id: int) -> dict[str, str]:
    """The dynamic log defaults of ``broker_id``, as topic-level names: the cluster-wide ones
    (resource ``""``), then the broker's own on top."""
    out: dict[str, str] = {}
    for resource in ("", str(broker_id)):
        for name, value in broker_configs.get(resource, {}).items():
            if name in DYNAMIC_BROKER_CONFIGS:
                out[DYNAMIC_BROKER_CONFIGS[name]] = value
    return out


def check_broker_resource(name: str) -> None:
    """A broker resource is named by a broker id, or ``""`` for the cluster-wide default."""
    if name != "" and not (name.isdigit() and int(name) >= 0):
        raise InvalidRequest(f"broker resource name {name!r} is neither a broker id nor '' "
                             "(the cluster-wide default)")


def _no_duplicates(names: Iterable[str]) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise InvalidRequest(f"config {n} appears more than once for the same resource")
        seen.add(n)


def replace_all(items: Iterable[tuple[str, str | None]]) -> Callable[[dict[str, str]], dict[str, str]]:
    """AlterConfigs: the given configs become the resource's whole set of overrides (those
    not named return to their defaults)."""
    pairs = list(items)
    _no_duplicates(n for n, _ in pairs)
    for name, value in pairs:
        if value is None:
            raise InvalidRequest(f"config {name}: a null value cannot be set (AlterConfigs "
                                 "replaces every override; leave the config out to reset it)")
    new = {name: value for name, value in pairs if value is not None}
    return lambda current: dict(new)


def incremental(items: Iterable[tuple[str, int, str | None]],
                default: Callable[[str], str | None]) -> Callable[[dict[str, str]], dict[str, str]]:
    """IncrementalAlterConfigs: apply each operation to the current overrides.

    SET a value, DELETE an override (the config returns to its default), APPEND to or
    SUBTRACT from a list config (starting from its current value, the default when not
    overridden). ``default(name)`` gives a config's value when the resource does not set it.
    """
    ops = list(items)
    _no_duplicates(n for n, _, _ in ops)
    for name, op, value in ops:
        if op not in AlterOp.__members__.values():
            raise InvalidRequest(f"config {name}: unknown operation {op} (0 SET, 1 DELETE, "
                                 "2 APPEND, 3 SUBTRACT)")
        if op != AlterOp.DELETE and value is None:
            raise InvalidRequest(f"config {name}: operation {AlterOp(op).name} needs a value")
        if op in (AlterOp.APPEND, AlterOp.SUBTRACT) and name not in _LIST_CONFIGS:
            raise InvalidConfig(f"Config value {AlterOp(op).name.lower()} is not allowed for "
                                f"config {name}: it is not a list")

    def change(current: dict[str, str]) -> dict[str, str]:
        out = dict(current)
        for name, op, value in ops:
            if op == AlterOp.SET:
                assert value is not None
                out[name] = value
            elif op == AlterOp.DELETE:
                out.pop(name, None)
            else:
                assert value is not None
                base = out.get(name, default(name)) or ""
                items = [v.strip() for v in base.split(",") if v.strip()]
                given = [v.strip() for v in value.split(",") if v.strip()]
                if op == AlterOp.APPEND:
                    items += [v for v in given if v not in items]
                else:
                    items = [v for v in items if v not in given]
                out[name] = ",".join(items)
        return out

    return change
