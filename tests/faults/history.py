"""The workload and the checker of the fault tests, Jepsen's shape in miniature.

:class:`Workload` is an idempotent acks=all librdkafka producer (what a careful user runs)
sending numbered values round-robin over a topic's partitions and recording every
acknowledgement (partition and offset) and every failure. :func:`check` reads each
partition back in full and reports what the log owes the history:

- **lost**: acknowledged values the log does not hold;
- **duplicated**: values the log holds more than once (idempotence forbids it, retries or not);
- **misplaced**: acknowledged values not at the partition and offset their ack named;
- **reordered**: a partition whose values are not in the order they were sent.

A value whose send failed is *indeterminate* (it may or may not have been written); it is
neither lost nor allowed twice. Nothing here knows which broker runs underneath.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, Message, Producer

from connector.client import Admin, Fetcher


@dataclass
class History:
    sent: int = 0
    acked: dict[bytes, tuple[int, int]] = field(default_factory=dict)  # value -> (partition, offset)
    failed: dict[bytes, str] = field(default_factory=dict)  # value -> error


class Workload:
    """Sends ``value-NNNNNNN`` to partition ``n % partitions`` from a thread until stopped."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate_per_s: int = 400) -> None:
        self.topic = topic
        self.partitions = partitions
        self.interval = 1.0 / rate_per_s
        self.history = History()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                   "acks": "all", "linger.ms": 5, "message.timeout.ms": 120_000,
                                   "retry.backoff.ms": 100})
        self._thread = threading.Thread(target=self._run, name="fault-workload", daemon=True)

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        value, partition, offset = msg.value(), msg.partition(), msg.offset()
        assert value is not None
        with self._lock:
            if err is None:
                assert partition is not None and offset is not None
                self.history.acked[value] = (partition, offset)
            else:
                self.history.failed[value] = str(err)

    def _run(self) -> None:
        n = 0
        next_at = time.monotonic()
        while not self._stop.is_set():
            value = b"value-%07d" % n
            self._producer.produce(self.topic, value, partition=n % self.partitions,
                                   on_delivery=self._delivered)
            n += 1
            self.history.sent = n
            self._producer.poll(0)
            next_at += self.interval
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def start(self) -> Workload:
        self._thread.start()
        return self

    def stop(self, flush_s: float = 120.0) -> History:
        """Stop sending, wait for every outstanding send's outcome; the history."""
        self._stop.set()
        self._thread.join()
        left = self._producer.flush(flush_s)
        assert left == 0, f"{left} sends still without an outcome after {flush_s} s"
        return self.history


@dataclass
class Verdict:
    lost: list[bytes]
    duplicated: list[bytes]
    misplaced: list[bytes]
    reordered: list[int]
    logged: int

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.misplaced or self.reordered)


def check(bootstrap: str, topic: str, partitions: int, history: History) -> Verdict:
    """Read every partition from its start to its end and hold the log to the history."""
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
    lost = sorted(v for v in history.acked if v not in where)
    duplicated = sorted(v for v, places in where.items() if len(places) > 1)
    misplaced = sorted(v for v, place in history.acked.items()
                       if v in where and place not in where[v])
    reordered = sorted(p for p, seq in order.items() if seq != sorted(seq))
    return Verdict(lost, duplicated, misplaced, reordered, sum(len(s) for s in order.values()))
