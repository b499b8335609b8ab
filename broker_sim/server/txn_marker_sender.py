"""Sending transaction markers to the leaders of a transaction's partitions.

When a transaction is decided (its PrepareCommit/PrepareAbort is written), every partition
it wrote to needs a marker from that partition's leader. :class:`MarkerSender` groups the
partitions by their current leader and sends each leader one WriteTxnMarkers over the
inter-broker listener, on its own small thread pool so no request handler waits on
another broker. It retries — a moved leader, a broker down, a timeout — with a short
backoff until every partition has its marker, a partition's topic is gone, or the
coordinator no longer owns the transaction (the next coordinator resends them: markers
are idempotent for the log, which ignores a marker for a transaction already closed).

Threading: ``send`` from any thread; the work runs on the pool.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ..network.blocking_client import BlockingConnection
from ..protocol.api import ApiKey
from ..protocol.errors import UnknownTopicOrPartition

log = logging.getLogger(__name__)

MARKER_VERSION = 1
RETRY_BACKOFF_S = 0.1
#: a leader answers once the in-sync replicas have the marker (up to its 30 s timeout).
MARKER_WAIT_S = 35.0


class MarkerSender:
    def __init__(self, broker_id: int, leader_of: Callable[[str, int], int | None],
                 address: Callable[[int], tuple[str, int] | None], threads: int = 2) -> None:
        """``leader_of(topic, partition)``: its leader now, or None if the topic is gone
        (-1: no leader yet); ``address(broker)``: its inter-broker listener."""
        self.broker_id = broker_id
        self.leader_of = leader_of
        self.address = address
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="txn-markers")
        self._stopped = threading.Event()

    def send(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
             partitions: set[tuple[str, int]], still_owned: Callable[[], bool],
             done: Callable[[], None]) -> None:
        self._pool.submit(self._run, producer_id, producer_epoch, commit, coordinator_epoch,
                          set(partitions), still_owned, done)

    def _run(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
             remaining: set[tuple[str, int]], still_owned: Callable[[], bool],
             done: Callable[[], None]) -> None:
        while remaining:
            if self._stopped.is_set() or not still_owned():
                return
            by_leader: dict[int, list[tuple[str, int]]] = {}
            for tp in list(remaining):
                leader = self.leader_of(*tp)
                if leader is None:
                    remaining.discard(tp)  # the topic was deleted: nothing to end there
                elif leader >= 0:
                    by_leader.setdefault(leader, []).append(tp)
            for leader, tps in by_leader.items():
                remaining -= self._send_to(leader, producer_id, producer_epoch, commit,
                                           coordinator_epoch, tps)
            if remaining:
                time.sleep(RETRY_BACKOFF_S)
        done()

    def _send_to(self, leader: int, producer_id: int, producer_epoch: int, commit: bool,
                 coordinator_epoch: int, tps: list[tuple[str, int]]) -> set[tuple[str, int]]:
        """The partitions that got their marker (or whose topic is gone)."""
        address = self.address(leader)
        if address is None:
            return set()
        by_topic: dict[str, list[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        body = {"markers": [{"producer_id": producer_id, "producer_epoch": producer_epoch,
                             "transaction_result": commit, "coordinator_epoch": coordinator_epoch,
                             "topics": [{"name": t, "partition_indexes": ps}
                                        for t, ps in by_topic.items()]}]}
        conn = BlockingConnection(address[0], address[1], f"txn-markers-{self.broker_id}",
                                  timeout_s=MARKER_WAIT_S)
        try:
            response = conn.request(ApiKey.WRITE_TXN_MARKERS, MARKER_VERSION, body)
        except Exception as e:  # noqa: BLE001 - a network failure: retried
            log.info("markers for producer %d to broker %d failed (%s); retrying",
                     producer_id, leader, e)
            return set()
        finally:
            conn.close()
        ok = set()
        for t in response.markers[0].topics:
            for p in t.partitions:
                if p.error_code == 0 or (p.error_code == UnknownTopicOrPartition.code
                                         and self.leader_of(t.name, p.partition_index) is None):
                    ok.add((t.name, p.partition_index))
                else:
                    log.info("marker for producer %d on %s-%d refused (error %d); retrying",
                             producer_id, t.name, p.partition_index, p.error_code)
        return ok

    def retry_later(self, action: Callable[[], None]) -> None:
        """Run ``action`` on the pool after the retry backoff (a failed completion write)."""
        def later() -> None:
            if not self._stopped.wait(RETRY_BACKOFF_S * 5):
                action()
        self._pool.submit(later)

    def shutdown(self) -> None:
        self._stopped.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
