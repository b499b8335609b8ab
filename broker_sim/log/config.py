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
    cleanup_policy         cleanup.policy           delete           delete, compact, compact,delete
    delete_retention_ms    delete.retention.ms      1 day            >= 0
    min_compaction_lag_ms  min.compaction.lag.ms    0                >= 0
    max_compaction_lag_ms  max.compaction.lag.ms    2**63-1          >= 1
    min_cleanable_dirty_ratio min.cleanable.dirty.ratio 0.5          0 .. 1 (a number)

(* the topic-level name is ``max.message.bytes``; both spellings are accepted.)
``cleanup.policy`` is a list: ``delete,compact`` is the same policy as ``compact,delete`` and
is kept in that canonical order. Retention by time and size applies only to a policy that
includes ``delete``; the compaction settings (the last four) drive the log cleaner
(:mod:`.cleaner`) of a policy that includes ``compact``.
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
    "delete_retention_ms": ("delete.retention.ms", 0, INT64_MAX, "an integer >= 0 (milliseconds)"),
    "min_compaction_lag_ms": ("min.compaction.lag.ms", 0, INT64_MAX, "an integer >= 0 (milliseconds)"),
    "max_compaction_lag_ms": ("max.compaction.lag.ms", 1, INT64_MAX, "an integer >= 1 (milliseconds)"),
}
RATIO_NAME, RATIO_ALLOWED = "min.cleanable.dirty.ratio", "a number in [0, 1]"

# Kafka dotted name (and accepted aliases) -> field name.
PROPERTY_NAMES: dict[str, str] = {rule[0]: name for name, rule in _RULES.items()}
PROPERTY_NAMES["message.max.bytes"] = "max_message_bytes"
PROPERTY_NAMES["cleanup.policy"] = "cleanup_policy"
PROPERTY_NAMES[RATIO_NAME] = "min_cleanable_dirty_ratio"

#: The broker-wide defaults of these settings: Kafka's ``log.`` names -> the topic-level name.
BROKER_LOG_PROPERTIES: dict[str, str] = {
    "log.segment.bytes": "segment.bytes", "log.roll.ms": "segment.ms",
    "log.retention.bytes": "retention.bytes", "log.retention.ms": "retention.ms",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio": RATIO_NAME,
}

CLEANUP_POLICIES = ("delete", "compact")
CLEANUP_POLICY_ALLOWED = "a comma-separated list of delete and compact (delete, compact or compact,delete)"


def parse_cleanup_policy(raw: object) -> str:
    """``"delete, compact"`` -> ``"compact,delete"``; InvalidConfig naming the option otherwise.

    >>> parse_cleanup_policy("delete,compact")
    'compact,delete'
    """
    items = [p.strip().lower() for p in str(raw).split(",")]
    if not raw or not isinstance(raw, str) or any(p not in CLEANUP_POLICIES for p in items) \
            or len(set(items)) != len(items):
        raise InvalidConfig(f"Invalid value {raw!r} for configuration cleanup.policy "
                            f"(cleanup_policy): must be {CLEANUP_POLICY_ALLOWED}")
    return ",".join(sorted(items))


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
    cleanup_policy: str = "delete"
    delete_retention_ms: int = DAY_MS
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = INT64_MAX
    min_cleanable_dirty_ratio: float = 0.5

    @property
    def deletes(self) -> bool:
        """Whether retention (by time and size) removes old segments: ``delete`` in the policy."""
        return "delete" in self.cleanup_policy.split(",")

    @property
    def compacts(self) -> bool:
        """Whether the log cleaner keeps only the latest record per key: ``compact`` in the policy."""
        return "compact" in self.cleanup_policy.split(",")

    def __post_init__(self) -> None:
        if parse_cleanup_policy(self.cleanup_policy) != self.cleanup_policy:
            raise InvalidConfig(f"Invalid value {self.cleanup_policy!r} for configuration "
                                f"cleanup.policy (cleanup_policy): must be {CLEANUP_POLICY_ALLOWED} "
                                "in canonical order")
        ratio = self.min_cleanable_dirty_ratio
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 <= ratio <= 1:
            raise InvalidConfig(f"Invalid value {ratio!r} for configuration {RATIO_NAME} "
                                f"(min_cleanable_dirty_ratio): must be {RATIO_ALLOWED}")
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
            if name == "cleanup_policy":
                changes[name] = parse_cleanup_policy(raw)
                continue
            if name == "min_cleanable_dirty_ratio":
                try:
                    changes[name] = float(str(raw).strip())
                except ValueError:
                    raise InvalidConfig(f"Invalid value {raw!r} for configuration {prop} "
                                        f"({name}): must be {RATIO_ALLOWED}") from None
                continue
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
        out = {rule[0]: str(getattr(self, name)) for name, rule in _RULES.items()}
        out["cleanup.policy"] = self.cleanup_policy
        out[RATIO_NAME] = str(self.min_cleanable_dirty_ratio)
        return out

    def overrides_from(self, defaults: LogConfig) -> dict[str, str]:
        """Only the settings that differ from ``defaults``, as Kafka dotted names."""
        out = {
            rule[0]: str(getattr(self, name))
            for name, rule in _RULES.items()
            if getattr(self, name) != getattr(defaults, name)
        }
        if self.cleanup_policy != defaults.cleanup_policy:
            out["cleanup.policy"] = self.cleanup_policy
        if self.min_cleanable_dirty_ratio != defaults.min_cleanable_dirty_ratio:
            out[RATIO_NAME] = str(self.min_cleanable_dirty_ratio)
        return out

    def replace(self, **changes: Any) -> LogConfig:
        """A copy with some fields changed (validated like the constructor)."""
        return dataclasses.replace(self, **changes)
