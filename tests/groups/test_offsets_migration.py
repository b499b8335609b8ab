"""A data directory written by an older pyq, which kept committed offsets in the controller's
journal, keeps its consumers' positions: the coordinators move them into
``__consumer_offsets`` the first time each of its partitions loads."""

from __future__ import annotations

import json

import pytest

from broker_sim.cluster import LocalCluster
from broker_sim.protocol.errors import UnknownTopicOrPartition
from connector.client import Admin, OffsetAndMetadata, TopicPartition
from tests.groups.group_clients import wait_for

pytestmark = pytest.mark.cluster


def committed(admin: Admin) -> bool:
    try:
        admin.commit_offsets("etl", {("clicks", 0): 50})
        return True
    except UnknownTopicOrPartition:  # brokers learn of a new topic at their next heartbeat
        return False


def test_offsets_in_an_old_controller_journal_are_moved_into_the_offsets_topic(tmp_path):
    journal = tmp_path / "controller" / "group-offsets.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_text(
        json.dumps({"g": "etl", "o": [["clicks", 0, 42, -1, '{"query": "q"}'],
                                      ["clicks", 1, 7, 3, ""]]}) + "\n"
        + json.dumps({"g": "etl", "o": [["clicks", 1, 9, 4, ""]]}) + "\n"  # the latest wins
        + json.dumps({"g": "audit", "o": [["orders", 0, 5, -1, ""]]}) + "\n"
        + '{"g": "torn", "o": [["x", 0')  # a crash mid-write: ignored
    cluster = LocalCluster(tmp_path, 2, overrides={"offsets.topic.num.partitions": "4"})
    cluster.start()
    try:
        with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
            assert admin.fetch_offsets("etl") == {
                TopicPartition("clicks", 0): OffsetAndMetadata(42, '{"query": "q"}', -1),
                TopicPartition("clicks", 1): OffsetAndMetadata(9, "", 4)}
            assert admin.fetch_offsets("audit") == {
                TopicPartition("orders", 0): OffsetAndMetadata(5)}
            assert {"etl", "audit"} <= {g.group_id for g in admin.list_groups()}
            # the topic holds them now: a later commit replaces them there
            admin.create_topic("clicks", num_partitions=2, replication_factor=2)
            wait_for(lambda: committed(admin), 15, "the coordinator to know the new topic")
        for i in range(2):
            cluster.broker(i).kill()
            cluster.broker(i).start()
        with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
            offsets = admin.fetch_offsets("etl")
        assert offsets[TopicPartition("clicks", 0)].offset == 50
        assert offsets[TopicPartition("clicks", 1)].offset == 9
    finally:
        cluster.stop()
