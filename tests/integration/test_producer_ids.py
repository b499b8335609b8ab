"""Producer ids are unique across the brokers of a cluster.

Each broker answers InitProducerId from its own range. Two idempotent producers that ask
different brokers must get different ids: with equal ids (and both starting at sequence
0) the partition leader would take the second producer's first batch for a duplicate of
the first producer's and drop it — an acknowledged record lost.
"""

from __future__ import annotations

import pytest

from connector.client import Admin, Fetcher, NewTopic, Producer
from tests.wire import partition_states, wait_for

pytestmark = pytest.mark.integration


def test_producers_bootstrapped_on_different_brokers_do_not_shadow_each_other(cluster_factory):
    cluster = cluster_factory(3)
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic("pids", 1, 3)])
    wait_for(lambda: len(partition_states(cluster.brokers[0].port, "pids").get(0, (0, []))[1]) == 3,
             timeout=30, what="3 replicas in sync")
    ids = []
    for broker in cluster.brokers:
        with Producer({"bootstrap.servers": f"127.0.0.1:{broker.port}", "acks": "all",
                       "enable.idempotence": True}) as producer:
            producer.send("pids", b"from-%d" % broker.broker_id, partition=0).result(30)
            ids.append(producer.idempotence.producer_id_and_epoch[0])
    assert len(set(ids)) == 3, ids
    with Fetcher({"bootstrap.servers": cluster.bootstrap_servers}) as fetcher:
        values = [r.value for r in fetcher.iter_records("pids", 0, 0, 3)]
    assert sorted(values) == sorted(b"from-%d" % b.broker_id for b in cluster.brokers)
