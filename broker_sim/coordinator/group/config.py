"""The broker settings of the group coordinator, under Kafka's names."""

from __future__ import annotations

from dataclasses import dataclass

from ...common.options import (
    INT32_MAX,
    Kind,
    OptionSpec,
    custom,
    declared,
    format_value,
    integer,
    option,
    parse_declared,
)

#: The server-side assignors of the consumer protocol (KIP-848), by their Kafka names.
CONSUMER_ASSIGNORS = ("uniform", "range")


def at_least(low: int) -> Kind:
    """An integer option's kind with the broker's rule text (``at least 1``)."""
    return integer(low, None, allowed=f"at least {low}")


def refused(spec: OptionSpec, value: object, rule: str) -> ValueError:
    """``name=value is not allowed: must be RULE`` (a string value quoted, but an integer
    option's out-of-range number shown as one, as the broker's own options), the broker
    coordinators' message for a refused option."""
    shown = repr(value) if isinstance(value, str) else format_value(value)
    if isinstance(value, str) and spec.kind.name == "int":
        try:
            shown = str(int(value.strip()))
        except ValueError:
            pass
    return ValueError(f"{spec.name}={shown} is not allowed: must be {rule}")


def _assignors(value: object) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)  # type: ignore[call-overload]
    names = tuple(a.strip() for a in items if a.strip())
    if not names or any(a not in CONSUMER_ASSIGNORS for a in names):
        raise ValueError(value)
    return names


ASSIGNORS = custom("list", _assignors, "a non-empty list of " + ", ".join(CONSUMER_ASSIGNORS))


@dataclass(frozen=True)
class GroupConfig:
    """The group coordinator's options, each declared once, with Kafka's defaults. The
    replication factor of ``__consumer_offsets`` is capped at the number of live brokers
    when the topic is created.

    Invariant: every field holds its declared type within its range, and
    ``group.max.session.timeout.ms >= group.min.session.timeout.ms``,
    ``group.consumer.heartbeat.interval.ms < group.consumer.session.timeout.ms``;
    construction (from values or their strings) raises ``ValueError`` naming the option
    otherwise. Frozen: shared between threads freely."""

    offsets_topic_num_partitions: int = option(
        "offsets.topic.num.partitions", 50, at_least(1),
        doc="Partitions of __consumer_offsets, where groups' offsets and state are stored.")
    offsets_topic_replication_factor: int = option(
        "offsets.topic.replication.factor", 3, at_least(1),
        doc="Replicas of each __consumer_offsets partition (at most the live brokers).")
    offsets_topic_segment_bytes: int = option(
        "offsets.topic.segment.bytes", 100 * 1024 * 1024, at_least(1024),
        doc="Segment size of __consumer_offsets.")
    offsets_commit_timeout_ms: int = option(
        "offsets.commit.timeout.ms", 5000, at_least(1),
        doc="How long an offset commit waits for the in-sync replicas.")
    offsets_load_buffer_size: int = option(
        "offsets.load.buffer.size", 5 * 1024 * 1024, at_least(1),
        doc="Bytes read at a time when a coordinator loads its partition of __consumer_offsets.")
    offset_metadata_max_bytes: int = option(
        "offset.metadata.max.bytes", 4096, at_least(0),
        doc="The longest metadata string an offset commit may carry.")
    group_min_session_timeout_ms: int = option(
        "group.min.session.timeout.ms", 6000, at_least(0),
        doc="The shortest session timeout a classic group member may ask for.")
    group_max_session_timeout_ms: int = option(
        "group.max.session.timeout.ms", 1_800_000, at_least(1),
        doc="The longest session timeout a classic group member may ask for.")
    group_initial_rebalance_delay_ms: int = option(
        "group.initial.rebalance.delay.ms", 3000, at_least(0),
        doc="How long an empty classic group waits for more members before its first rebalance.")
    group_max_size: int = option(
        "group.max.size", INT32_MAX, at_least(1), doc="The most members a group may have.")
    #: KIP-848 (consumer protocol) groups: the broker, not the member, sets these.
    group_consumer_session_timeout_ms: int = option(
        "group.consumer.session.timeout.ms", 45_000, at_least(1),
        doc="Session timeout of consumer-protocol (KIP-848) group members.")
    group_consumer_heartbeat_interval_ms: int = option(
        "group.consumer.heartbeat.interval.ms", 5000, at_least(1),
        doc="Heartbeat interval the coordinator gives consumer-protocol group members.")
    #: The first is used when a member names none.
    group_consumer_assignors: tuple[str, ...] = option(
        "group.consumer.assignors", CONSUMER_ASSIGNORS, ASSIGNORS,
        doc="The server-side assignors of consumer-protocol groups; the first when a member names none.")

    def __post_init__(self) -> None:
        parse_declared(self, refused)
        if self.group_max_session_timeout_ms < self.group_min_session_timeout_ms:
            raise ValueError(f"group.max.session.timeout.ms={self.group_max_session_timeout_ms} is "
                             "not allowed: must be at least group.min.session.timeout.ms="
                             f"{self.group_min_session_timeout_ms}")
        if self.group_consumer_heartbeat_interval_ms >= self.group_consumer_session_timeout_ms:
            raise ValueError("group.consumer.heartbeat.interval.ms="
                             f"{self.group_consumer_heartbeat_interval_ms} is not allowed: must be "
                             "less than group.consumer.session.timeout.ms="
                             f"{self.group_consumer_session_timeout_ms}")


#: Kafka property name -> attribute of :class:`GroupConfig` (from the declarations).
PROPERTIES = {name: spec.attr for name, spec in declared(GroupConfig).items()}
