"""One transactional id's state at its coordinator.

States (Kafka's, with the byte each is stored as)::

    Empty(0) --AddPartitionsToTxn--> Ongoing(1) --EndTxn--> PrepareCommit(2) | PrepareAbort(3)
    PrepareCommit --every marker written--> CompleteCommit(4)
    PrepareAbort  --every marker written--> CompleteAbort(5)
    Complete* --AddPartitionsToTxn--> Ongoing;   Empty/Complete* --InitProducerId--> Empty
    Ongoing --InitProducerId (a new instance) or transaction.timeout.ms--> PrepareAbort
                                                   (with the epoch bumped: the old one is fenced)

Every move is written to ``__transaction_state`` before it takes effect, and only one move
is in flight at a time (``pending``): a request arriving meanwhile is answered
CONCURRENT_TRANSACTIONS and retried by the client.

Threading: every field is guarded by ``lock``.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass, field


class TxnState(enum.IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def label(self) -> str:
        """Kafka's name, as DescribeTransactions and ListTransactions report it."""
        return "".join(w.capitalize() for w in self.name.split("_"))


COMPLETE = frozenset({TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})
PREPARED = frozenset({TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT})


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int = -1
    producer_epoch: int = -1
    timeout_ms: int = 60_000
    state: TxnState = TxnState.EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    #: a state change is being written (or markers are out): other requests must wait.
    pending: bool = False
    #: the epoch before the last InitProducerId bumped it (a retry may still name it).
    previous_epoch: int = -1
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    def record(self) -> dict[str, object]:
        """The value written for this state (see :mod:`.records`)."""
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(self.partitions):
            by_topic.setdefault(t, []).append(p)
        return {"producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                "transaction_timeout_ms": self.timeout_ms,
                "transaction_status": int(self.state),
                "transaction_partitions": [{"topic": t, "partition_ids": ps}
                                           for t, ps in by_topic.items()],
                "transaction_last_update_timestamp_ms": self.last_update_ms,
                "transaction_start_timestamp_ms": self.start_ms}
