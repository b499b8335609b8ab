"""The broker settings of the transaction coordinator, under Kafka's names."""

from __future__ import annotations

from dataclasses import dataclass

#: Kafka property name -> attribute of :class:`TransactionConfig`.
PROPERTIES = {
    "transaction.state.log.num.partitions": "state_log_num_partitions",
    "transaction.state.log.replication.factor": "state_log_replication_factor",
    "transaction.state.log.min.isr": "state_log_min_isr",
    "transaction.state.log.segment.bytes": "state_log_segment_bytes",
    "transaction.state.log.load.buffer.size": "state_log_load_buffer_size",
    "transaction.max.timeout.ms": "max_timeout_ms",
}


@dataclass(frozen=True)
class TransactionConfig:
    """Kafka's defaults. The replication factor of ``__transaction_state`` is capped at the
    live brokers when the topic is created, and its min.insync.replicas at that."""

    state_log_num_partitions: int = 50
    state_log_replication_factor: int = 3
    state_log_min_isr: int = 2
    state_log_segment_bytes: int = 100 * 1024 * 1024
    state_log_load_buffer_size: int = 5 * 1024 * 1024
    max_timeout_ms: int = 900_000
    #: how long a state change may wait for the in-sync replicas.
    write_timeout_ms: int = 5000

    def __post_init__(self) -> None:
        for name, attr in PROPERTIES.items():
            value = getattr(self, attr)
            if value < 1:
                raise ValueError(f"{name}={value} is not allowed: must be at least 1")
