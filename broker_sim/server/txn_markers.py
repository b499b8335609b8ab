"""WriteTxnMarkers: a partition leader ends a transaction in its partitions.

The transaction coordinator (any broker) sends, for each transaction it completes, the
producer id and epoch, COMMIT or ABORT, and the partitions the transaction wrote to; the
leader of each appends one marker (:func:`~broker_sim.protocol.records.control.marker_batch`)
with acks=all — the marker is what closes the transaction in the log, moving the last
stable offset and, for an abort, adding the transaction to the aborted index. A marker
whose epoch is older than the producer's known epoch is refused (PRODUCER_FENCED): a
zombie coordinator cannot end a newer transaction. Requires ClusterAction on the cluster,
as in Kafka: only brokers send it.

Threading: request-handler threads; the answer is sent from whichever thread completes the
last partition's append.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..coordinator.placement import OFFSETS_TOPIC
from ..network.request_channel import Request
from ..protocol.api import ApiKey
from ..protocol.errors import ClusterAuthorizationFailed, KafkaError
from ..protocol.records.control import marker_batch
from ..protocol.schema import Data
from ..security.acl import Operation as Op
from ..security.acl import ResourceType as RT

if TYPE_CHECKING:
    from ..coordinator.group import GroupCoordinator
    from .api_context import ApiContext
    from .delayed_produce import ProduceStatus


#: how long a marker may wait for the in-sync replicas (Kafka's request.timeout.ms default).
MARKER_TIMEOUT_MS = 30_000


def _code(e: KafkaError | None) -> int:
    return 0 if e is None else e.code


class TxnMarkerApis:
    def __init__(self, apis: ApiContext, groups: GroupCoordinator) -> None:
        self.apis = apis
        self.groups = groups  # offsets committed in a transaction take effect at its marker
        self.handlers: dict[int, Callable[[Request], None]] = {
            ApiKey.WRITE_TXN_MARKERS: self.handle_write_txn_markers}

    def handle_write_txn_markers(self, request: Request) -> None:
        markers = list(request.body.markers)
        if not self.apis.authorized(request, Op.CLUSTER_ACTION, RT.CLUSTER):
            code = ClusterAuthorizationFailed.code
            self.apis.respond(request, Data(markers=[Data(
                producer_id=m.producer_id, topics=[Data(name=t.name, partitions=[
                    Data(partition_index=p, error_code=code) for p in t.partition_indexes])
                    for t in m.topics]) for m in markers]))
            return
        results: list[dict[tuple[str, int], int]] = [{} for _ in markers]
        lock = threading.Lock()
        waiting = [len(markers)]

        def answer() -> None:
            self.apis.respond(request, Data(markers=[Data(
                producer_id=m.producer_id, topics=[Data(name=t.name, partitions=[
                    Data(partition_index=p, error_code=results[i].get((t.name, p), 0))
                    for p in t.partition_indexes]) for t in m.topics])
                for i, m in enumerate(markers)]))

        def marker_done(i: int) -> Callable[[list[ProduceStatus]], None]:
            def done(statuses: list[ProduceStatus]) -> None:
                for s in statuses:  # offsets committed inside the transaction take effect
                    if s.topic == OFFSETS_TOPIC and s.error is None:
                        self.groups.on_transaction_completed(
                            markers[i].producer_id, markers[i].transaction_result, s.partition)
                with lock:
                    for s in statuses:
                        results[i][(s.topic, s.partition)] = _code(s.error)
                    waiting[0] -= 1
                    last = waiting[0] == 0
                if last:
                    answer()
            return done

        if not markers:
            answer()
            return
        now = self.apis.replica_manager.clock.wall_ms()
        for i, m in enumerate(markers):
            batch = marker_batch(m.producer_id, m.producer_epoch, m.transaction_result,
                                 m.coordinator_epoch, now)
            entries: list[Any] = [(t.name, p, batch) for t in m.topics for p in t.partition_indexes]
            self.apis.replica_manager.append(-1, MARKER_TIMEOUT_MS, entries, marker_done(i),
                                             markers=True)
