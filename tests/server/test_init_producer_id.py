"""InitProducerId v0-4 for idempotent producers, on the wire against a broker process.

v0-2 (and v3+ with producer id and epoch -1) hand out a new producer id at epoch 0. v3+
with the producer's id and epoch (KIP-360) answers the same id at the next epoch, or a new
id at epoch 0 when the epoch is at its int16 maximum; the log then takes the new epoch
from sequence 0 and fences the old one.
"""

from __future__ import annotations

import pytest

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import InvalidProducerEpoch, InvalidRequest, ProducerFenced
from broker_sim.protocol.records import RecordBatchBuilder
from tests.wire import WireClient, create_topic, produce_body


def init_pid(c: WireClient, version: int, producer_id: int = -1, epoch: int = -1) -> tuple[int, int, int]:
    r = c.request(ApiKey.INIT_PRODUCER_ID, version, {
        "transactional_id": None, "transaction_timeout_ms": 60_000,
        "producer_id": producer_id, "producer_epoch": epoch})
    return r.error_code, r.producer_id, r.producer_epoch


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_every_version_hands_out_new_ids_at_epoch_0(shared_broker, version: int) -> None:
    with WireClient(shared_broker.port) as c:
        answers = [init_pid(c, version) for _ in range(3)]
    assert [(code, epoch) for code, _, epoch in answers] == [(0, 0)] * 3
    ids = [pid for _, pid, _ in answers]
    assert len(set(ids)) == 3 and all(pid >= 0 for pid in ids)


@pytest.mark.parametrize("version", [3, 4])
def test_v3_and_v4_bump_the_epoch_of_the_id_sent(shared_broker, version: int) -> None:
    with WireClient(shared_broker.port) as c:
        code, pid, epoch = init_pid(c, version)
        assert (code, epoch) == (0, 0)
        assert init_pid(c, version, pid, 0) == (0, pid, 1)
        assert init_pid(c, version, pid, 1) == (0, pid, 2)
        assert init_pid(c, version, pid, 41) == (0, pid, 42)  # whatever epoch the producer has


@pytest.mark.parametrize("version", [3, 4])
def test_past_the_last_epoch_a_new_id_starts_at_0(shared_broker, version: int) -> None:
    with WireClient(shared_broker.port) as c:
        _, pid, _ = init_pid(c, version)
        assert init_pid(c, version, pid, 32766) == (0, pid, 32767)
        code, new_pid, epoch = init_pid(c, version, pid, 32767)
    assert (code, epoch) == (0, 0) and new_pid not in (pid, -1)


@pytest.mark.parametrize(("producer_id", "epoch"), [(5, -1), (-1, 3), (-7, 0)])
def test_an_id_without_an_epoch_or_the_other_way_round_is_invalid(shared_broker, producer_id: int,
                                                                  epoch: int) -> None:
    with WireClient(shared_broker.port) as c:
        assert init_pid(c, 4, producer_id, epoch) == (InvalidRequest.code, -1, -1)


def test_old_versions_ignore_what_they_cannot_carry(shared_broker) -> None:
    # v2 has no producer id or epoch on the wire: the values given are not sent.
    with WireClient(shared_broker.port) as c:
        code, pid, epoch = init_pid(c, 2, producer_id=123, epoch=9)
    assert (code, epoch) == (0, 0) and pid != 123


def _batch(pid: int, epoch: int, seq: int, *values: bytes) -> bytes:
    builder = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    for i, v in enumerate(values):
        builder.append(1_000 + i, None, v)
    return builder.build()


def test_the_log_takes_the_bumped_epoch_from_sequence_0_and_fences_the_old_one(shared_broker) -> None:
    create_topic(shared_broker.port, "pid-bump", 1)
    with WireClient(shared_broker.port) as c:
        _, pid, epoch = init_pid(c, 4)

        def produce(records: bytes) -> tuple[int, int]:
            p = c.request(ApiKey.PRODUCE, 8, produce_body("pid-bump", 0, records)) \
                .responses[0].partition_responses[0]
            return p.error_code, p.base_offset

        assert produce(_batch(pid, epoch, 0, b"a", b"b", b"c")) == (0, 0)
        assert init_pid(c, 4, pid, epoch) == (0, pid, epoch + 1)
        assert produce(_batch(pid, epoch + 1, 0, b"d")) == (0, 3)  # sequences start again
        code, _ = produce(_batch(pid, epoch, 3, b"zombie"))
        assert code in (ProducerFenced.code, InvalidProducerEpoch.code)
