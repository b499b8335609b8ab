"""What a produced partition's records must be, on the wire against a broker process: as
Kafka's ProduceRequest.validateRecords (v3+), exactly one whole magic-2 batch, else
INVALID_RECORD for that partition with nothing appended; bytes after the batch too few for
another whole one are left off and the batch appended; an unknown partition is
UNKNOWN_TOPIC_OR_PARTITION whatever its records."""

from __future__ import annotations

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import CorruptMessage, InvalidRecord, UnknownTopicOrPartition
from broker_sim.protocol.records import RecordBatchBuilder, decode_batch, iter_batches
from tests.wire import WireClient, create_topic, fetch_body, produce_body


def one(value: bytes) -> bytes:
    b = RecordBatchBuilder()
    b.append(1_700_000_000_000, b"k", value)
    return b.build()


def produce(c: WireClient, topic: str, records: bytes, partition: int = 0) -> int:
    r = c.request(ApiKey.PRODUCE, 8, produce_body(topic, partition, records))
    return int(r.responses[0].partition_responses[0].error_code)


def values(c: WireClient, topic: str) -> list[bytes | None]:
    blob = bytes(c.request(ApiKey.FETCH, 11, fetch_body(topic, 0, 0)).responses[0].partitions[0].records or b"")
    return [r.value for pos, _ in iter_batches(blob) for r in decode_batch(blob, pos)[1]]


def test_a_partition_takes_exactly_one_whole_batch(shared_broker) -> None:
    create_topic(shared_broker.port, "one-batch", 1)
    with WireClient(shared_broker.port) as c:
        assert produce(c, "one-batch", one(b"a") + one(b"b")) == InvalidRecord.code  # two
        assert produce(c, "one-batch", b"") == InvalidRecord.code  # none
        assert produce(c, "one-batch", one(b"c")[:-5]) == InvalidRecord.code  # none whole
        old_magic = bytearray(one(b"d"))
        old_magic[16] = 1
        assert produce(c, "one-batch", bytes(old_magic)) == InvalidRecord.code
        tiny = bytes(8) + (5).to_bytes(4, "big") + bytes(5)  # a length no batch has
        assert produce(c, "one-batch", tiny) == CorruptMessage.code
        assert values(c, "one-batch") == []  # nothing of them appended
        assert produce(c, "one-batch", one(b"e") + one(b"f")[:20]) == 0  # the tail left off
        assert produce(c, "one-batch", one(b"g")) == 0
        assert values(c, "one-batch") == [b"e", b"g"]
        assert produce(c, "one-batch", b"", partition=3) == UnknownTopicOrPartition.code
        assert produce(c, "no-such-topic", b"") == UnknownTopicOrPartition.code
