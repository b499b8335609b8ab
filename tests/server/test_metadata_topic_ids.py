"""Metadata v9-12 on the wire: topic ids, lookups by id, and the v10-11 rules.

Every topic the controller creates has a random uuid; brokers answer it from Metadata v10
on, and from v12 a client may ask for a topic by id alone (a null name).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    InvalidRequest,
    UnknownTopicId,
    UnknownTopicOrPartition,
)
from tests.wire import WireClient, create_topic, wait_for

ZERO = uuid.UUID(int=0)


def metadata(port: int, version: int, topics: list[dict] | None) -> Any:
    with WireClient(port) as c:
        return c.request(ApiKey.METADATA, version, {
            "topics": topics, "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False})


def topic_id(port: int, name: str, version: int = 12) -> uuid.UUID:
    t = metadata(port, version, [{"name": name}]).topics[0]
    assert t.error_code == 0 and t.name == name, t
    return t.topic_id


def test_a_topic_found_by_id_answers_its_name_and_partitions(shared_broker) -> None:
    port = shared_broker.port
    create_topic(port, "ids-by-id", partitions=3)
    tid = wait_for(lambda: topic_id(port, "ids-by-id"), what="the topic in the metadata")
    assert tid != ZERO and tid.version == 4
    assert topic_id(port, "ids-by-id") == tid  # stable across requests
    assert topic_id(port, "ids-by-id", version=10) == tid  # and across versions

    r = metadata(port, 12, [{"topic_id": tid, "name": None}])
    [t] = r.topics
    assert (t.error_code, t.name, t.topic_id, t.is_internal) == (0, "ids-by-id", tid, False)
    assert [p.partition_index for p in t.partitions] == [0, 1, 2]
    assert all(p.leader_id == r.brokers[0].node_id for p in t.partitions)


def test_an_unknown_id_answers_unknown_topic_id_with_the_id_echoed(shared_broker) -> None:
    stranger = uuid.uuid4()
    [t] = metadata(shared_broker.port, 12, [{"topic_id": stranger, "name": None}]).topics
    assert (t.error_code, t.name, t.topic_id, t.partitions) == (UnknownTopicId.code, None, stranger, [])


def test_by_id_and_by_name_in_one_request(shared_broker) -> None:
    port = shared_broker.port
    create_topic(port, "ids-mixed", partitions=1)
    tid = wait_for(lambda: topic_id(port, "ids-mixed"), what="the topic in the metadata")
    stranger = uuid.uuid4()
    r = metadata(port, 12, [{"topic_id": tid, "name": None}, {"name": "ids-nope"},
                            {"topic_id": stranger, "name": None}, {"name": "ids-mixed"}])
    got = [(t.error_code, t.name, t.topic_id) for t in r.topics]
    assert got == [(0, "ids-mixed", tid), (UnknownTopicOrPartition.code, "ids-nope", ZERO),
                   (UnknownTopicId.code, None, stranger), (0, "ids-mixed", tid)]


def test_every_topic_has_its_id_internal_ones_too(shared_broker) -> None:
    port = shared_broker.port
    create_topic(port, "ids-all", partitions=1)
    with WireClient(port) as c:  # FindCoordinator creates __consumer_offsets
        wait_for(lambda: c.request(ApiKey.FIND_COORDINATOR, 3, {"key": "ids-group", "key_type": 0})
                 .error_code == 0, what="a group coordinator")
    topics = {t.name: t for t in metadata(port, 12, None).topics}
    assert {"ids-all", "__consumer_offsets"} <= set(topics)
    assert all(t.error_code == 0 and t.topic_id != ZERO for t in topics.values())
    assert len({t.topic_id for t in topics.values()}) == len(topics)  # unique
    assert topics["__consumer_offsets"].is_internal
    offsets_id = topics["__consumer_offsets"].topic_id
    [t] = metadata(port, 12, [{"topic_id": offsets_id, "name": None}]).topics
    assert (t.error_code, t.name, t.is_internal) == (0, "__consumer_offsets", True)


@pytest.mark.parametrize("version", [10, 11])
def test_before_v12_a_topic_must_be_named(shared_broker, version: int) -> None:
    [t] = metadata(shared_broker.port, version, [{"topic_id": uuid.uuid4(), "name": None}]).topics
    assert t.error_code == InvalidRequest.code


@pytest.mark.parametrize("version", [9, 10, 11, 12])
def test_flexible_versions_answer_like_v8(shared_broker, version: int) -> None:
    port = shared_broker.port
    create_topic(port, f"ids-v{version}", partitions=2)
    wait_for(lambda: topic_id(port, f"ids-v{version}"), what="the topic in the metadata")
    old = metadata(port, 8, [{"name": f"ids-v{version}"}])
    new = metadata(port, version, [{"name": f"ids-v{version}"}])
    assert (new.cluster_id, new.controller_id) == (old.cluster_id, old.controller_id)
    assert [(b.node_id, b.host, b.port) for b in new.brokers] == \
        [(b.node_id, b.host, b.port) for b in old.brokers]
    assert [(p.partition_index, p.leader_id, p.isr_nodes) for p in new.topics[0].partitions] == \
        [(p.partition_index, p.leader_id, p.isr_nodes) for p in old.topics[0].partitions]
    assert (new.topics[0].topic_id == ZERO) == (version < 10)


def test_topic_ids_are_the_same_on_every_broker(cluster_factory) -> None:
    cluster = cluster_factory(3)
    ports = cluster.ports
    create_topic(ports[0], "ids-everywhere", partitions=3, replication_factor=3)

    def ids() -> dict[int, uuid.UUID] | None:
        got = {}
        for port in ports:
            [t] = metadata(port, 12, [{"name": "ids-everywhere"}]).topics
            if t.error_code:
                return None
            got[port] = t.topic_id
        return got

    seen = wait_for(ids, what="the topic on every broker")
    assert len(set(seen.values())) == 1 and ZERO not in seen.values()
    tid = next(iter(seen.values()))
    for port in ports:  # and every broker finds it by that id
        [t] = metadata(port, 12, [{"topic_id": tid, "name": None}]).topics
        assert (t.error_code, t.name, len(t.partitions)) == (0, "ids-everywhere", 3)
