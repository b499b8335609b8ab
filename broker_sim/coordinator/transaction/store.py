"""Where transactions live: the partitions of ``__transaction_state`` this broker leads.

A :class:`~broker_sim.coordinator.partitioned_store.PartitionedStore` (leadership, loading,
acks=all writes; see there) of :class:`~.metadata.TransactionMetadata`, one record per state
change (:mod:`.records`); a newly led partition's transactions are the latest record per
transactional id.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...common import SYSTEM_CLOCK, Clock
from ..partitioned_store import Appender, LoadedRecord, PartitionedStore
from ..placement import TRANSACTION_STATE_TOPIC
from . import records
from .config import TransactionConfig
from .metadata import TransactionMetadata, TxnState


class TransactionStore(PartitionedStore[TransactionMetadata]):
    kind = "transactional id"

    def __init__(self, config: TransactionConfig, replicas: Appender,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        super().__init__(TRANSACTION_STATE_TOPIC, config.state_log_num_partitions,
                         config.write_timeout_ms, config.state_log_load_buffer_size, replicas,
                         clock)
        self.config = config

    def _new(self, key: str) -> TransactionMetadata:
        return TransactionMetadata(key)

    def _key_of(self, entity: TransactionMetadata) -> str:
        return entity.transactional_id

    def _read_entities(self, recs: Iterator[LoadedRecord]) -> list[TransactionMetadata]:
        latest: dict[str, bytes | None] = {}
        for rec in recs:
            if rec.key is not None:
                latest[records.decode_key(rec.key)] = rec.value
        out = []
        for txn_id, stored in latest.items():
            if stored is None:
                continue
            v = records.decode_value(stored)
            out.append(TransactionMetadata(
                txn_id, v.producer_id, v.producer_epoch, v.transaction_timeout_ms,
                TxnState(v.transaction_status),
                {(p.topic, i) for p in v.transaction_partitions or () for i in p.partition_ids},
                v.transaction_start_timestamp_ms, v.transaction_last_update_timestamp_ms))
        return out

    @staticmethod
    def record(txn: TransactionMetadata) -> tuple[bytes, bytes]:
        return records.key(txn.transactional_id), records.value(txn.record())
