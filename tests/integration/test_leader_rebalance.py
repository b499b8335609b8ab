"""The scenario that found the gap: a broker of a 3-broker cluster paused (SIGSTOP) past its
session, its leaderships moved to the others, then resumed. The controller's periodic
preferred-leader check (``leader.imbalance.check.interval.seconds``, 1 s here; Kafka's
default 300 s) gives every partition back to its first replica once that replica is in
sync again, instead of leaving the whole cluster's traffic on the brokers that stayed up."""

from __future__ import annotations

import pytest

from tests.integration.test_replication import FAST, create
from tests.wire import WireClient, wait_for

pytestmark = pytest.mark.integration

TOPIC = "rebalanced"


def assignment(port: int) -> list[tuple[int, list[int], list[int]]]:
    """(leader, replicas in assignment order, isr) per partition, as a broker answers Metadata."""
    with WireClient(port) as c:
        r = c.request(3, 8, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False,
                             "include_cluster_authorized_operations": False,
                             "include_topic_authorized_operations": False})
    parts = sorted(r.topics[0].partitions, key=lambda p: p.partition_index)
    return [(p.leader_id, list(p.replica_nodes), sorted(p.isr_nodes)) for p in parts]


def on_preferred(port: int) -> bool:
    parts = assignment(port)
    return len(parts) == 6 and all(leader == replicas[0] and len(isr) == 3
                                   for leader, replicas, isr in parts)


def test_a_paused_broker_gets_its_leaderships_back(cluster_factory) -> None:
    cluster = cluster_factory(3, overrides={**FAST, "leader.imbalance.check.interval.seconds": "1"})
    create(cluster.bootstrap_servers, TOPIC, 6, 3)
    observer = cluster.broker(0).port
    wait_for(lambda: on_preferred(observer), 30, what="every partition on its preferred replica")
    paused = cluster.broker(1)
    assert sum(replicas[0] == 1 for _, replicas, _ in assignment(observer)) == 2

    paused.pause()
    try:
        wait_for(lambda: all(leader not in (1, -1) for leader, _, _ in assignment(observer)), 30,
                 what="broker 1's leaderships moving to the brokers still up")
    finally:
        paused.resume()
    wait_for(lambda: on_preferred(observer), 60,
             what="broker 1 back in sync and leading its preferred partitions again")
