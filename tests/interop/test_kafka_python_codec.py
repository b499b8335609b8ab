"""Interoperability with a real client: kafka-python 3's own protocol classes.

Three layers of evidence that real clients agree with our codec:

* the client's I/O-free ``KafkaProtocol`` (the exact path its producer and consumer use)
  frames requests that our ``decode_request`` reads with the expected values, and reads
  the responses that our ``encode_response`` writes;
* for every (API, version, request/response) we implement, kafka-python decodes our
  frames (headers included) to the same field values and re-encodes them to the same
  bytes;
* kafka-python decodes each hand-written golden byte string to the golden value.
"""

from __future__ import annotations

import uuid
import warnings
from typing import Any

import pytest

from broker_sim.protocol.api import (
    APIS,
    ApiKey,
    decode_request,
    encode_request,
    encode_response,
    supported_versions,
)
from broker_sim.protocol.schema import Message
from tests.protocol.protocol_samples import all_versions, message, plain, sample
from tests.protocol.test_golden_bytes import CASES as GOLDEN_CASES

with warnings.catch_warnings():
    # kafka-python 3 loads its JSON schemas with deprecated importlib.resources calls.
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.protocol.admin as kp_admin
    import kafka.protocol.consumer as kp_consumer
    import kafka.protocol.metadata as kp_metadata
    import kafka.protocol.producer as kp_producer
    import kafka.protocol.sasl as kp_sasl
    from kafka.protocol.api_message import ApiMessage
    from kafka.protocol.parser import KafkaProtocol
    from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

def _kp_classes() -> dict[tuple[int, str], type[ApiMessage]]:
    found: dict[tuple[int, str], type[ApiMessage]] = {}
    for module in (kp_admin, kp_consumer, kp_metadata, kp_producer, kp_sasl):
        for name in module.__all__:
            cls = getattr(module, name)
            message: Any = cls  # kafka-python ships no stubs: its class attributes are unknown
            if isinstance(cls, type) and issubclass(cls, ApiMessage) and message.API_KEY in APIS:
                found[(message.API_KEY, message.type)] = cls
    return found


KP = _kp_classes()
#: kafka-python speaks only the classic group protocol; librdkafka judges the consumer
#: protocol's APIs (tests/groups runs it with group.protocol=consumer). It has no KIP-853
#: voter changes either: Apache Kafka judges those (tests/cli/test_cluster_quorum.py sends
#: both to a Kafka node, which reads them and answers with its reasons).
KAFKA_PYTHON_LACKS = frozenset({ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE,
                                ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER})
CASES = [pytest.param(key, v, kind, id=f"{name}-v{v}-{kind}")
         for name, key, v in all_versions() if key not in KAFKA_PYTHON_LACKS
         for kind in ("request", "response")]


def test_kafka_python_knows_every_api_we_implement() -> None:
    assert set(KP) == {(key, kind) for key in APIS if key not in KAFKA_PYTHON_LACKS
                       for kind in ("request", "response")}


# kafka-python renames Metadata's authorized-operations fields and decodes them (and
# DescribeGroups') as a set of bit positions (None for INT32_MIN, "not requested"); our
# names are Kafka's own. (Its DescribeTopicPartitions keeps Kafka's name and the int.)
KP_RENAMED = {"topic_authorized_operations": "authorized_operations",
              "cluster_authorized_operations": "authorized_operations",
              "authorized_operations": "authorized_operations"}


def _as_bit_set(value: int) -> set[int] | None:
    bits = {i for i in range(32) if (value & 0xFFFFFFFF) >> i & 1}
    return None if bits == {31} else bits


def _matches(ours: Any, theirs: Any, where: str = "") -> None:
    """Every field we have equals kafka-python's (which may carry extra tagged fields)."""
    if isinstance(ours, dict):
        for name, value in ours.items():
            kp_name = KP_RENAMED.get(name)
            if kp_name is not None and not isinstance(theirs.get(name), int):  # renamed, as bits
                assert _as_bit_set(value) == theirs[kp_name], f"{where}{name}"
                continue
            assert name in theirs, f"kafka-python has no field {where}{name}"
            _matches(value, theirs[name], f"{where}{name}.")
    elif isinstance(ours, list):
        assert isinstance(theirs, list) and len(theirs) == len(ours), where
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _matches(a, b, f"{where}[{i}].")
    elif isinstance(ours, uuid.UUID) and ours.int == 0:
        assert theirs in (None, ours), where  # kafka-python reads the zero uuid as None
    else:
        assert ours == theirs, f"{where}: ours {ours!r}, kafka-python {theirs!r}"


def _sample_for_kp(msg: Message, version: int, nulls: bool) -> dict[str, Any]:
    value = sample(msg, version, nulls=nulls)
    if msg.api_key == ApiKey.API_VERSIONS and "error_code" in value:
        # kafka-python (like the Java client, KIP-511) reads an ApiVersions response
        # with a non-zero error code as v0, the version an erroring broker answers in.
        value["error_code"] = 0
    return value


@pytest.mark.parametrize(("api_key", "version", "kind"), CASES)
def test_flexible_versions_agree(api_key: int, version: int, kind: str) -> None:
    assert message(api_key, kind).is_flexible(version) == KP[(api_key, kind)].flexible_version_q(version)


@pytest.mark.parametrize("nulls", [False, True], ids=["values", "nulls"])
@pytest.mark.parametrize(("api_key", "version", "kind"), CASES)
def test_kafka_python_reads_and_rewrites_our_frames(api_key: int, version: int, kind: str,
                                                    nulls: bool) -> None:
    """Our frame (header included) -> kafka-python object -> the very same bytes."""
    msg = message(api_key, kind)
    value = _sample_for_kp(msg, version, nulls)
    if kind == "request":
        payload = encode_request(api_key, version, 31337, "client-\u00e9", value)[4:]
    else:
        payload = encode_response(api_key, version, 31337, value)[4:]
    theirs = KP[(api_key, kind)].decode(payload, version=version, header=True)
    assert theirs.header.correlation_id == 31337
    if kind == "request":
        assert theirs.header.request_api_key == api_key
        assert theirs.header.request_api_version == version
        assert theirs.header.client_id == "client-\u00e9"
    _matches(value, theirs.to_dict(json=False))
    assert bytes(theirs.encode(header=True)) == payload


@pytest.mark.parametrize(("msg", "version", "value", "golden"),
                         [pytest.param(*c[1:], id=c[0]) for c in GOLDEN_CASES
                          if c[1].api_key not in KAFKA_PYTHON_LACKS])
def test_kafka_python_reads_golden_bytes(msg: Message, version: int, value: dict,
                                         golden: bytes) -> None:
    kind = "request" if msg.name.endswith("Request") else "response"
    decoded = KP[(msg.api_key, kind)].decode(golden, version=version)
    _matches(plain(value, msg, version), decoded.to_dict(json=False))


# ---------------------------------------------------------------- the client's own path


def _client() -> KafkaProtocol:
    return KafkaProtocol(client_id="kp-client")


def _sent_request(client: KafkaProtocol, request: ApiMessage) -> tuple[int, Any, Any]:
    correlation_id = client.send_request(request)
    frame = client.send_bytes()
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    header, body = decode_request(frame[4:])
    assert header.correlation_id == correlation_id
    assert header.client_id == "kp-client"
    assert (header.api_key, header.api_version) == (request.API_KEY, request.API_VERSION)
    return correlation_id, header, body


def _received(client: KafkaProtocol, frame: bytes | bytearray) -> Any:
    responses = client.receive_bytes(frame)
    assert len(responses) == 1
    return responses[0]


def _record_batch(*values: bytes) -> bytes:
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 16)
    for i, v in enumerate(values):
        builder.append(timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=v, headers=[])
    builder.close()
    return bytes(builder.buffer())


def test_api_versions_v4_with_the_client() -> None:
    client = _client()
    request = kp_metadata.ApiVersionsRequest(client_software_name="kafka-python",
                                             client_software_version="3.0.12", version=4)
    correlation_id, _, body = _sent_request(client, request)
    assert body.client_software_name == "kafka-python"
    assert body.client_software_version == "3.0.12"

    frame = encode_response(ApiKey.API_VERSIONS, 4, correlation_id, {
        "error_code": 0, "api_keys": supported_versions(), "throttle_time_ms": 3})
    got_id, response = _received(client, frame)
    assert got_id == correlation_id
    assert response.error_code == 0 and response.throttle_time_ms == 3
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [
        (s.key, s.min_version, s.max_version) for s in sorted(APIS.values(), key=lambda s: s.key)]


def test_api_versions_error_answer_in_v0_is_read_by_a_v4_client() -> None:
    """KIP-511: to a version it does not know, the broker answers UNSUPPORTED_VERSION in v0."""
    client = _client()
    correlation_id, _, _ = _sent_request(client, kp_metadata.ApiVersionsRequest(version=4))
    frame = encode_response(ApiKey.API_VERSIONS, 0, correlation_id, {
        "error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]})
    _, response = _received(client, frame)
    assert response.error_code == 35
    assert [(k.api_key, k.max_version) for k in response.api_keys] == [(18, 4)]


def test_metadata_v8_with_the_client() -> None:
    client = _client()
    Topic = kp_metadata.MetadataRequest.MetadataRequestTopic
    request = kp_metadata.MetadataRequest(
        topics=[Topic(name="orders"), Topic(name="payments")], allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False, include_topic_authorized_operations=True,
        version=8)
    correlation_id, _, body = _sent_request(client, request)
    assert [t.name for t in body.topics] == ["orders", "payments"]
    assert body.allow_auto_topic_creation is False
    assert body.include_cluster_authorized_operations is False
    assert body.include_topic_authorized_operations is True

    frame = encode_response(ApiKey.METADATA, 8, correlation_id, {
        "brokers": [{"node_id": 0, "host": "localhost", "port": 9092, "rack": None},
                    {"node_id": 1, "host": "h\u00f6st", "port": 9093, "rack": "r1"}],
        "cluster_id": "pyq-cluster", "controller_id": 0,
        "topics": [{"error_code": 0, "name": "orders", "partitions": [
            {"partition_index": 0, "leader_id": 1, "leader_epoch": 4, "replica_nodes": [1, 0],
             "isr_nodes": [1], "offline_replicas": [0]}]},
                   {"error_code": 3, "name": "payments"}]})
    _, response = _received(client, frame)
    assert [(b.node_id, b.host, b.port, b.rack) for b in response.brokers] == [
        (0, "localhost", 9092, None), (1, "h\u00f6st", 9093, "r1")]
    assert (response.cluster_id, response.controller_id) == ("pyq-cluster", 0)
    orders, payments = response.topics
    assert (orders.name, orders.error_code, orders.is_internal) == ("orders", 0, False)
    p = orders.partitions[0]
    assert (p.partition_index, p.leader_id, p.leader_epoch) == (0, 1, 4)
    assert (p.replica_nodes, p.isr_nodes, p.offline_replicas) == ([1, 0], [1], [0])
    assert orders.authorized_operations is None  # kafka-python's name; INT32_MIN -> None
    assert (payments.name, payments.error_code, payments.partitions) == ("payments", 3, [])


def test_produce_v8_with_the_client() -> None:
    client = _client()
    batch = _record_batch(b"hello", b"world")
    Topic = kp_producer.ProduceRequest.TopicProduceData
    Partition = Topic.PartitionProduceData
    request = kp_producer.ProduceRequest(  # built the way kafka-python's Sender does
        transactional_id=None, acks=-1, timeout_ms=30000,
        topic_data=[Topic(name="orders", partition_data=[Partition(index=2, records=batch)])],
        version=8)
    correlation_id, _, body = _sent_request(client, request)
    assert (body.transactional_id, body.acks, body.timeout_ms) == (None, -1, 30000)
    partition = body.topic_data[0].partition_data[0]
    assert (body.topic_data[0].name, partition.index) == ("orders", 2)
    assert bytes(partition.records) == batch
    records = MemoryRecords(bytes(partition.records)).next_batch()
    assert [r.value for r in records] == [b"hello", b"world"]

    frame = encode_response(ApiKey.PRODUCE, 8, correlation_id, {
        "responses": [{"name": "orders", "partition_responses": [
            {"index": 2, "error_code": 0, "base_offset": 1000, "log_start_offset": 0,
             "record_errors": [{"batch_index": 1, "batch_index_error_message": "nope"}]}]}],
        "throttle_time_ms": 0})
    _, response = _received(client, frame)
    pr = response.responses[0].partition_responses[0]
    assert (response.responses[0].name, pr.index, pr.error_code, pr.base_offset) == (
        "orders", 2, 0, 1000)
    assert (pr.log_append_time_ms, pr.log_start_offset, pr.error_message) == (-1, 0, None)
    assert [(e.batch_index, e.batch_index_error_message) for e in pr.record_errors] == [
        (1, "nope")]


def test_fetch_v11_with_the_client() -> None:
    client = _client()
    Topic = kp_consumer.FetchRequest.FetchTopic
    Partition = Topic.FetchPartition
    Forgotten = kp_consumer.FetchRequest.ForgottenTopic
    request = kp_consumer.FetchRequest(  # built the way kafka-python's Fetcher does
        max_wait_ms=500, min_bytes=1, max_bytes=52428800, isolation_level=1,
        session_id=0, session_epoch=-1,
        topics=[Topic(topic="orders", partitions=[
            Partition(partition=0, current_leader_epoch=3, fetch_offset=42,
                      log_start_offset=-1, partition_max_bytes=1048576)])],
        forgotten_topics_data=[Forgotten(topic="old", partitions=[5, 6])],
        rack_id="rack-a", version=11)
    correlation_id, _, body = _sent_request(client, request)
    assert body.replica_id == -1  # kafka-python relies on the schema default
    assert (body.max_wait_ms, body.min_bytes, body.max_bytes) == (500, 1, 52428800)
    assert (body.isolation_level, body.session_id, body.session_epoch) == (1, 0, -1)
    fp = body.topics[0].partitions[0]
    assert body.topics[0].topic == "orders"
    assert (fp.partition, fp.current_leader_epoch, fp.fetch_offset, fp.log_start_offset,
            fp.partition_max_bytes) == (0, 3, 42, -1, 1048576)
    assert [(f.topic, f.partitions) for f in body.forgotten_topics_data] == [("old", [5, 6])]
    assert body.rack_id == "rack-a"

    batch = _record_batch(b"a", b"b", b"c")
    frame = encode_response(ApiKey.FETCH, 11, correlation_id, {
        "throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
            {"topic": "orders", "partitions": [
                {"partition_index": 0, "error_code": 0, "high_watermark": 45,
                 "last_stable_offset": 45, "log_start_offset": 0,
                 "aborted_transactions": [{"producer_id": 9, "first_offset": 40}],
                 "records": batch}]}]})
    _, response = _received(client, frame)
    pd = response.responses[0].partitions[0]
    assert (pd.partition_index, pd.high_watermark, pd.last_stable_offset, pd.log_start_offset) == (
        0, 45, 45, 0)
    assert pd.preferred_read_replica == -1
    assert [(a.producer_id, a.first_offset) for a in pd.aborted_transactions] == [(9, 40)]
    assert bytes(pd.records) == batch
    assert [r.value for r in MemoryRecords(bytes(pd.records)).next_batch()] == [b"a", b"b", b"c"]


def test_find_coordinator_and_init_producer_id_with_the_client() -> None:
    client = _client()
    correlation_id, _, body = _sent_request(
        client, kp_metadata.FindCoordinatorRequest(key="my-group", key_type=0, version=2))
    assert (body.key, body.key_type) == ("my-group", 0)
    frame = encode_response(ApiKey.FIND_COORDINATOR, 2, correlation_id, {
        "error_code": 0, "error_message": None, "node_id": 1, "host": "localhost", "port": 9092})
    _, response = _received(client, frame)
    assert (response.node_id, response.host, response.port) == (1, "localhost", 9092)

    correlation_id, _, body = _sent_request(client, kp_producer.InitProducerIdRequest(
        transactional_id=None, transaction_timeout_ms=60000, version=1))
    assert (body.transactional_id, body.transaction_timeout_ms) == (None, 60000)
    frame = encode_response(ApiKey.INIT_PRODUCER_ID, 1, correlation_id, {
        "error_code": 0, "producer_id": 4000, "producer_epoch": 0})
    _, response = _received(client, frame)
    assert (response.producer_id, response.producer_epoch) == (4000, 0)


def test_list_offsets_v5_with_the_client() -> None:
    client = _client()
    Topic = kp_consumer.ListOffsetsRequest.ListOffsetsTopic
    Partition = Topic.ListOffsetsPartition
    request = kp_consumer.ListOffsetsRequest(  # built the way kafka-python's Fetcher does
        isolation_level=1,
        topics=[Topic(name="orders", partitions=[Partition(partition_index=1, timestamp=-2)])],
        version=5)
    correlation_id, _, body = _sent_request(client, request)
    assert (body.replica_id, body.isolation_level) == (-1, 1)
    p = body.topics[0].partitions[0]
    assert (body.topics[0].name, p.partition_index, p.current_leader_epoch, p.timestamp) == (
        "orders", 1, -1, -2)
    frame = encode_response(ApiKey.LIST_OFFSETS, 5, correlation_id, {"topics": [
        {"name": "orders", "partitions": [{"partition_index": 1, "offset": 17,
                                           "leader_epoch": 2}]}]})
    _, response = _received(client, frame)
    rp = response.topics[0].partitions[0]
    assert (rp.partition_index, rp.error_code, rp.timestamp, rp.offset, rp.leader_epoch) == (
        1, 0, -1, 17, 2)
