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
}


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

    def __post_init__(self) -> None:
        minimums = {"offsets.topic.num.partitions": 1, "offsets.topic.replication.factor": 1,
                    "offsets.topic.segment.bytes": 1024, "offsets.commit.timeout.ms": 1,
                    "offsets.load.buffer.size": 1, "offset.metadata.max.bytes": 0,
                    "group.min.session.timeout.ms": 0, "group.max.session.timeout.ms": 1,
                    "group.initial.rebalance.delay.ms": 0, "group.max.size": 1}
        for name, minimum in minimums.items():
            value = getattr(self, PROPERTIES[name])
            if value < minimum:
                raise ValueError(f"{name}={value} is not allowed: must be at least {minimum}")
        if self.group_max_session_timeout_ms < self.group_min_session_timeout_ms:
            raise ValueError(f"group.max.session.timeout.ms={self.group_max_session_timeout_ms} is "
                             "not allowed: must be at least group.min.session.timeout.ms="
                             f"{self.group_min_session_timeout_ms}")
