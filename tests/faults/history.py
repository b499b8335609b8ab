"""The workload and the checker of the fault tests, Jepsen's shape in miniature. It runs in
the client process (:mod:`tests.faults.workload`), which may live in a network namespace of
its own; nothing here knows which broker runs underneath.

Three clients write and read while the nemesis works, each tagging what it does with the
*phase* the test set last (``healthy``, or the fault under way and the calm after it):

- :class:`Idempotent`: an idempotent acks=all librdkafka producer sending numbered values
  round-robin over a topic's partitions, recording every acknowledgement (partition and
  offset) and every failure;
- :class:`Transactions`: a transactional producer writing one record to every partition of a
  second topic per transaction, committing three in four and aborting the rest; a
  transaction whose end it could not see is *unknown* (committed or aborted, never part);
- :class:`Reader`: a read_committed consumer of that second topic, from its start.

:func:`check` holds the log and the reader to the history, per phase:

- **lost**: an acknowledged value (or a record of a committed transaction) the log does not
  hold (the reader never read);
- **duplicated**: a value held (read) more than once; idempotence forbids it;
- **misplaced**: acknowledged values not at the partition and offset their ack named;
- **reordered**: a partition whose values are not in the order they were sent;
- **aborted_read**: a record of an aborted transaction the read_committed reader read;
- **partial**: a committed or unknown transaction of which the reader read some records
  but not all;
- **backwards**: a partition where the reader was handed an offset not above the one before;
- **stuck**: partitions the reader had not caught up on (read the final marker record the
  checker writes after every transaction is resolved) within the catch-up deadline.

A value whose send failed is *indeterminate* (it may or may not have been written); it is
neither lost nor allowed twice.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from connector.client import Admin, Fetcher

Phase = Callable[[], str]


@dataclass
class History:
    sent: int = 0
    phase_of: list[str] = field(default_factory=list)  # value number -> phase it was sent in
    acked: dict[bytes, tuple[int, int]] = field(default_factory=dict)  # value -> (partition, offset)
    failed: dict[bytes, str] = field(default_factory=dict)  # value -> error


class Idempotent:
    """Sends ``value-NNNNNNN`` to partition ``n % partitions`` from a thread until stopped.

    Threads: :meth:`_run` produces and polls; delivery callbacks run inside its ``poll`` (and
    in :meth:`stop`'s flush, after the thread ended), so the history has one writer at a time.
    """

    def __init__(self, bootstrap: str, topic: str, partitions: int, phase: Phase,
                 rate_per_s: int = 400) -> None:
        self.topic, self.partitions, self.phase = topic, partitions, phase
        self.interval = 1.0 / rate_per_s
        self.history = History()
        self._stop = threading.Event()
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                  "acks": "all", "linger.ms": 5, "message.timeout.ms": 120_000,
                                  "retry.backoff.ms": 100})
        self._thread = threading.Thread(target=self._run, name="idempotent", daemon=True)

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        value, partition, offset = msg.value(), msg.partition(), msg.offset()
        assert value is not None
        if err is None:
            assert partition is not None and offset is not None
            self.history.acked[value] = (partition, offset)
        else:
            self.history.failed[value] = str(err)

    def _run(self) -> None:
        n = 0
        next_at = time.monotonic()
        while not self._stop.is_set():
            self.history.phase_of.append(self.phase())
            self.producer.produce(self.topic, b"value-%07d" % n, partition=n % self.partitions,
                                  on_delivery=self._delivered)
            n += 1
            self.history.sent = n
            self.producer.poll(0)
            next_at += self.interval
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def start(self) -> Idempotent:
        self._thread.start()
        return self

    def stop(self, flush_s: float = 120.0) -> History:
        """Stop sending, wait for every outstanding send's outcome; the history."""
        self._stop.set()
        self._thread.join()
        left = self.producer.flush(flush_s)
        assert left == 0, f"{left} sends still without an outcome after {flush_s} s"
        return self.history


class Transactions:
    """A transactional producer: transaction ``t`` writes ``txn-TTTTTT-P`` to every partition
    ``P``, then commits (3 in 4, seeded) or aborts. Outcomes: ``committed`` / ``aborted`` when
    the producer saw the end; ``aborted`` also when the commit was never asked for (a
    transaction nobody commits can only be aborted); else ``unknown``, and the producer is
    replaced (its successor's init fences it, resolving what it left).

    One thread (:meth:`_run`) owns the producer; :meth:`stop` joins it and then resolves.
    """

    def __init__(self, bootstrap: str, topic: str, partitions: int, phase: Phase,
                 seed: int) -> None:
        self.bootstrap, self.topic, self.partitions, self.phase = bootstrap, topic, partitions, phase
        self.transactional_id = f"faults-{topic}-{seed}"
        self.rng = random.Random(seed)
        self.outcome: list[str] = []
        self.phase_of: list[str] = []
        self.errors: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="transactions", daemon=True)

    def _producer(self, deadline: float | None = None) -> Producer | None:
        producer = Producer({"bootstrap.servers": self.bootstrap,
                             "transactional.id": self.transactional_id,
                             "transaction.timeout.ms": 20_000, "message.timeout.ms": 20_000,
                             "linger.ms": 5, "retry.backoff.ms": 100})
        while deadline is None and not self._stop.is_set() or \
                deadline is not None and time.monotonic() < deadline:
            try:
                producer.init_transactions(10)
                return producer
            except KafkaException as e:
                self.errors[f"init: {e.args[0].name()}"] += 1
                time.sleep(0.2)
        return None

    def _run(self) -> None:
        producer = self._producer()
        while producer is not None and not self._stop.is_set():
            t = len(self.outcome)
            self.phase_of.append(self.phase())
            self.outcome.append("unknown")
            abort = self.rng.random() < 0.25
            commit_asked = False
            try:
                producer.begin_transaction()
                for p in range(self.partitions):
                    producer.produce(self.topic, b"txn-%06d-%d" % (t, p), partition=p)
                if abort:
                    producer.abort_transaction(15)
                    self.outcome[t] = "aborted"
                else:
                    commit_asked = True
                    producer.commit_transaction(15)
                    self.outcome[t] = "committed"
            except KafkaException as e:
                error = e.args[0]
                self.errors[error.name()] += 1
                if error.txn_requires_abort():
                    try:
                        producer.abort_transaction(15)
                        self.outcome[t] = "aborted"
                    except KafkaException as again:
                        self.errors[f"abort: {again.args[0].name()}"] += 1
                if self.outcome[t] == "unknown":
                    if not commit_asked:
                        self.outcome[t] = "aborted"
                    producer = self._producer()
            self._stop.wait(0.05)

    def start(self) -> Transactions:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop; a fresh producer's init resolves whatever transaction was left open."""
        self._stop.set()
        self._thread.join()
        assert self._producer(deadline=time.monotonic() + 60) is not None, \
            f"no transactional producer could init within 60 s: {dict(self.errors)}"


class Reader:
    """A read_committed consumer of every partition of ``topic`` from its start, recording
    (value, partition, offset) of each record; one thread polls."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.read: list[tuple[bytes, int, int]] = []
        self.errors: Counter[str] = Counter()
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                                  "enable.auto.commit": False, "isolation.level": "read_committed",
                                  "auto.offset.reset": "earliest"})
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reader", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for m in self.consumer.consume(500, 0.2):
                error = m.error()
                if error is not None:
                    self.errors[error.name()] += 1
                    continue
                value, partition, offset = m.value(), m.partition(), m.offset()
                assert value is not None and partition is not None and offset is not None
                self.read.append((value, partition, offset))

    def start(self) -> Reader:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.consumer.close()


def _phase_row() -> dict[str, int]:
    return dict.fromkeys(("acked", "read", "lost", "duplicated", "aborted_read", "partial"), 0)


def check(bootstrap: str, topic: str, partitions: int, history: History,
          phases: dict[str, dict[str, int]]) -> dict[str, Any]:
    """Read every partition of the idempotent topic from its start to its end and hold the
    log to the history; adds each phase's counts to ``phases``; the anomalies found."""
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        ends = admin.list_offsets({(topic, p): "latest" for p in range(partitions)})
    where: dict[bytes, list[tuple[int, int]]] = {}
    order: dict[int, list[int]] = {}
    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        for (_, p), end in sorted(ends.items()):
            for record in fetcher.iter_records(topic, p, 0, end.offset, timeout_ms=30_000):
                assert record.value is not None
                where.setdefault(record.value, []).append((p, record.offset))
                order.setdefault(p, []).append(int(record.value.split(b"-")[1]))

    def phase(value: bytes) -> dict[str, int]:
        return phases.setdefault(history.phase_of[int(value.split(b"-")[1])], _phase_row())

    lost = sorted(v for v in history.acked if v not in where)
    duplicated = sorted(v for v, places in where.items() if len(places) > 1)
    misplaced = sorted(v for v, place in history.acked.items()
                       if v in where and place not in where[v])
    for v in history.acked:
        phase(v)["acked"] += 1
        phase(v)["read"] += v in where
    for v in lost:
        phase(v)["lost"] += 1
    for v in duplicated:
        phase(v)["duplicated"] += 1
    return {"lost": lost, "duplicated": duplicated, "misplaced": misplaced,
            "reordered": sorted(p for p, seq in order.items() if seq != sorted(seq)),
            "logged": sum(len(s) for s in order.values())}


def check_transactions(txns: Transactions, reader: Reader,
                       phases: dict[str, dict[str, int]]) -> dict[str, Any]:
    """Hold what the read_committed reader read to the transactions' outcomes."""
    reads = Counter(value for value, _, _ in reader.read if value.startswith(b"txn-"))
    aborted_read, lost, partial, duplicated = [], [], [], []
    for t, outcome in enumerate(txns.outcome):
        row = phases.setdefault(txns.phase_of[t], _phase_row())
        values = [b"txn-%06d-%d" % (t, p) for p in range(txns.partitions)]
        seen = [v for v in values if reads[v]]
        row["read"] += len(seen)
        extra = [v for v in values if reads[v] > 1]
        row["duplicated"] += len(extra)
        duplicated += extra
        if outcome == "committed":
            row["acked"] += len(values)
            missing = [v for v in values if not reads[v]]
            row["lost"] += len(missing)
            lost += missing
        if outcome == "aborted" and seen:
            row["aborted_read"] += len(seen)
            aborted_read += seen
        if outcome != "aborted" and 0 < len(seen) < len(values):
            row["partial"] += 1
            partial.append(t)
    offsets: dict[int, list[int]] = {}
    for _, p, offset in reader.read:
        offsets.setdefault(p, []).append(offset)
    backwards = sorted(p for p, seq in offsets.items()
                       if any(b <= a for a, b in zip(seq, seq[1:], strict=False)))
    return {"lost": [v.decode() for v in lost], "duplicated": [v.decode() for v in duplicated],
            "aborted_read": [v.decode() for v in aborted_read], "partial": partial,
            "backwards": backwards,
            "outcomes": dict(Counter(txns.outcome))}
