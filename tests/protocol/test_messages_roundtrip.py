"""Encode/decode round trips of every (API, version) we implement, bodies and full frames."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest

from broker_sim.protocol.api import (
    APIS,
    ApiKey,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from broker_sim.protocol.header import RequestHeader, response_header_version
from broker_sim.protocol.messages.fetch import FetchRequest, FetchResponse
from broker_sim.protocol.messages.produce import ProduceRequest
from broker_sim.protocol.schema import Data, Message
from tests.protocol.protocol_samples import all_versions, message, plain, sample

CASES = [pytest.param(key, v, kind, id=f"{name}-v{v}-{kind}")
         for name, key, v in all_versions() for kind in ("request", "response")]
FRAME_CASES = [pytest.param(key, v, id=f"{name}-v{v}") for name, key, v in all_versions()]


def _decode_all(msg: Message, version: int, data: bytes) -> Data:
    """Decode and check that the body consumed exactly every byte."""
    value, end = msg.at(version).read(memoryview(data), 0, msg.is_flexible(version))
    assert end == len(data), f"{len(data) - end} trailing bytes left undecoded"
    return value


def _check_decoded(msg: Message, version: int, decoded: Data, expected: object) -> None:
    assert plain(decoded, msg, version) == plain(expected, msg, version)
    # Every declared field is an attribute; those absent in this version hold defaults.
    assert set(decoded.__dict__) == {f.name for f in msg.fields}
    for f in msg.fields:
        if not f.present_in(version):
            assert getattr(decoded, f.name) == f.default, f.name


@pytest.mark.parametrize(("api_key", "version", "kind"), CASES)
def test_body_roundtrip(api_key: int, version: int, kind: str) -> None:
    msg = message(api_key, kind)
    value = sample(msg, version)
    data = msg.encode(version, value)
    decoded = _decode_all(msg, version, data)
    _check_decoded(msg, version, decoded, value)
    assert plain(decoded, msg, version) == value  # the sample sets every present field
    assert msg.encode(version, decoded) == data


@pytest.mark.parametrize(("api_key", "version", "kind"), CASES)
def test_body_roundtrip_with_nulls(api_key: int, version: int, kind: str) -> None:
    msg = message(api_key, kind)
    value = sample(msg, version, nulls=True)
    data = msg.encode(version, value)
    decoded = _decode_all(msg, version, data)
    _check_decoded(msg, version, decoded, value)
    assert msg.encode(version, decoded) == data


def _seq_as_list(x: object) -> object:
    return list(x) if isinstance(x, (list, tuple)) else x


@pytest.mark.parametrize(("api_key", "version", "kind"), CASES)
def test_empty_value_encodes_defaults(api_key: int, version: int, kind: str) -> None:
    msg = message(api_key, kind)
    data = msg.encode(version, {})
    assert msg.encode(version, msg()) == data  # Struct() fills the same defaults
    decoded = _decode_all(msg, version, data)
    for f in msg.fields:
        assert _seq_as_list(getattr(decoded, f.name)) == _seq_as_list(f.default), f.name


# (message, version, value given, path to the field, expected decoded default)
_T = [{"topic": "t", "partitions": [{}]}]
# (message, version, value, path to a field, what the omitted field decodes as)
DEFAULTS: list[tuple[Message, int, dict[str, Any], list[str | int], object]] = [
    (FetchRequest, 11, {}, ["replica_id"], -1),
    (FetchRequest, 11, {}, ["max_bytes"], 0x7FFFFFFF),
    (FetchRequest, 11, {}, ["isolation_level"], 0),
    (FetchRequest, 11, {}, ["session_id"], 0),
    (FetchRequest, 11, {}, ["session_epoch"], -1),
    (FetchRequest, 11, {}, ["rack_id"], ""),
    (FetchRequest, 11, {"topics": _T}, ["topics", 0, "partitions", 0, "current_leader_epoch"], -1),
    (FetchRequest, 5, {"topics": _T}, ["topics", 0, "partitions", 0, "log_start_offset"], -1),
    (FetchResponse, 11, {"responses": _T}, ["responses", 0, "partitions", 0,
                                           "preferred_read_replica"], -1),
    (FetchResponse, 4, {"responses": _T}, ["responses", 0, "partitions", 0,
                                          "last_stable_offset"], -1),
    (FetchResponse, 4, {"responses": _T}, ["responses", 0, "partitions", 0,
                                          "aborted_transactions"], None),
    (FetchResponse, 4, {"responses": _T}, ["responses", 0, "partitions", 0, "records"], None),
]


def _add_api_defaults() -> None:
    from broker_sim.protocol.messages import (
        create_topics,
        init_producer_id,
        list_offsets,
        metadata,
        offset_commit,
        offset_fetch,
        produce,
    )
    int32_min = -(2**31)
    DEFAULTS.extend([
        (metadata.MetadataRequest, 4, {}, ["allow_auto_topic_creation"], True),
        (metadata.MetadataRequest, 1, {}, ["topics"], None),  # null: all topics
        (metadata.MetadataResponse, 8, {}, ["controller_id"], -1),
        (metadata.MetadataResponse, 8, {}, ["cluster_authorized_operations"], int32_min),
        (metadata.MetadataResponse, 8, {"topics": [{}]},
         ["topics", 0, "topic_authorized_operations"], int32_min),
        (metadata.MetadataResponse, 8, {"topics": [{"partitions": [{}]}]},
         ["topics", 0, "partitions", 0, "leader_epoch"], -1),
        (create_topics.CreateTopicsRequest, 4, {}, ["timeout_ms"], 60000),
        (init_producer_id.InitProducerIdResponse, 1, {}, ["producer_id"], -1),
        (produce.ProduceResponse, 8, {"responses": [{"partition_responses": [{}]}]},
         ["responses", 0, "partition_responses", 0, "log_append_time_ms"], -1),
        (produce.ProduceResponse, 8, {"responses": [{"partition_responses": [{}]}]},
         ["responses", 0, "partition_responses", 0, "log_start_offset"], -1),
        (list_offsets.ListOffsetsRequest, 1, {}, ["replica_id"], -1),
        (list_offsets.ListOffsetsRequest, 4, {"topics": [{"partitions": [{}]}]},
         ["topics", 0, "partitions", 0, "current_leader_epoch"], -1),
        (list_offsets.ListOffsetsResponse, 4, {"topics": [{"partitions": [{}]}]},
         ["topics", 0, "partitions", 0, "offset"], -1),
        (list_offsets.ListOffsetsResponse, 4, {"topics": [{"partitions": [{}]}]},
         ["topics", 0, "partitions", 0, "timestamp"], -1),
        (list_offsets.ListOffsetsResponse, 4, {"topics": [{"partitions": [{}]}]},
         ["topics", 0, "partitions", 0, "leader_epoch"], -1),
        (offset_commit.OffsetCommitRequest, 2, {}, ["generation_id_or_member_epoch"], -1),
        (offset_commit.OffsetCommitRequest, 2, {}, ["retention_time_ms"], -1),
        (offset_commit.OffsetCommitRequest, 6, {"topics": [{"partitions": [{}]}]},
         ["topics", 0, "partitions", 0, "committed_leader_epoch"], -1),
        (offset_commit.OffsetCommitRequest, 7, {"topics": [{"partitions": [{}]}]},
         ["topics", 0, "partitions", 0, "commit_timestamp"], -1),  # v1-only field
        (offset_fetch.OffsetFetchResponse, 5, {"topics": [{"partitions": [{}]}]},
         ["topics", 0, "partitions", 0, "committed_leader_epoch"], -1),
        (offset_fetch.OffsetFetchRequest, 9, {"groups": [{"group_id": "g"}]},
         ["groups", 0, "member_epoch"], -1),
        (offset_fetch.OffsetFetchRequest, 9, {"groups": [{"group_id": "g"}]},
         ["groups", 0, "member_id"], None),
        (offset_fetch.OffsetFetchRequest, 7, {"group_id": "g"}, ["require_stable"], False),
        (offset_fetch.OffsetFetchResponse, 8, {"groups": [{"topics": [{"partitions": [{}]}]}]},
         ["groups", 0, "topics", 0, "partitions", 0, "committed_leader_epoch"], -1),
        (metadata.MetadataRequest, 12, {"topics": [{"name": "t"}]},
         ["topics", 0, "topic_id"], uuid.UUID(int=0)),
        (metadata.MetadataResponse, 10, {"topics": [{"name": "t"}]},
         ["topics", 0, "topic_id"], uuid.UUID(int=0)),
    ])


_add_api_defaults()


@pytest.mark.parametrize(("msg", "version", "value", "path", "expected"), [
    pytest.param(*d, id=f"{d[0].name}-v{d[1]}-{d[3][-1]}") for d in DEFAULTS])
def test_wire_defaults(msg: Message, version: int, value: dict, path: list, expected: object) -> None:
    """Kafka's non-zero defaults are what an omitted field puts on the wire."""
    got: Any = msg.decode(version, msg.encode(version, value))
    for step in path:
        got = got[step] if isinstance(step, int) else getattr(got, step)
    assert got == expected


def test_records_decode_as_zero_copy_slices() -> None:
    value = {"acks": 1, "timeout_ms": 10, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": b"batch-bytes"}]}]}
    data = ProduceRequest.encode(3, value)
    records = ProduceRequest.decode(3, data).topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview)
    assert records.obj is not None and bytes(records) == b"batch-bytes"


def _sizeprefix(frame: bytes | bytearray) -> bytes | bytearray:
    (size,) = struct.unpack_from(">i", frame, 0)
    assert size == len(frame) - 4
    return frame[4:]


@pytest.mark.parametrize(("api_key", "version"), FRAME_CASES)
def test_request_frame_roundtrip(api_key: int, version: int) -> None:
    msg = APIS[api_key].request
    value = sample(msg, version)
    frame = encode_request(api_key, version, 123456, "client-\u00e9", value)
    header, body = decode_request(_sizeprefix(frame))
    assert header == RequestHeader(api_key, version, 123456, "client-\u00e9")
    assert plain(body, msg, version) == value
    assert encode_request(api_key, version, 123456, "client-\u00e9", body) == frame


@pytest.mark.parametrize(("api_key", "version"), FRAME_CASES)
def test_request_frame_roundtrip_null_client_id(api_key: int, version: int) -> None:
    msg = APIS[api_key].request
    frame = encode_request(api_key, version, -7, None, sample(msg, version, nulls=True))
    header, body = decode_request(_sizeprefix(frame))
    assert header == RequestHeader(api_key, version, -7, None)
    assert plain(body, msg, version) == sample(msg, version, nulls=True)


@pytest.mark.parametrize(("api_key", "version"), FRAME_CASES)
def test_response_frame_roundtrip(api_key: int, version: int) -> None:
    msg = APIS[api_key].response
    value = sample(msg, version)
    frame = encode_response(api_key, version, 99, value)
    correlation_id, body = decode_response(api_key, version, _sizeprefix(frame))
    assert correlation_id == 99
    assert plain(body, msg, version) == value
    # Header v0 (non-flexible, and ApiVersions always) ends at the correlation id; v1
    # (flexible) adds an empty tagged-field section, one byte.
    assert frame[4:8] == struct.pack(">i", 99)
    header_end = 8 + response_header_version(api_key, msg.is_flexible(version))
    assert frame[8:header_end] == b"\x00" * (header_end - 8)
    assert frame[header_end:] == msg.encode(version, value)


@pytest.mark.parametrize("version", [3, 4])
def test_api_versions_flexible_request_uses_header_v2(version: int) -> None:
    body = {"client_software_name": "kafka-python", "client_software_version": "3.0"}
    frame = encode_request(ApiKey.API_VERSIONS, version, 5, "cid", body)
    # api_key, api_version, correlation_id, client_id (int16 length, NOT compact),
    # then the header's empty tagged-field section.
    header = struct.pack(">hhih", 18, version, 5, 3) + b"cid" + b"\x00"
    assert frame[4:4 + len(header)] == header
    assert frame[4 + len(header):] == (b"\x0dkafka-python" b"\x043.0" b"\x00")
    hdr, decoded = decode_request(frame[4:])
    assert hdr == RequestHeader(18, version, 5, "cid")
    assert decoded.client_software_name == "kafka-python"
    assert decoded.client_software_version == "3.0"


def test_api_versions_flexible_request_null_client_id_stays_int16() -> None:
    frame = encode_request(ApiKey.API_VERSIONS, 3, 5, None, {})
    assert frame[4:] == bytes.fromhex("0012 0003 00000005 ffff 00" "01 01 00")
    assert decode_request(frame[4:])[0].client_id is None


def test_flexible_request_header_skips_unknown_header_tags() -> None:
    payload = (struct.pack(">hhih", 18, 3, 5, 1) + b"c"
               + b"\x01" + b"\x05\x02ab"  # one tagged field: tag 5, 2 bytes "ab"
               + b"\x02a\x021\x00")
    header, body = decode_request(payload)
    assert header == RequestHeader(18, 3, 5, "c")
    assert (body.client_software_name, body.client_software_version) == ("a", "1")


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_response_always_uses_header_v0(version: int) -> None:
    body = {"error_code": 0, "api_keys": [{"api_key": 0, "min_version": 3, "max_version": 8}],
            "throttle_time_ms": 0}
    frame = encode_response(ApiKey.API_VERSIONS, version, 77, body)
    assert frame[4:8] == struct.pack(">i", 77)
    assert frame[8:10] == b"\x00\x00"  # error_code follows the correlation id directly
    correlation_id, decoded = decode_response(ApiKey.API_VERSIONS, version, frame[4:])
    assert correlation_id == 77
    assert decoded.api_keys[0].max_version == 8
