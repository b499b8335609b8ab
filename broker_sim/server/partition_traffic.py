"""What clients wrote to and read from one partition, counted on the request paths."""

from __future__ import annotations

import threading


class PartitionTraffic:
    """Bytes and records produced to a partition this broker leads, and bytes fetched
    from it by consumers: the counters behind ``pyq_topic_partition_*_total``.

    Produce counts the record batches a producer's append wrote (not transaction markers
    nor replication); fetch counts the record bytes of each consumer response as it is
    answered (not followers' fetches). Records out are not counted: a response carries
    whole batches, and counting their records would mean parsing them (the rate at which a
    group consumes is ``kafka_consumergroup_current_offset``'s).

    Threading: ``record_*`` from any request handler, each under a lock of its own held for
    one addition (``+=`` on an attribute is not atomic across threads); the collector reads
    the ints without it (a scrape may miss the addition in flight, never tear a number).
    """

    __slots__ = ("_lock", "bytes_in", "records_in", "bytes_out")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.bytes_in = 0
        self.records_in = 0
        self.bytes_out = 0

    def record_in(self, nbytes: int, records: int) -> None:
        with self._lock:
            self.bytes_in += nbytes
            self.records_in += records

    def record_out(self, nbytes: int) -> None:
        with self._lock:
            self.bytes_out += nbytes
