"""DescribeTopicPartitions (75) on a broker process, asked over the wire: following the
cursors gives every partition of every topic asked for exactly once, pages never hold more
than the limit, and what the principal may not describe is refused (named) or left out
(every topic), as Metadata does.

The broker has pyq's authorizer; the requests come over its PLAINTEXT listener, whose
principal (``User:ANONYMOUS``) may describe the ``page-`` topics only (a prefixed ACL set
by the super user ``admin`` over SASL)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from broker_sim.process import BrokerProcess
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import (
    InvalidRequest,
    TopicAuthorizationFailed,
    UnknownTopicOrPartition,
)
from broker_sim.security.acl import AclBinding, Operation, PatternType, Permission, ResourceType
from broker_sim.server.metadata_cache import ZERO_UUID
from connector.client import Admin
from tests.wire import WireClient

pytestmark = pytest.mark.integration

#: partitions of each topic the pages walk through
TOPICS = {"page-a": 5, "page-b": 1, "page-c": 4, "page-d": 2}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("dtp"), overrides={
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "inter.broker.listener.name": "PLAINTEXT", "authorizer.class.name": "pyq",
        "super.users": "User:admin", "allow.everyone.if.no.acl.found": "false",
        "auto.create.topics.enable": "false"},
        add_scram=["SCRAM-SHA-256=[name=admin,password=admin-pw]"]).start()
    try:
        admin_options = {"bootstrap.servers": proc.listeners["SASL_PLAINTEXT"],
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                         "sasl.username": "admin", "sasl.password": "admin-pw"}
        with Admin(admin_options) as admin:
            for name, partitions in {**TOPICS, "hidden": 3}.items():
                admin.create_topic(name, num_partitions=partitions)
            admin.create_acls([AclBinding.create(ResourceType.TOPIC, "page-", PatternType.PREFIXED,
                                                 "User:ANONYMOUS", "*", Operation.DESCRIBE, Permission.ALLOW)])
        yield proc
    finally:
        proc.stop()


def ask(proc: BrokerProcess, topics: list[str], limit: int, cursor: tuple[str, int] | None = None) -> Any:
    host, port = proc.listeners["PLAINTEXT"].rsplit(":", 1)
    with WireClient(int(port), host) as client:
        return client.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {
            "topics": [{"name": t} for t in topics], "response_partition_limit": limit,
            "cursor": None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]}})


def walk(proc: BrokerProcess, topics: list[str], limit: int) -> tuple[list[Any], Counter]:
    """Every page from the first to the one without a cursor, and how often each
    (topic, partition) came back."""
    pages: list[Any] = []
    seen: Counter[tuple[str, int]] = Counter()
    cursor = None
    while True:
        page = ask(proc, topics, limit, cursor)
        pages.append(page)
        seen.update((t.name, p.partition_index) for t in page.topics for p in t.partitions)
        if page.next_cursor is None:
            return pages, seen
        cursor = (page.next_cursor.topic_name, page.next_cursor.partition_index)
        assert len(pages) < 20, "the cursors do not advance"


def every_partition() -> Counter:
    return Counter((name, i) for name, count in TOPICS.items() for i in range(count))


@pytest.mark.parametrize("limit", [1, 3, 5, 6, 12, 2000])
def test_named_topics_come_back_every_partition_once_across_pages(broker: BrokerProcess, limit: int) -> None:
    pages, seen = walk(broker, sorted(TOPICS), limit)
    assert seen == every_partition()
    assert all(sum(len(t.partitions) for t in page.topics) <= limit for page in pages)
    assert len(pages) == -(-sum(TOPICS.values()) // limit)  # as few pages as the limit allows
    described = {t.name: t for page in pages for t in page.topics}
    assert all(t.error_code == 0 and t.topic_id != ZERO_UUID for t in described.values())
    first = described["page-a"].partitions
    assert all(len(p.replica_nodes) == 1 and p.isr_nodes == p.replica_nodes and p.leader_id == p.replica_nodes[0]
               for p in first)


@pytest.mark.parametrize("limit", [2, 4])
def test_every_topic_pages_through_what_the_principal_may_describe(broker: BrokerProcess, limit: int) -> None:
    pages, seen = walk(broker, [], limit)
    assert seen == every_partition()  # and nothing of "hidden"
    assert all(t.error_code == 0 for page in pages for t in page.topics)


def test_a_limit_reached_at_a_topics_end_points_at_the_next_topic(broker: BrokerProcess) -> None:
    page = ask(broker, sorted(TOPICS), 5)
    assert [(t.name, len(t.partitions)) for t in page.topics] == [("page-a", 5)]
    assert (page.next_cursor.topic_name, page.next_cursor.partition_index) == ("page-b", 0)
    # a limit below 1 counts as 1
    page = ask(broker, ["page-c"], 0, ("page-c", 2))
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in page.topics] == [("page-c", [2])]
    assert (page.next_cursor.topic_name, page.next_cursor.partition_index) == ("page-c", 3)


def test_topics_refused_or_missing_are_answered_in_their_place(broker: BrokerProcess) -> None:
    page = ask(broker, ["hidden", "page-b", "page-zz", "never-there"], 100)
    by_name = {t.name: t for t in page.topics}
    assert by_name["page-b"].error_code == 0 and len(by_name["page-b"].partitions) == 1
    assert by_name["page-zz"].error_code == UnknownTopicOrPartition.code
    # whether it exists or not, a topic the principal may not describe is only refused
    for name in ("hidden", "never-there"):
        assert (by_name[name].error_code, by_name[name].topic_id, by_name[name].partitions) == (
            TopicAuthorizationFailed.code, ZERO_UUID, [])
    assert page.next_cursor is None


def test_a_cursor_outside_the_request_is_invalid(broker: BrokerProcess) -> None:
    page = ask(broker, ["page-a", "page-b"], 10, ("page-c", 0))
    assert [(t.name, t.error_code) for t in page.topics] == [
        ("page-a", InvalidRequest.code), ("page-b", InvalidRequest.code)]
    page = ask(broker, ["page-a"], 10, ("page-a", -1))
    assert [(t.name, t.error_code) for t in page.topics] == [("page-a", InvalidRequest.code)]
