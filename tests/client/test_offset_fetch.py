"""The client's OffsetFetch body and answer reading, at the one-group versions and the batched ones."""

from __future__ import annotations

import pytest

from broker_sim.protocol import api
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import NotCoordinator
from connector.client.offset_fetch import group_answer, offset_fetch_body
from tests.client.support import roundtrip_response


@pytest.mark.parametrize("version", range(1, 10))
def test_one_body_encodes_the_group_at_every_version(version: int) -> None:
    body = offset_fetch_body("g", [{"name": "t", "partition_indexes": [0, 2]}])
    _, decoded = api.decode_request(api.encode_request(ApiKey.OFFSET_FETCH, version, 1, "c", body)[4:])
    if version >= 8:
        [group] = decoded.groups
        assert (group.group_id, group.member_id, group.member_epoch) == ("g", None, -1)
        topics = group.topics
    else:
        topics = decoded.topics
        assert decoded.group_id == "g"
    assert [(t.name, t.partition_indexes) for t in topics] == [("t", [0, 2])]


@pytest.mark.parametrize("version", range(2, 10))
def test_the_answer_is_read_the_same_at_every_version(version: int) -> None:
    topics = [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": 1,
         "metadata": "m", "error_code": 0}]}]
    body = {"throttle_time_ms": 0, "topics": topics, "error_code": NotCoordinator.code,
            "groups": [{"group_id": "g", "topics": topics, "error_code": NotCoordinator.code}]}
    answer = group_answer(roundtrip_response(ApiKey.OFFSET_FETCH, version, body))
    assert answer.error_code == NotCoordinator.code
    assert [(t.name, p.partition_index, p.committed_offset, p.metadata)
            for t in answer.topics for p in t.partitions] == [("t", 0, 5, "m")]
