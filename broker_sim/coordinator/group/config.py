"""The broker settings of the group coordinator, under Kafka's names."""

from __future__ import annotations

from dataclasses import dataclass

INT32_MAX = 2**31 - 1

#: Kafka property name -> attribute of :class:`GroupConfig`.
PROPERTIES = {
    "offsets.topic.num.partitions": "offsets_topic_num_partitions",
    "offsets.topic.replication.factor": "offsets_topic_replication_factor",
    "offsets.topic.segment.bytes": "offsets_topic_segment_bytes",
    "offsets.commit.timeout.ms": "offsets_commit_timeout_ms",
    "offsets.load.buffer.size": "offsets_load_buffer_size",
    "offset.metadata.max.bytes": "offset_metadata_max_bytes",
    "group.min.session.timeout.ms": "group_min_session_timeout_ms",
    "group.max.session.timeout.ms": "group_max_session_timeout_ms",
    "group.initial.rebalance.delay.ms": "group_initial_rebalance_delay_ms",
    "group.max.size": "group_max_size",
    "group.consumer.session.timeout.ms": "group_consumer_session_timeout_ms",
    "group.consumer.heartbeat.interval.ms": "group_consumer_heartbeat_interval_ms",
    "group.consumer.assignors": "group_consumer_assignors",
}

#: The server-side assignors of the consumer protocol (KIP-848), by their Kafka names.
CONSUMER_ASSIGNORS = ("uniform", "range")


@dataclass(frozen=True)
class GroupConfig:
    """Kafka's defaults throughout. The replication factor of ``__consumer_offsets`` is
    capped at the number of live brokers when the topic is created."""

    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024
    offsets_commit_timeout_ms: int = 5000
    offsets_load_buffer_size: int = 5 * 1024 * 1024
    offset_metadata_max_bytes: int = 4096
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = INT32_MAX
    #: KIP-848 (consumer protocol) groups: the broker, not the member, sets these.
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_heartbeat_interval_ms: int = 5000
    #: The first is used when a member names none.
    group_consumer_assignors: tuple[str, ...] = CONSUMER_ASSIGNORS

    def __post_init__(self) -> None:
        minimums = {"offsets.topic.num.partitions": 1, "offsets.topic.replication.factor": 1,
                    "offsets.topic.segment.bytes": 1024, "offsets.commit.timeout.ms": 1,
                    "offsets.load.buffer.size": 1, "offset.metadata.max.bytes": 0,
                    "group.min.session.timeout.ms": 0, "group.max.session.timeout.ms": 1,
                    "group.initial.rebalance.delay.ms": 0, "group.max.size": 1,
                    "group.consumer.session.timeout.ms": 1,
                    "group.consumer.heartbeat.interval.ms": 1}
        for name, minimum in minimums.items():
            value = getattr(self, PROPERTIES[name])
            if value < minimum:
                raise ValueError(f"{name}={value} is not allowed: must be at least {minimum}")
        if self.group_max_session_timeout_ms < self.group_min_session_timeout_ms:
            raise ValueError(f"group.max.session.timeout.ms={self.group_max_session_timeout_ms} is "
                             "not allowed: must be at least group.min.session.timeout.ms="
                             f"{self.group_min_session_timeout_ms}")
        unknown = [a for a in self.group_consumer_assignors if a not in CONSUMER_ASSIGNORS]
        if unknown or not self.group_consumer_assignors:
            raise ValueError(f"group.consumer.assignors={','.join(self.group_consumer_assignors)} "
                             f"is not allowed: must be a non-empty list of {', '.join(CONSUMER_ASSIGNORS)}")
        if self.group_consumer_heartbeat_interval_ms >= self.group_consumer_session_timeout_ms:
            raise ValueError("group.consumer.heartbeat.interval.ms="
                             f"{self.group_consumer_heartbeat_interval_ms} is not allowed: must be "
                             "less than group.consumer.session.timeout.ms="
                             f"{self.group_consumer_session_timeout_ms}")
