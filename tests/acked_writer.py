"""An acks=all writer that runs through a failure, and the read-back that proves nothing it
was told was written got lost: shared by the failover tests and benchmarks.

:class:`AckedWriter` sends ``v0``, ``v1``, ... one at a time (each waited for) to the
partitions of a topic in turn with kafka-python (``acks=all``, ``retries``), on its own
thread, until :meth:`~AckedWriter.stop`; it keeps the values the cluster acknowledged and
the errors of those it did not (an unacknowledged record may be lost). After a failure,
:meth:`~AckedWriter.lost` reads the topic back and returns the acknowledged values that are
not there: a cluster that keeps its acks=all promise returns none.
"""

from __future__ import annotations

import threading

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def read_back(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    """Every value in ``topic``'s partitions ``0..partitions-1``, from the start (the read
    ends after 5 s without a record)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=5000)
    parts = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(parts)
    consumer.seek_to_beginning(*parts)
    values = [m.value for m in consumer]
    consumer.close()
    return values


class AckedWriter:
    """acks=all sends to ``topic`` on a thread of its own (see the module doc).

    Threading: only the writer's thread appends to :attr:`acked` and :attr:`failed`; other
    threads may read them (``len(acked)`` to wait for progress) while it runs. :meth:`stop`
    sets the flag the loop checks between sends and joins the thread (a send in flight
    finishes or fails first, up to its 30 s wait).
    """

    def __init__(self, bootstrap: str, topic: str, partitions: int = 3) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.acked: list[bytes] = []
        self.failed: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"acked-writer-{topic}",
                                        daemon=True)

    def start(self) -> AckedWriter:
        self._thread.start()
        return self

    def stop(self, timeout: float = 60) -> None:
        self._stop.set()
        self._thread.join(timeout=timeout)

    def _run(self) -> None:
        producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", retries=20,
                                 max_block_ms=30_000, request_timeout_ms=10_000)
        i = 0
        while not self._stop.is_set():
            value = f"v{i}".encode()
            try:
                producer.send(self.topic, value, partition=i % self.partitions).get(timeout=30)
                self.acked.append(value)
            except Exception as e:  # an unacknowledged record may be lost
                self.failed.append(e)
            i += 1
        producer.close()

    def lost(self) -> tuple[list[bytes], int]:
        """(the acknowledged values not in the topic, how many values it holds); call after
        :meth:`stop`."""
        read = set(read_back(self.bootstrap, self.topic, self.partitions))
        return [v for v in self.acked if v not in read], len(read)
