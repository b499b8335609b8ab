"""The broker settings of the transaction coordinator, under Kafka's names."""

from __future__ import annotations

from dataclasses import dataclass

from ...common.options import declared, option, parse_declared
from ..group.config import at_least, refused


@dataclass(frozen=True)
class TransactionConfig:
    """The transaction coordinator's options, each declared once, with Kafka's defaults.
    The replication factor of ``__transaction_state`` is capped at the live brokers when
    the topic is created, and its min.insync.replicas at that.

    Invariant: every option holds an integer of at least 1; construction (from values or
    their strings) raises ``ValueError`` naming the option otherwise. Frozen: shared
    between threads freely."""

    state_log_num_partitions: int = option(
        "transaction.state.log.num.partitions", 50, at_least(1),
        doc="Partitions of __transaction_state, where transactions' state is stored.")
    state_log_replication_factor: int = option(
        "transaction.state.log.replication.factor", 3, at_least(1),
        doc="Replicas of each __transaction_state partition (at most the live brokers).")
    state_log_min_isr: int = option(
        "transaction.state.log.min.isr", 2, at_least(1),
        doc="min.insync.replicas of __transaction_state (at most its replication factor).")
    state_log_segment_bytes: int = option(
        "transaction.state.log.segment.bytes", 100 * 1024 * 1024, at_least(1),
        doc="Segment size of __transaction_state.")
    state_log_load_buffer_size: int = option(
        "transaction.state.log.load.buffer.size", 5 * 1024 * 1024, at_least(1),
        doc="Bytes read at a time when a coordinator loads its partition of __transaction_state.")
    max_timeout_ms: int = option(
        "transaction.max.timeout.ms", 900_000, at_least(1),
        doc="The longest transaction timeout a producer may ask for.")
    #: how long a state change may wait for the in-sync replicas (not an option).
    write_timeout_ms: int = 5000

    def __post_init__(self) -> None:
        parse_declared(self, refused)


#: Kafka property name -> attribute of :class:`TransactionConfig` (from the declarations).
PROPERTIES = {name: spec.attr for name, spec in declared(TransactionConfig).items()}
