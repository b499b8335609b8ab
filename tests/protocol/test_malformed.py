"""Bytes a peer may send that do not parse: always MalformedFrame, never a stray exception.

A bad frame must close only its own connection, so the codec may raise nothing but
:class:`MalformedFrame` (or its subclasses UnknownApiKey / UnsupportedApiVersion) on
any input: no IndexError, struct.error, UnicodeDecodeError or MemoryError.
"""

from __future__ import annotations

import random
import struct

import pytest

from broker_sim.protocol.api import (
    APIS,
    CONTROLLER_APIS,
    UnknownApiKey,
    UnsupportedApiVersion,
    decode_request,
    decode_response,
    encode_request,
)
from broker_sim.protocol.errors import MalformedFrame
from broker_sim.protocol.header import RequestHeader
from broker_sim.protocol.messages.api_versions import ApiVersionsRequest
from broker_sim.protocol.messages.delete_topics import DeleteTopicsRequest
from broker_sim.protocol.messages.fetch import FetchResponse
from broker_sim.protocol.messages.find_coordinator import FindCoordinatorRequest
from broker_sim.protocol.messages.metadata import MetadataRequest
from broker_sim.protocol.messages.offset_fetch import OffsetFetchRequest
from broker_sim.protocol.messages.produce import ProduceRequest
from tests.protocol.protocol_samples import all_versions, message, sample

CASES = [pytest.param(key, v, kind, id=f"{name}-v{v}-{kind}")
         for name, key, v in all_versions() for kind in ("request", "response")]


@pytest.mark.parametrize(("api_key", "version", "kind"), CASES)
def test_every_truncation_is_malformed(api_key: int, version: int, kind: str) -> None:
    msg = message(api_key, kind)
    data = msg.encode(version, sample(msg, version))
    for cut in range(len(data)):
        with pytest.raises(MalformedFrame):
            msg.decode(version, data[:cut])


@pytest.mark.parametrize(("api_key", "version"),
                         [pytest.param(k, v, id=f"{n}-v{v}") for n, k, v in all_versions()])
def test_truncated_request_frames_are_malformed(api_key: int, version: int) -> None:
    msg = message(api_key, "request")
    payload = encode_request(api_key, version, 1, "client", sample(msg, version))[4:]
    decode_request(payload)  # the whole frame is fine
    for cut in range(len(payload)):
        with pytest.raises(MalformedFrame):
            decode_request(payload[:cut])


def test_truncated_response_header() -> None:
    for cut in range(4):
        with pytest.raises(MalformedFrame):
            decode_response(18, 0, b"\x00\x00\x00\x07"[:cut])


# ----------------------------------------------------------- counts and lengths


@pytest.mark.parametrize("count", [b"\xff\xff\xff\xff", b"\xff\xff\xff\xfe", b"\x80\x00\x00\x00"],
                         ids=["null", "minus2", "int32_min"])
def test_negative_count_of_non_nullable_array(count: bytes) -> None:
    with pytest.raises(MalformedFrame):
        DeleteTopicsRequest.decode(0, count + b"\x00\x00\x75\x30")


@pytest.mark.parametrize("count", [b"\x7f\xff\xff\xff", b"\x00\x00\x10\x00", b"\x00\x00\x00\x03"])
def test_array_count_larger_than_the_frame(count: bytes) -> None:
    # topic_names claims more strings than the bytes that follow can hold
    with pytest.raises(MalformedFrame):
        DeleteTopicsRequest.decode(0, count + b"\x00\x01t" + b"\x00\x00\x75\x30")


def test_int32_array_count_larger_than_the_frame() -> None:
    # OffsetFetch v1: group "g", one topic "t", partition_indexes count 3 but one int32
    data = b"\x00\x01g" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x03" + b"\x00" * 4
    with pytest.raises(MalformedFrame):
        OffsetFetchRequest.decode(1, data)


def test_nullable_array_null_decodes_as_none() -> None:
    assert MetadataRequest.decode(1, b"\xff\xff\xff\xff").topics is None


def test_oversized_records_length() -> None:
    data = (b"\xff\xff" b"\x00\x01" b"\x00\x00\x03\xe8" b"\x00\x00\x00\x01" b"\x00\x01t"
            b"\x00\x00\x00\x01" b"\x00\x00\x00\x00"
            b"\x7f\xff\xff\xff" b"abc")  # records claims 2 GiB, 3 bytes follow
    with pytest.raises(MalformedFrame):
        ProduceRequest.decode(3, data)


@pytest.mark.parametrize("length", [b"\xff\xff", b"\xff\xfe", b"\x00\x05"],
                         ids=["null", "minus2", "past_end"])
def test_bad_length_of_non_nullable_string(length: bytes) -> None:
    with pytest.raises(MalformedFrame):
        FindCoordinatorRequest.decode(0, length + b"gg")


@pytest.mark.parametrize("data", [
    b"\x00\x02\xff\xfe",          # not UTF-8 at all
    b"\x00\x02\xc3\x28",          # invalid continuation byte
    b"\x00\x01\xc3",              # a multi-byte sequence cut short
    b"\x00\x03\xed\xa0\x80",      # an encoded surrogate
])
def test_invalid_utf8_string(data: bytes) -> None:
    with pytest.raises(MalformedFrame):
        FindCoordinatorRequest.decode(0, data)


def test_invalid_utf8_client_id() -> None:
    payload = struct.pack(">hhih", 3, 1, 9, 2) + b"\xff\xfe" + b"\xff\xff\xff\xff"
    with pytest.raises(MalformedFrame):
        decode_request(payload)


# ----------------------------------------------------------- flexible (compact) forms


@pytest.mark.parametrize("data", [
    b"\xff" * 10 + b"\x01",                # uvarint longer than 64 bits
    b"\x80",                               # uvarint cut short
    b"\x10abc",                            # compact string length 15 past the end
    b"\x02a\x021\x01\x00\x05ab",           # tagged field claims 5 bytes, 2 follow
    b"\x02a\x021",                         # tagged-field section missing
    b"\x02\xff\x021\x00",                  # compact string not UTF-8
    b"\x00\x021\x00",                      # null (0) in a non-nullable compact string
])
def test_malformed_compact_encodings(data: bytes) -> None:
    with pytest.raises(MalformedFrame):
        ApiVersionsRequest.decode(3, data)


def test_unknown_tagged_fields_are_skipped() -> None:
    data = b"\x02a\x021" + b"\x02" + b"\x07\x01z" + b"\x63\x00"  # tags 7 and 99
    decoded = ApiVersionsRequest.decode(3, data)
    assert (decoded.client_software_name, decoded.client_software_version) == ("a", "1")


def test_flexible_header_tagged_field_past_end() -> None:
    payload = struct.pack(">hhih", 18, 3, 1, 1) + b"c" + b"\x01\x00\x09ab"
    with pytest.raises(MalformedFrame):
        decode_request(payload)


# ----------------------------------------------------------- api key and version


@pytest.mark.parametrize("api_key", [4, 99, -1, 32767])
def test_unknown_api_key(api_key: int) -> None:
    payload = struct.pack(">hhih", api_key, 0, 5, 1) + b"c"
    with pytest.raises(UnknownApiKey) as info:
        decode_request(payload)
    assert info.value.api_key == api_key


@pytest.mark.parametrize(("api_key", "version"), [(0, 2), (0, 9), (1, 3), (1, 12), (3, 13),
                                                  (18, 5), (22, 5), (2, 0)])
def test_unsupported_version_keeps_the_header(api_key: int, version: int) -> None:
    # Whatever the body (here garbage), the header is parsed for the error answer.
    payload = struct.pack(">hhih", api_key, version, 4242, 3) + b"cli" + b"\xde\xad"
    with pytest.raises(UnsupportedApiVersion) as info:
        decode_request(payload)
    assert info.value.header == RequestHeader(api_key, version, 4242, "cli")


def test_the_controller_takes_offset_fetch_only_in_its_one_group_versions() -> None:
    # Its legacy journal answers one group per request: v8+ (batches) is not advertised.
    assert (CONTROLLER_APIS[9].min_version, CONTROLLER_APIS[9].max_version) == (1, 7)
    assert (APIS[9].min_version, APIS[9].max_version) == (1, 9)
    frame = encode_request(9, 8, 5, "b", {"groups": [{"group_id": "g", "topics": None}]})
    with pytest.raises(UnsupportedApiVersion):
        decode_request(frame[4:], CONTROLLER_APIS)
    assert decode_request(frame[4:])[1].groups[0].group_id == "g"  # a broker takes it


def test_unsupported_api_versions_request_with_header_v2_still_yields_the_header() -> None:
    # A newer client sends ApiVersions v9 with header v2 and a compact body (KIP-511);
    # the broker must still read correlation_id and client_id to answer.
    payload = struct.pack(">hhih", 18, 9, 77, 13) + b"kafka-python3" + b"\x00" + b"\x02x\x02y\x00"
    with pytest.raises(UnsupportedApiVersion) as info:
        decode_request(payload)
    assert info.value.header.correlation_id == 77
    assert info.value.header.client_id == "kafka-python3"


def test_short_request_header() -> None:
    for payload in [b"", b"\x00\x12", b"\x00\x12\x00\x03\x00\x00\x00"]:
        with pytest.raises(MalformedFrame):
            decode_request(payload)


# ----------------------------------------------------------- fuzzing


@pytest.mark.parametrize(("api_key", "version", "kind"), CASES)
def test_random_corruption_raises_only_malformed_frame(api_key: int, version: int,
                                                        kind: str) -> None:
    msg = message(api_key, kind)
    data = msg.encode(version, sample(msg, version))
    if not data:  # ApiVersions v0-2 requests have an empty body
        return
    rng = random.Random(f"{api_key}-{version}-{kind}")
    for _ in range(300):
        corrupt = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(corrupt))
            corrupt[i] = rng.choice([0x00, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        if rng.random() < 0.3:
            del corrupt[rng.randrange(len(corrupt)):]
        try:
            msg.decode(version, bytes(corrupt))
        except MalformedFrame:
            pass


def test_random_garbage_requests_raise_only_malformed_frame() -> None:
    rng = random.Random(1234)
    keys = [0, 1, 2, 3, 8, 9, 10, 18, 19, 20, 22]
    for _ in range(3000):
        head = struct.pack(">hhi", rng.choice(keys), rng.randrange(13), rng.randrange(100))
        tail = bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
        try:
            decode_request(head + tail)
        except MalformedFrame:
            pass


def test_fetch_response_with_garbage_records_length_in_every_partition() -> None:
    value = {"responses": [{"topic": "t", "partitions": [
        {"partition_index": 0, "records": b"abc"}]}]}
    data = bytearray(FetchResponse.encode(4, value))
    struct.pack_into(">i", data, len(data) - 7, 1 << 30)
    with pytest.raises(MalformedFrame):
        FetchResponse.decode(4, bytes(data))
