"""Exactly-once writes: one Kafka transaction per Spark task, completed by the driver.

With ``exactlyOnce=true`` the sink is a two-phase commit over Kafka's transactions:

1. **Each task** (executor) takes the transactional id ``pyq-sink-<queryName>-<partition>``
   (:func:`transactional_id`; the same for every attempt of that Spark partition, in every
   micro-batch), calls InitProducerId — which fences the previous holder of the id and
   aborts whatever it left open, e.g. a failed attempt of the same task — adds each
   partition to the transaction before its first batch (AddPartitionsToTxn), writes its
   rows with acks=all under the new producer id and epoch, and returns a
   :class:`TaskTransaction` naming the open transaction. Nothing it wrote is visible to
   read_committed readers yet.
2. **The driver's commit** for micro-batch ``B`` first records its decision — "batch ``B``
   commits the transactions of these Spark partitions" — as a committed offset of the
   group ``pyq-sink-<queryName>`` (offset ``B``, the partitions in the offset's metadata;
   :class:`Decision`), then sends EndTxn(commit) for every task's transaction. EndTxn needs
   only the transactional id, producer id and epoch, so the driver can end transactions
   its tasks opened. ``abort`` sends EndTxn(abort) instead; no decision is recorded.

So the rows of a micro-batch become visible to read_committed readers together, once the
coordinators have written the commit markers, or not at all.

**Driver crash and restart from the checkpoint.** Spark replays the last micro-batch
whose commit it had not logged. The stream writer reads the last decision when it is
created (:func:`read_decision`). A task of the replayed batch:

* if no decision names the batch, simply starts over: its InitProducerId aborts the
  transaction the crashed run left open, and it writes its rows again;
* if a decision names the batch and the task's partition (the driver crashed during or
  after its commit), it *resolves* the old transaction instead of writing
  (:func:`resolve_decided`): still open → the task commits it; being or been committed →
  nothing to do; aborted (it outlived ``transaction.timeout.ms``) → the task writes its rows
  again in a new transaction. The driver's commit then records a decision again, listing
  the resolved partitions too, so a second crash still finds them.

Limits, as for any replay-based exactly-once: a replayed batch must hand each Spark
partition the same rows (true for the pyq source and for deterministic transformations),
``queryName`` must be stable and unique per pipeline (it names the transactional ids and
the decision group), and ``kafka.transaction.timeout.ms`` (default 60 s, at most the
brokers' ``transaction.max.timeout.ms``) must exceed the longest time from a task's start
to the driver's commit of its micro-batch — the slowest micro-batch plus the trigger
interval's slack — or the coordinator aborts the task's transaction first and the batch
fails (it is rewritten on restart). A transaction left open by a crashed run holds back
read_committed readers of its partitions until the restart resolves it or the timeout
aborts it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from broker_sim.protocol.errors import KafkaError, PyqError
from connector.client.admin import Admin
from connector.client.config import AdminConfig
from connector.client.group_admin import OffsetAndMetadata
from connector.client.metadata import TopicPartition
from connector.client.sync_client import SyncClient
from connector.client.transaction_channel import TransactionChannel

log = logging.getLogger(__name__)

PREFIX = "pyq-sink-"
#: How long the driver's commit (or a task's resolution) may take, per transaction.
END_TIMEOUT_MS = 60_000
#: EndTxn requests the driver has in flight at once (one client per worker thread).
END_PARALLELISM = 8
_DECISION = re.compile(r"pyq-sink/1 partitions=([0-9,-]*)$")


def transactional_id(query_name: str, spark_partition: int) -> str:
    return f"{PREFIX}{query_name}-{spark_partition}"


def decision_group(query_name: str) -> str:
    return f"{PREFIX}{query_name}"


@dataclass(frozen=True)
class TaskTransaction:
    """The transaction one task wrote in (its commit message carries it to the driver)."""

    spark_partition: int
    transactional_id: str
    producer_id: int
    epoch: int
    #: a replay of a decided batch found this transaction committed already
    committed: bool = False


@dataclass(frozen=True)
class Decision:
    """The driver's durable "batch ``batch_id`` commits these Spark partitions"."""

    batch_id: int
    partitions: frozenset[int]

    def names(self, batch_id: int, spark_partition: int) -> bool:
        return batch_id == self.batch_id and spark_partition in self.partitions

    def encode(self) -> str:
        return "pyq-sink/1 partitions=" + _ranges(sorted(self.partitions))

    @classmethod
    def decode(cls, batch_id: int, metadata: str) -> Decision | None:
        match = _DECISION.match(metadata or "")
        if match is None:
            return None
        parts: set[int] = set()
        for piece in filter(None, match.group(1).split(",")):
            low, _, high = piece.partition("-")
            parts.update(range(int(low), int(high or low) + 1))
        return cls(batch_id, frozenset(parts))


def _ranges(values: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"`` (the offset metadata stays small: Kafka caps it at 4 KiB)."""
    out: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        out.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ",".join(out)


# ---- executors ---------------------------------------------------------------------------
class TaskTransactionWriter:
    """A task's side: open the transaction, add partitions to it as rows reach them.

    Threading: the task's thread only (it shares the task's :class:`SyncClient`).
    """

    def __init__(self, sync: SyncClient, query_name: str, spark_partition: int,
                 timeout_ms: int) -> None:
        self.sync = sync
        self.spark_partition = spark_partition
        self.timeout_ms = timeout_ms
        self.channel = TransactionChannel(sync, transactional_id(query_name, spark_partition),
                                          sync.config.retry_backoff_ms)
        self.producer_id, self.epoch = -1, -1

    def begin(self) -> tuple[int, int]:
        """InitProducerId: fences earlier attempts and aborts what they left open."""
        self.producer_id, self.epoch = self.channel.init_producer_id(
            self.timeout_ms, self.sync.deadline(END_TIMEOUT_MS))
        return self.producer_id, self.epoch

    def add(self, partitions: Iterable[tuple[str, int]]) -> None:
        self.channel.add_partitions(self.producer_id, self.epoch,
                                    [TopicPartition(t, p) for t, p in partitions],
                                    self.sync.deadline(END_TIMEOUT_MS))

    def opened(self) -> TaskTransaction:
        return TaskTransaction(self.spark_partition, self.channel.transactional_id,
                               self.producer_id, self.epoch)


def resolve_decided(client: dict[str, Any], query_name: str, spark_partition: int
                    ) -> TaskTransaction | None:
    """Complete the transaction a decided batch left for this task: the committed
    transaction, or None if it was aborted (the task must write its rows again)."""
    txn_id = transactional_id(query_name, spark_partition)
    with Admin(client) as admin:
        try:
            described = admin.describe_transactions([txn_id], END_TIMEOUT_MS)[txn_id]
        except KafkaError as e:  # e.g. TRANSACTIONAL_ID_NOT_FOUND: expired long ago
            log.warning("pyq sink: transaction %s of a decided batch is gone (%s): "
                        "writing its rows again", txn_id, e)
            return None
    done = TaskTransaction(spark_partition, txn_id, described.producer_id,
                           described.producer_epoch, committed=True)
    if described.state in ("PrepareCommit", "CompleteCommit"):
        return done
    if described.state == "Ongoing":
        sync = SyncClient(AdminConfig.coerce(client))
        try:
            TransactionChannel(sync, txn_id, sync.config.retry_backoff_ms).end_transaction(
                described.producer_id, described.producer_epoch, True,
                sync.deadline(END_TIMEOUT_MS))
        finally:
            sync.close()
        log.info("pyq sink: committed %s, left open by a run that decided to commit it",
                 txn_id)
        return done
    log.warning("pyq sink: transaction %s of a decided batch is %s (it outlived "
                "transaction.timeout.ms before the commit): writing its rows again",
                txn_id, described.state)
    return None


# ---- the driver ----------------------------------------------------------------------------
def read_decision(client: dict[str, Any], query_name: str) -> Decision | None:
    """The last decision the query's driver recorded (None before the first)."""
    with Admin(client) as admin:
        offsets = admin.fetch_offsets(decision_group(query_name), None, END_TIMEOUT_MS)
    latest = max(offsets.values(), key=lambda om: om.offset, default=None)
    return None if latest is None else Decision.decode(latest.offset, latest.metadata)


def record_decision(client: dict[str, Any], query_name: str, decision: Decision,
                    topic: str) -> None:
    """Store the decision durably (a committed offset of the decision group, acks=all)."""
    with Admin(client) as admin:
        admin.commit_offsets(decision_group(query_name), {
            TopicPartition(topic, 0): OffsetAndMetadata(decision.batch_id, decision.encode())},
            END_TIMEOUT_MS)


def end_transactions(client: dict[str, Any], transactions: Iterable[TaskTransaction],
                     commit: bool) -> None:
    """EndTxn for each transaction not yet ended; raises if one cannot be (commit).

    Up to :data:`END_PARALLELISM` at a time, each worker thread on a client of its own
    (each EndTxn waits for the coordinator's durable write: a micro-batch of many tasks
    should not pay for them one after another).
    """
    pending = [t for t in transactions if not t.committed]
    if not pending:
        return
    workers = min(END_PARALLELISM, len(pending))
    shares = [pending[i::workers] for i in range(workers)]
    if workers == 1:
        outcomes = [_end_share(client, shares[0], commit)]
    else:
        with ThreadPoolExecutor(workers, thread_name_prefix="pyq-sink-end") as pool:
            outcomes = list(pool.map(lambda share: _end_share(client, share, commit), shares))
    failed = [(txn, e) for outcome in outcomes for txn, e in outcome]
    if failed and commit:
        txn, e = failed[0]
        raise TransactionNotCommitted(txn, e) from e
    if failed:
        log.warning("pyq sink: %d transaction(s) could not be aborted (the coordinator aborts "
                    "them at transaction.timeout.ms): %s", len(failed),
                    "; ".join(f"{t.transactional_id}: {e}" for t, e in failed))


def _end_share(client: dict[str, Any], share: list[TaskTransaction], commit: bool
               ) -> list[tuple[TaskTransaction, KafkaError]]:
    """End ``share`` one by one on a client of its own; the failures."""
    sync = SyncClient(AdminConfig.coerce(client))
    failed = []
    try:
        for txn in share:
            channel = TransactionChannel(sync, txn.transactional_id, sync.config.retry_backoff_ms)
            try:
                channel.end_transaction(txn.producer_id, txn.epoch, commit,
                                        sync.deadline(END_TIMEOUT_MS))
            except KafkaError as e:
                failed.append((txn, e))
    finally:
        sync.close()
    return failed


class TransactionNotCommitted(PyqError, RuntimeError):
    """A task's transaction could not be committed (most likely aborted by the coordinator
    after ``transaction.timeout.ms``); not retriable: the query restarts from its checkpoint."""

    def __init__(self, txn: TaskTransaction, cause: BaseException) -> None:
        super().__init__(
            f"pyq sink: the transaction of Spark partition {txn.spark_partition} "
            f"({txn.transactional_id}, producer id {txn.producer_id}, epoch {txn.epoch}) could "
            f"not be committed: {cause}. Most likely it was aborted because it stayed open "
            "longer than kafka.transaction.timeout.ms; restarted from its checkpoint, the query "
            "writes that partition's rows again")
