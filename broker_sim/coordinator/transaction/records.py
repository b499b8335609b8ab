"""The records of ``__transaction_state``, in Kafka's binary layout.

Key v0 ``(transactional_id)``; value v0 ``(producer_id int64, producer_epoch int16,
transaction_timeout_ms int32, transaction_status int8, transaction_partitions nullable
[topic, partition_ids [int32]], transaction_last_update_timestamp_ms int64,
transaction_start_timestamp_ms int64)``, each prefixed by its int16 version. The latest
record per transactional id is its state; a null value removes it.
"""

from __future__ import annotations

import struct
from typing import Any

from ...protocol.primitives import Array, Int8, Int16, Int32, Int64, String
from ...protocol.schema import Data, Field, Struct

TransactionLogKey = Struct("TransactionLogKey", [Field("transactional_id", String)])

PartitionsSchema = Struct("PartitionsSchema", [
    Field("topic", String), Field("partition_ids", Array(Int32))])

TransactionLogValue = Struct("TransactionLogValue", [
    Field("producer_id", Int64),
    Field("producer_epoch", Int16),
    Field("transaction_timeout_ms", Int32),
    Field("transaction_status", Int8),
    Field("transaction_partitions", Array(PartitionsSchema, nullable=True)),
    Field("transaction_last_update_timestamp_ms", Int64),
    Field("transaction_start_timestamp_ms", Int64),
])

_INT16 = struct.Struct(">h")


def key(transactional_id: str) -> bytes:
    out = bytearray(_INT16.pack(0))
    TransactionLogKey.at(0).write(out, {"transactional_id": transactional_id}, False)
    return bytes(out)


def value(v: dict[str, Any]) -> bytes:
    out = bytearray(_INT16.pack(0))
    TransactionLogValue.at(0).write(out, v, False)
    return bytes(out)


def decode_key(raw: bytes) -> str:
    (version,) = _INT16.unpack_from(raw)
    if version != 0:
        raise ValueError(f"unknown __transaction_state key version {version}")
    k, _ = TransactionLogKey.at(0).read(raw, 2, False)
    return str(k.transactional_id)


def decode_value(raw: bytes) -> Data:
    (version,) = _INT16.unpack_from(raw)
    if version not in (0, 1):
        raise ValueError(f"unknown __transaction_state value version {version}")
    v, _ = TransactionLogValue.at(version).read(raw, 2, version >= 1)
    return v
