"""Per-partition log configuration, with Kafka's topic-level names and defaults.

Each field of :class:`LogConfig` is one Kafka topic config; the dotted name is what
``CreateTopics``/``AlterConfigs`` carry and what :meth:`LogConfig.from_properties` accepts::

    field                  Kafka name               default          allowed
    segment_bytes          segment.bytes            1 GiB            14 .. 2**31-1
    segment_ms             segment.ms               7 days           >= 1
    retention_bytes        retention.bytes          -1 (unlimited)   -1 or >= 0
    retention_ms           retention.ms             7 days           -1 (unlimited) or >= 0
    index_interval_bytes   index.interval.bytes     4096             >= 0
    max_message_bytes      message.max.bytes *      1048588          >= 0

(* the topic-level name is ``max.message.bytes``; both spellings are accepted.)
The default ``max_message_bytes`` is Kafka's: 1 MiB plus the 12-byte log overhead.

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

from ..protocol.errors import InvalidConfig

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
DAY_MS = 24 * 60 * 60 * 1000

# field name -> (Kafka dotted name, minimum, maximum, "allowed" text for error messages)
_RULES: dict[str, tuple[str, int, int, str]] = {
    "segment_bytes": ("segment.bytes", 14, INT32_MAX, f"an integer in [14, {INT32_MAX}]"),
    "segment_ms": ("segment.ms", 1, INT64_MAX, "an integer >= 1 (milliseconds)"),
    "retention_bytes": ("retention.bytes", -1, INT64_MAX, "-1 (unlimited) or an integer >= 0"),
    "retention_ms": ("retention.ms", -1, INT64_MAX, "-1 (unlimited) or an integer >= 0 (milliseconds)"),
    "index_interval_bytes": ("index.interval.bytes", 0, INT32_MAX, f"an integer in [0, {INT32_MAX}]"),
    "max_message_bytes": ("max.message.bytes", 0, INT32_MAX, f"an integer in [0, {INT32_MAX}]"),
}

# Kafka dotted name (and accepted aliases) -> field name.
PROPERTY_NAMES: dict[str, str] = {rule[0]: name for name, rule in _RULES.items()}
PROPERTY_NAMES["message.max.bytes"] = "max_message_bytes"


@dataclass(frozen=True)
class LogConfig:
    """Immutable, validated settings of one partition log.

    Invariant: every field holds a value inside the range listed in the module docstring;
    construction (including :meth:`replace` and :meth:`from_properties`) raises
    :class:`~broker_sim.protocol.errors.InvalidConfig` naming the option, the value and
    what is allowed. Being frozen, an instance may be shared between threads freely; a log
    changes configuration by swapping in a whole new instance.
    """

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * DAY_MS
    retention_bytes: int = -1
    retention_ms: int = 7 * DAY_MS
    index_interval_bytes: int = 4096
    max_message_bytes: int = 1024 * 1024 + 12

    def __post_init__(self) -> None:
        for name, (prop, low, high, allowed) in _RULES.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InvalidConfig(
                    f"Invalid value {value!r} for configuration {prop} ({name}): must be {allowed}"
                )

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
        configs this log does not implement, e.g. ``cleanup.policy``).
        """
        changes: dict[str, Any] = {}
        for prop, raw in props.items():
            name = PROPERTY_NAMES.get(prop)
            if name is None:
                if ignore_unknown:
                    continue
                raise InvalidConfig(
                    f"Unknown configuration {prop}: supported log configurations are "
                    + ", ".join(sorted(PROPERTY_NAMES))
                )
            try:
                changes[name] = int(str(raw).strip())
            except ValueError:
                allowed = _RULES[name][3]
                raise InvalidConfig(
                    f"Invalid value {raw!r} for configuration {prop} ({name}): must be {allowed}"
                ) from None
        base = defaults if defaults is not None else cls()
        return dataclasses.replace(base, **changes)

    def to_properties(self) -> dict[str, str]:
        """All settings as Kafka dotted names and string values (inverse of from_properties)."""
        return {rule[0]: str(getattr(self, name)) for name, rule in _RULES.items()}

    def overrides_from(self, defaults: LogConfig) -> dict[str, str]:
        """Only the settings that differ from ``defaults``, as Kafka dotted names."""
        return {
            rule[0]: str(getattr(self, name))
            for name, rule in _RULES.items()
            if getattr(self, name) != getattr(defaults, name)
        }

    def replace(self, **changes: int) -> LogConfig:
        """A copy with some fields changed (validated like the constructor)."""
        return dataclasses.replace(self, **changes)
