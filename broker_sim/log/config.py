"""Per-partition log configuration, with Kafka's topic-level names and defaults.

Each option field of :class:`LogConfig` is one Kafka topic config, declared once with
:func:`broker_sim.common.options.option` (name, kind and allowed values, default, meaning,
and the broker-wide ``log.*`` synonym that sets its default); ``docs/options.md`` lists
them. The dotted name is what ``CreateTopics``/``AlterConfigs`` carry and what
:meth:`LogConfig.from_properties` accepts (``message.max.bytes`` too, for
``max.message.bytes``). ``cleanup.policy`` is a list: ``delete,compact`` is the same policy
as ``compact,delete`` and is kept in that canonical order. Retention by time and size
applies only to a policy that includes ``delete``; the compaction settings drive the log
cleaner (:mod:`.cleaner`) of a policy that includes ``compact``.

>>> LogConfig.from_properties({"segment.bytes": "1024", "retention.ms": "-1"}).segment_bytes
1024
>>> LogConfig(segment_bytes=0)
Traceback (most recent call last):
...
broker_sim.protocol.errors.InvalidConfig: Invalid value 0 for configuration segment.bytes (segment_bytes): must be an integer in [14, 2147483647]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..common.options import (
    INT32_MAX,
    INT64_MAX,
    Kind,
    OptionSpec,
    custom,
    declared,
    integer,
    names,
    number,
    option,
    parse_value,
)
from ..protocol.errors import InvalidConfig

DAY_MS = 24 * 60 * 60 * 1000

CLEANUP_POLICIES = ("delete", "compact")
CLEANUP_POLICY_ALLOWED = "a comma-separated list of delete and compact (delete, compact or compact,delete)"


def _cleanup_policy(raw: object) -> str:
    items = [p.strip().lower() for p in str(raw).split(",")]
    if not raw or not isinstance(raw, str) or any(p not in CLEANUP_POLICIES for p in items) \
            or len(set(items)) != len(items):
        raise ValueError(raw)
    return ",".join(sorted(items))


CLEANUP_POLICY = custom("list", _cleanup_policy, CLEANUP_POLICY_ALLOWED)


def parse_cleanup_policy(raw: object) -> str:
    """``"delete, compact"`` -> ``"compact,delete"``; InvalidConfig naming the option otherwise.

    >>> parse_cleanup_policy("delete,compact")
    'compact,delete'
    """
    try:
        return _cleanup_policy(raw)
    except ValueError:
        raise InvalidConfig(f"Invalid value {raw!r} for configuration cleanup.policy "
                            f"(cleanup_policy): must be {CLEANUP_POLICY_ALLOWED}") from None


def _ms(low: int, allowed: str) -> Kind:
    return integer(low, INT64_MAX, allowed=allowed)


@dataclass(frozen=True)
class LogConfig:
    """Immutable, validated settings of one partition log: Kafka's topic configs, each
    declared once below (name, kind, default, meaning, and ``synonym``: the broker-wide
    ``log.*`` option that sets the default of topics that do not set it).

    Invariant: every field holds a value of its declared type inside its declared range;
    construction (including :meth:`replace` and :meth:`from_properties`) raises
    :class:`~broker_sim.protocol.errors.InvalidConfig` naming the option, the value and
    what is allowed. The constructor takes typed values only (an ``int`` for an integer
    option, the canonical order for ``cleanup.policy``); :meth:`from_properties` parses
    strings. Being frozen, an instance may be shared between threads freely; a log
    changes configuration by swapping in a whole new instance.
    """

    segment_bytes: int = option(
        "segment.bytes", 1024 * 1024 * 1024, integer(14, INT32_MAX), dynamic=True,
        synonym="log.segment.bytes",
        doc="A new segment is started when the active one would grow past this size.")
    segment_ms: int = option(
        "segment.ms", 7 * DAY_MS, _ms(1, "an integer >= 1 (milliseconds)"), dynamic=True,
        synonym="log.roll.ms", doc="A new segment is started when the active one is older than this.")
    retention_bytes: int = option(
        "retention.bytes", -1, integer(-1, INT64_MAX, allowed="-1 (unlimited) or an integer >= 0"),
        dynamic=True, synonym="log.retention.bytes",
        doc="Old segments are deleted while a partition holds more than this many bytes (-1: no limit).")
    retention_ms: int = option(
        "retention.ms", 7 * DAY_MS,
        _ms(-1, "-1 (unlimited) or an integer >= 0 (milliseconds)"), dynamic=True,
        synonym="log.retention.ms",
        doc="Segments whose newest record is older than this are deleted (-1: kept forever).")
    index_interval_bytes: int = option(
        "index.interval.bytes", 4096, integer(0, INT32_MAX), dynamic=True,
        synonym="log.index.interval.bytes",
        doc="Bytes of records between two entries of a segment's offset index.")
    max_message_bytes: int = option(
        "max.message.bytes", 1024 * 1024 + 12, integer(0, INT32_MAX), dynamic=True,
        doc="The largest record batch the topic accepts, in bytes (Kafka's 1 MiB plus the "
            "12-byte log overhead; message.max.bytes is accepted as a topic config too).")
    cleanup_policy: str = option(
        "cleanup.policy", "delete", CLEANUP_POLICY, dynamic=True,
        doc="Which old data goes: 'delete' removes segments past retention.ms or "
            "retention.bytes; 'compact' keeps the latest record per key.")
    delete_retention_ms: int = option(
        "delete.retention.ms", DAY_MS, _ms(0, "an integer >= 0 (milliseconds)"), dynamic=True,
        synonym="log.cleaner.delete.retention.ms",
        doc="How long the cleaner keeps a tombstone (a null value) of a compacted topic, so "
            "readers catching up still see the deletion.")
    min_compaction_lag_ms: int = option(
        "min.compaction.lag.ms", 0, _ms(0, "an integer >= 0 (milliseconds)"), dynamic=True,
        synonym="log.cleaner.min.compaction.lag.ms",
        doc="The shortest a record stays uncompacted (records newer than this are left for a "
            "later clean).")
    max_compaction_lag_ms: int = option(
        "max.compaction.lag.ms", INT64_MAX, _ms(1, "an integer >= 1 (milliseconds)"), dynamic=True,
        synonym="log.cleaner.max.compaction.lag.ms",
        doc="The longest a record may stay uncompacted: past it a log is cleaned whatever its "
            "dirty ratio.")
    min_cleanable_dirty_ratio: float = option(
        "min.cleanable.dirty.ratio", 0.5, number(0, 1), dynamic=True,
        synonym="log.cleaner.min.cleanable.ratio",
        doc="A compacted log is cleaned once its uncleaned bytes reach this share of it.")

    @property
    def deletes(self) -> bool:
        """Whether retention (by time and size) removes old segments: ``delete`` in the policy."""
        return "delete" in self.cleanup_policy.split(",")

    @property
    def compacts(self) -> bool:
        """Whether the log cleaner keeps only the latest record per key: ``compact`` in the policy."""
        return "compact" in self.cleanup_policy.split(",")

    def __post_init__(self) -> None:
        for spec in declared(LogConfig).values():
            value = getattr(self, spec.attr)
            try:
                fits = _typed(spec, value) and parse_value(spec, value) == value
            except ValueError:
                fits = False
            if not fits:
                canonical = " in canonical order" if spec.attr == "cleanup_policy" else ""
                raise InvalidConfig(f"Invalid value {value!r} for configuration {spec.name} "
                                    f"({spec.attr}): must be {spec.kind.allowed}{canonical}")

    @classmethod
    def from_properties(
        cls,
        props: Mapping[str, str],
        defaults: LogConfig | None = None,
        *,
        ignore_unknown: bool = False,
    ) -> LogConfig:
        """Build a config from Kafka dotted names (``{"segment.bytes": "1048576"}``).

        Names not given keep their value from ``defaults`` (or the Kafka default). An
        unknown name raises InvalidConfig unless ``ignore_unknown`` (useful for topic
        configs this log does not implement, e.g. ``flush.messages``).
        """
        known = PROPERTY_NAMES
        changes: dict[str, Any] = {}
        for prop, raw in props.items():
            spec = known.get(prop)
            if spec is None:
                if ignore_unknown:
                    continue
                raise InvalidConfig(
                    f"Unknown configuration {prop}: supported log configurations are "
                    + ", ".join(sorted(known))
                )
            try:
                changes[spec.attr] = parse_value(spec, raw)
            except ValueError:
                if spec.attr == "cleanup_policy":
                    parse_cleanup_policy(raw)  # raises, with the option's own message
                raise InvalidConfig(f"Invalid value {_shown(raw)!r} for configuration {prop} "
                                    f"({spec.attr}): must be {spec.kind.allowed}") from None
        base = defaults if defaults is not None else cls()
        return dataclasses.replace(base, **changes)

    def to_properties(self) -> dict[str, str]:
        """All settings as Kafka dotted names and string values (inverse of from_properties)."""
        return {spec.name: str(getattr(self, spec.attr)) for spec in declared(LogConfig).values()}

    def overrides_from(self, defaults: LogConfig) -> dict[str, str]:
        """Only the settings that differ from ``defaults``, as Kafka dotted names."""
        return {spec.name: str(getattr(self, spec.attr)) for spec in declared(LogConfig).values()
                if getattr(self, spec.attr) != getattr(defaults, spec.attr)}

    def replace(self, **changes: Any) -> LogConfig:
        """A copy with some fields changed (validated like the constructor)."""
        return dataclasses.replace(self, **changes)


def _typed(spec: OptionSpec, value: object) -> bool:
    """Whether a constructor argument has the option's type (strings are parsed only by
    :meth:`LogConfig.from_properties`)."""
    if isinstance(value, bool):
        return False
    if spec.kind.name == "int":
        return isinstance(value, int)
    if spec.kind.name == "double":
        return isinstance(value, (int, float))
    return isinstance(value, str)


def _shown(raw: object) -> object:
    """A refused string value as the error shows it: the number it spells, if it is one."""
    for convert in (int, float):
        try:
            return convert(str(raw).strip())
        except ValueError:
            pass
    return raw


#: Every accepted topic-config spelling -> its declaration (pyq also takes the broker's
#: ``message.max.bytes`` for ``max.message.bytes``, as it always has).
PROPERTY_NAMES: dict[str, OptionSpec] = {
    **names(LogConfig), "message.max.bytes": declared(LogConfig)["max.message.bytes"]}

#: The broker-wide defaults of these settings: Kafka's ``log.`` names -> the topic-level
#: name (the declarations' synonyms).
BROKER_LOG_PROPERTIES: dict[str, str] = {
    spec.synonym: spec.name for spec in declared(LogConfig).values() if spec.synonym}
