"""KRaft's RPCs on the wire: hand-written golden bytes both ways, every version round-tripped,
and advertised only where they are served (a broker's ApiVersions names none of them and
Fetch only up to v11)."""

from __future__ import annotations

from typing import Any

import pytest

from broker_sim.protocol.api import (
    APIS,
    CONTROLLER_APIS,
    RAFT_APIS,
    decode_response,
    encode_request,
    encode_response,
    spec_for,
)
from broker_sim.protocol.schema import Message
from tests.protocol.golden_kraft import CASES
from tests.protocol.protocol_samples import plain, sample

#: Between controllers only; DescribeQuorum (55) and the voter changes an operator asks
#: (80, 81) a broker forwards to its controller.
RAFT_KEYS = {52, 53, 54, 59, 82}
FORWARDED = {55, 80, 81}


@pytest.mark.parametrize(("msg", "version", "value", "golden"),
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_encode_matches_golden(msg: Message, version: int, value: dict, golden: bytes) -> None:
    assert msg.encode(version, value).hex(" ") == golden.hex(" ")


@pytest.mark.parametrize(("msg", "version", "value", "golden"),
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_decode_golden(msg: Message, version: int, value: dict, golden: bytes) -> None:
    assert plain(msg.decode(version, golden), msg, version) == plain(value, msg, version)


def test_every_raft_api_has_golden_request_and_response() -> None:
    covered = {(c[1].api_key, c[1] is RAFT_APIS[c[1].api_key].request) for c in CASES}
    assert covered == {(key, is_req) for key in RAFT_APIS for is_req in (True, False)}


VERSIONS = [pytest.param(msg, v, id=f"{msg.name}-v{v}")
            for spec in RAFT_APIS.values() for msg in (spec.request, spec.response)
            for v in range(max(msg.min_version, 12 if spec.key == 1 else 0), msg.max_version + 1)]


@pytest.mark.parametrize(("msg", "version"), VERSIONS)
@pytest.mark.parametrize("nulls", [False, True])
def test_every_version_round_trips(msg: Message, version: int, nulls: bool) -> None:
    value = sample(msg, version, nulls=nulls)
    data = msg.encode(version, value)
    decoded, end = msg.at(version).read(memoryview(data), 0, msg.is_flexible(version))
    assert end == len(data)
    assert plain(decoded, msg, version) == plain(value, msg, version)
    assert msg.encode(version, decoded) == data
    assert msg.encode(version, msg.decode(version, msg.encode(version, {}))) == msg.encode(version, {})


def test_brokers_do_not_advertise_the_quorum_apis() -> None:
    assert not RAFT_KEYS & set(APIS)
    assert not RAFT_KEYS & set(CONTROLLER_APIS)  # until the controller quorum serves them
    assert FORWARDED <= set(APIS) and FORWARDED <= set(CONTROLLER_APIS)
    assert (APIS[1].min_version, APIS[1].max_version) == (4, 11)
    assert RAFT_APIS[1].max_version == 18


def test_a_controller_client_frames_kraft_requests() -> None:
    """encode_request finds the KRaft specs (and Fetch beyond a broker's v11) by key alone."""
    _, msg, version, value, golden = next(c for c in CASES if c[0] == "vote_req_v2_pre_vote")
    frame = encode_request(52, version, 9, "controller-1", value)
    assert frame.endswith(golden)
    _, fetch, fv, fetch_value, fetch_golden = next(c for c in CASES if c[0] == "fetch_req_v17_kraft")
    assert encode_request(1, fv, 9, None, fetch_value).endswith(fetch_golden)
    _, resp, rv, resp_value, _ = next(c for c in CASES if c[0] == "describe_quorum_resp_v2")
    corr, decoded = decode_response(55, rv, encode_response(55, rv, 7, resp_value)[4:])
    assert corr == 7 and plain(decoded, resp, rv) == plain(resp_value, resp, rv)
    assert spec_for(55).name == "DescribeQuorum"


def _field_names(msg: Any) -> set[str]:
    return {f.name for f in msg.fields}


def test_fetch_keeps_a_brokers_fields() -> None:
    """KRaft's versions add fields; what v4-11 decode to is unchanged."""
    assert {"replica_id", "max_wait_ms", "topics", "rack_id"} <= _field_names(RAFT_APIS[1].request)
