"""The transaction APIs a producer sends: InitProducerId with a ``transactional.id``,
AddPartitionsToTxn and EndTxn.

:class:`TransactionApis` checks what Kafka's authorizer checks (Write on the transactional
id; Write on each topic added to a transaction), refuses partitions that do not exist
(UNKNOWN_TOPIC_OR_PARTITION, the others of the request OPERATION_NOT_ATTEMPTED), and hands
the rest to the broker's
:class:`~broker_sim.coordinator.transaction.coordinator.TransactionCoordinator`, answering
when it calls back. InitProducerId without a transactional id stays with the idempotent
path of :class:`~.kafka_apis.KafkaApis`. Clients before version 2 of AddPartitionsToTxn /
EndTxn do not know PRODUCER_FENCED and get INVALID_PRODUCER_EPOCH instead, as from Kafka.

Threading: request-handler threads, several at once; no state of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..coordinator.placement import OFFSETS_TOPIC, partition_for
from ..coordinator.transaction.coordinator import TransactionCoordinator
from ..coordinator.transaction.metadata import TxnState
from ..network.request_channel import Request
from ..protocol.api import ApiKey
from ..protocol.errors import (
    GroupAuthorizationFailed,
    InvalidProducerEpoch,
    OperationNotAttempted,
    ProducerFenced,
    TopicAuthorizationFailed,
    TransactionalIdAuthorizationFailed,
    UnknownTopicOrPartition,
)
from ..protocol.schema import Data
from ..security.acl import Operation as Op
from ..security.acl import ResourceType as RT

if TYPE_CHECKING:
    from .api_context import ApiContext


class TransactionApis:
    def __init__(self, apis: ApiContext, coordinator: TransactionCoordinator) -> None:
        self.apis = apis
        self.coordinator = coordinator
        self.authorized = apis.authorized
        self.respond = apis.respond
        self.idempotent_init = apis.handle_init_producer_id
        self.handlers: dict[int, Callable[[Request], None]] = {
            ApiKey.INIT_PRODUCER_ID: self.handle_init_producer_id,
            ApiKey.ADD_PARTITIONS_TO_TXN: self.handle_add_partitions_to_txn,
            ApiKey.END_TXN: self.handle_end_txn,
            ApiKey.ADD_OFFSETS_TO_TXN: self.handle_add_offsets_to_txn,
            ApiKey.DESCRIBE_TRANSACTIONS: self.handle_describe_transactions,
            ApiKey.LIST_TRANSACTIONS: self.handle_list_transactions,
        }

    @staticmethod
    def _fenced_code(request: Request) -> int:
        return ProducerFenced.code if request.header.api_version >= 2 else InvalidProducerEpoch.code

    def handle_init_producer_id(self, request: Request) -> None:
        body = request.body
        if body.transactional_id is None:
            self.idempotent_init(request)
            return

        def respond(code: int, producer_id: int, epoch: int) -> None:
            self.respond(request, Data(throttle_time_ms=0, error_code=code,
                                       producer_id=producer_id, producer_epoch=epoch))

        if not self.authorized(request, Op.WRITE, RT.TRANSACTIONAL_ID, body.transactional_id):
            respond(TransactionalIdAuthorizationFailed.code, -1, -1)
            return
        version = request.header.api_version
        pid, epoch = getattr(body, "producer_id", -1), getattr(body, "producer_epoch", -1)
        self.coordinator.init_producer_id(
            body.transactional_id, body.transaction_timeout_ms, respond,
            expected=(pid, epoch) if version >= 3 and pid >= 0 else None,
            fenced_code=ProducerFenced.code if version >= 4 else InvalidProducerEpoch.code)

    def handle_add_partitions_to_txn(self, request: Request) -> None:
        body = request.body
        txn_id = body.v3_and_below_transactional_id
        asked = [(t.name, p) for t in body.v3_and_below_topics for p in t.partitions]

        def respond(codes: dict[tuple[str, int], int]) -> None:
            by_topic: dict[str, list[Data]] = {}
            for t, p in asked:
                by_topic.setdefault(t, []).append(Data(partition_index=p,
                                                       partition_error_code=codes[(t, p)]))
            self.respond(request, Data(throttle_time_ms=0, results_by_topic_v3_and_below=[
                Data(name=t, results_by_partition=rs) for t, rs in by_topic.items()]))

        if not self.authorized(request, Op.WRITE, RT.TRANSACTIONAL_ID, txn_id):
            respond(dict.fromkeys(asked, TransactionalIdAuthorizationFailed.code))
            return
        refused = {tp: TopicAuthorizationFailed.code for tp in asked
                   if not self.authorized(request, Op.WRITE, RT.TOPIC, tp[0])}
        topics = self.apis.metadata.image.topics
        unknown = {tp: UnknownTopicOrPartition.code for tp in asked if tp not in refused
                   and (tp[0] not in topics or not 0 <= tp[1] < len(topics[tp[0]].partitions))}
        if refused or unknown:
            respond({**dict.fromkeys(asked, OperationNotAttempted.code), **refused, **unknown})
            return
        self.coordinator.add_partitions(
            txn_id, body.v3_and_below_producer_id, body.v3_and_below_producer_epoch, set(asked),
            lambda code: respond(dict.fromkeys(asked, code)), self._fenced_code(request))

    def handle_add_offsets_to_txn(self, request: Request) -> None:
        """The group's partition of ``__consumer_offsets`` joins the transaction, so its
        marker makes the group's transactional offsets count (or vanish)."""
        body = request.body

        def respond(code: int) -> None:
            self.respond(request, Data(throttle_time_ms=0, error_code=code))

        if not self.authorized(request, Op.WRITE, RT.TRANSACTIONAL_ID, body.transactional_id):
            respond(TransactionalIdAuthorizationFailed.code)
            return
        if not self.authorized(request, Op.READ, RT.GROUP, body.group_id):
            respond(GroupAuthorizationFailed.code)
            return
        offsets = self.apis.metadata.image.topics.get(OFFSETS_TOPIC)
        n = len(offsets.partitions) if offsets else self.apis.config.group.offsets_topic_num_partitions
        self.coordinator.add_partitions(
            body.transactional_id, body.producer_id, body.producer_epoch,
            {(OFFSETS_TOPIC, partition_for(body.group_id, n))}, respond, self._fenced_code(request))

    def handle_describe_transactions(self, request: Request) -> None:
        states = []
        for txn_id in request.body.transactional_ids:
            out = Data(error_code=0, transactional_id=txn_id, transaction_state="",
                       transaction_timeout_ms=0, transaction_start_time_ms=-1, producer_id=-1,
                       producer_epoch=-1, topics=[])
            if not self.authorized(request, Op.DESCRIBE, RT.TRANSACTIONAL_ID, txn_id):
                out.error_code = TransactionalIdAuthorizationFailed.code
            else:
                out.error_code, txn = self.coordinator.describe(txn_id)
                if txn is not None:
                    by_topic: dict[str, list[int]] = {}
                    for t, p in sorted(txn.partitions):
                        by_topic.setdefault(t, []).append(p)
                    out.transaction_state = txn.state.label
                    out.transaction_timeout_ms = txn.timeout_ms
                    out.transaction_start_time_ms = txn.start_ms
                    out.producer_id, out.producer_epoch = txn.producer_id, txn.producer_epoch
                    out.topics = [Data(topic=t, partitions=ps) for t, ps in by_topic.items()]
            states.append(out)
        self.respond(request, Data(throttle_time_ms=0, transaction_states=states))

    def handle_list_transactions(self, request: Request) -> None:
        body = request.body
        known = {s.label for s in TxnState}
        wanted = set(body.state_filters or [])
        code, found = self.coordinator.list(wanted & known, set(body.producer_id_filters or []),
                                            body.duration_filter)
        if wanted and not wanted & known:
            found = []  # only unknown states asked for: nothing matches
        self.respond(request, Data(
            throttle_time_ms=0, error_code=code,
            unknown_state_filters=sorted(wanted - known),
            transaction_states=[
                Data(transactional_id=t.transactional_id, producer_id=t.producer_id,
                     transaction_state=t.state.label) for t in found
                if self.authorized(request, Op.DESCRIBE, RT.TRANSACTIONAL_ID, t.transactional_id)]))

    def handle_end_txn(self, request: Request) -> None:
        body = request.body

        def respond(code: int) -> None:
            self.respond(request, Data(throttle_time_ms=0, error_code=code))

        if not self.authorized(request, Op.WRITE, RT.TRANSACTIONAL_ID, body.transactional_id):
            respond(TransactionalIdAuthorizationFailed.code)
            return
        self.coordinator.end_txn(body.transactional_id, body.producer_id, body.producer_epoch,
                                 body.committed, respond, self._fenced_code(request))
