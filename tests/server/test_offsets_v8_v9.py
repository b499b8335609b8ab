"""OffsetCommit v8-9 and OffsetFetch v6-9 on the wire, against real brokers.

OffsetFetch v8 asks for several groups in one request and gets one answer per group, each
with its own error code (a group this broker does not coordinate gets NOT_COORDINATOR in
its own entry, the others are answered); v9 adds the member id and epoch of a KIP-848
member, which a simple (groupless) consumer leaves null and -1.
"""

from __future__ import annotations

from typing import Any

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import NotCoordinator
from tests.wire import WireClient, create_topic, wait_for


def coordinator(port: int, group: str) -> int:
    """The node id of ``group``'s coordinator, once there is one."""
    with WireClient(port) as c:
        def ask() -> int | None:
            r = c.request(ApiKey.FIND_COORDINATOR, 3, {"key": group, "key_type": 0})
            return r.node_id if r.error_code == 0 else None
        return wait_for(lambda: (n := ask()) is not None and (n,), what=f"coordinator of {group}")[0]


def commit(port: int, version: int, group: str, topic: str, offsets: dict[int, int],
           member_id: str = "", epoch: int = -1) -> list[int]:
    with WireClient(port) as c:
        r = c.request(ApiKey.OFFSET_COMMIT, version, {
            "group_id": group, "generation_id_or_member_epoch": epoch, "member_id": member_id,
            "group_instance_id": None,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1,
                 "committed_metadata": f"at-{o}"} for p, o in offsets.items()]}]})
    return [p.error_code for t in r.topics for p in t.partitions]


def fetch(port: int, version: int, groups: list[dict[str, Any]], require_stable: bool = False) -> Any:
    with WireClient(port) as c:
        return c.request(ApiKey.OFFSET_FETCH, version,
                         {"groups": groups, "require_stable": require_stable})


def offsets_of(group_answer: Any) -> dict[tuple[str, int], tuple[int, str | None, int]]:
    return {(t.name, p.partition_index): (p.committed_offset, p.metadata, p.error_code)
            for t in group_answer.topics for p in t.partitions}


def test_commit_v9_then_fetch_v9_for_a_simple_group(shared_broker) -> None:
    port = shared_broker.port
    create_topic(port, "off9", 2)
    coordinator(port, "simple-9")
    assert commit(port, 9, "simple-9", "off9", {0: 5, 1: 7}) == [0, 0]

    r = fetch(port, 9, [{"group_id": "simple-9", "member_id": None, "member_epoch": -1,
                         "topics": [{"name": "off9", "partition_indexes": [0, 1]}]}])
    [g] = r.groups
    assert (g.group_id, g.error_code) == ("simple-9", 0)
    assert offsets_of(g) == {("off9", 0): (5, "at-5", 0), ("off9", 1): (7, "at-7", 0)}

    # null topics: every committed offset of the group
    [g] = fetch(port, 9, [{"group_id": "simple-9", "member_id": None, "member_epoch": -1,
                           "topics": None}], require_stable=True).groups
    assert offsets_of(g) == {("off9", 0): (5, "at-5", 0), ("off9", 1): (7, "at-7", 0)}

    # and the older, one-group versions read the same offsets
    with WireClient(port) as c:
        old = c.request(ApiKey.OFFSET_FETCH, 7, {"group_id": "simple-9", "topics": None,
                                                 "require_stable": True})
    assert old.error_code == 0 and offsets_of(old) == offsets_of(g)


def test_commit_v8_is_read_back_by_fetch_v6(shared_broker) -> None:
    port = shared_broker.port
    create_topic(port, "off8", 1)
    coordinator(port, "simple-8")
    assert commit(port, 8, "simple-8", "off8", {0: 11}) == [0]
    with WireClient(port) as c:
        r = c.request(ApiKey.OFFSET_FETCH, 6, {
            "group_id": "simple-8", "topics": [{"name": "off8", "partition_indexes": [0]}]})
    assert r.error_code == 0 and offsets_of(r) == {("off8", 0): (11, "at-11", 0)}


def test_fetch_v8_answers_two_groups_in_one_request(shared_broker) -> None:
    port = shared_broker.port
    create_topic(port, "off-two", 2)
    for group in ("batch-a", "batch-b", "batch-none"):
        coordinator(port, group)
    assert commit(port, 8, "batch-a", "off-two", {0: 1, 1: 2}) == [0, 0]
    assert commit(port, 8, "batch-b", "off-two", {1: 30}) == [0]

    r = fetch(port, 8, [
        {"group_id": "batch-a", "topics": [{"name": "off-two", "partition_indexes": [0, 1]}]},
        {"group_id": "batch-b", "topics": None},
        {"group_id": "batch-none", "topics": [{"name": "off-two", "partition_indexes": [0]}]}])
    assert [(g.group_id, g.error_code) for g in r.groups] == \
        [("batch-a", 0), ("batch-b", 0), ("batch-none", 0)]
    a, b, none = r.groups
    assert offsets_of(a) == {("off-two", 0): (1, "at-1", 0), ("off-two", 1): (2, "at-2", 0)}
    assert offsets_of(b) == {("off-two", 1): (30, "at-30", 0)}
    assert offsets_of(none) == {("off-two", 0): (-1, "", 0)}  # nothing committed


def test_fetch_v8_answers_not_coordinator_per_group(cluster_factory) -> None:
    cluster = cluster_factory(3)
    ports = {b.broker_id: b.port for b in cluster.brokers}
    create_topic(ports[0], "off-spread", 1, replication_factor=3)
    # Groups until two are coordinated by broker 0 and two elsewhere.
    here: list[str] = []
    elsewhere: list[str] = []
    for i in range(200):
        group = f"spread-{i}"
        (here if coordinator(ports[0], group) == 0 else elsewhere).append(group)
        if len(here) >= 2 and len(elsewhere) >= 2:
            break
    assert len(here) >= 2 and len(elsewhere) >= 2
    mine, theirs = here[:2], elsewhere[:2]
    for group in mine:
        def committed(g: str = group) -> bool:
            return commit(ports[0], 9, g, "off-spread", {0: 3}) == [0]

        wait_for(committed, what=f"a commit for {group}")
    asked = [mine[0], theirs[0], mine[1], theirs[1]]
    r = fetch(ports[0], 9, [{"group_id": g, "member_id": None, "member_epoch": -1,
                             "topics": [{"name": "off-spread", "partition_indexes": [0]}]}
                            for g in asked])
    assert [(g.group_id, g.error_code) for g in r.groups] == [
        (mine[0], 0), (theirs[0], NotCoordinator.code), (mine[1], 0), (theirs[1], NotCoordinator.code)]
    for g in r.groups:
        if g.error_code:
            assert g.topics == []
        else:
            assert offsets_of(g) == {("off-spread", 0): (3, "at-3", 0)}
