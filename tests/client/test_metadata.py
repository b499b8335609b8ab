"""Cluster snapshots from Metadata responses, and when the client refreshes them."""

from __future__ import annotations

import uuid

from broker_sim.protocol.errors import UnknownTopicId, UnknownTopicOrPartition
from connector.client.config import ClientConfig
from connector.client.metadata import Cluster, Metadata, TopicPartition
from tests.client.support import metadata_response, roundtrip_response


def test_bootstrap_nodes_have_negative_ids():
    c = Cluster.bootstrap([("a", 1), ("b", 2)])
    assert sorted(c.brokers) == [-2, -1] and c.is_bootstrap and c.node(-2).host == "b"


def test_cluster_from_a_metadata_response():
    c = Cluster.from_response(metadata_response({("t", 0): 0, ("t", 1): 1, ("u", 0): 1}))
    assert c.leader_for(TopicPartition("t", 1)) == 1
    assert c.partition_count("t") == 2 and c.partition_count("nope") is None
    assert c.partitions_for_node(1) == [TopicPartition("t", 1), TopicPartition("u", 0)]
    assert c.available_partitions("t") == [0, 1]
    assert c.controller_id == 0 and c.cluster_id == "test"


def test_partitions_without_a_leader_are_not_available_and_topic_errors_are_kept():
    body = roundtrip_response(3, 8, {
        "throttle_time_ms": 0, "cluster_id": None, "controller_id": 0,
        "brokers": [{"node_id": 0, "host": "h", "port": 1, "rack": None}],
        "topics": [
            {"error_code": 0, "name": "t", "is_internal": False, "partitions": [
                {"error_code": 0, "partition_index": 0, "leader_id": 0, "leader_epoch": 0,
                 "replica_nodes": [0], "isr_nodes": [0], "offline_replicas": []},
                {"error_code": 5, "partition_index": 1, "leader_id": -1, "leader_epoch": 0,
                 "replica_nodes": [0], "isr_nodes": [], "offline_replicas": []}]},
            {"error_code": 3, "name": "gone", "is_internal": False, "partitions": []}]})
    c = Cluster.from_response(body)
    assert c.partition_count("t") == 2 and c.available_partitions("t") == [0]
    assert c.leader_for(TopicPartition("t", 1)) is None
    assert isinstance(c.topic_error("gone"), UnknownTopicOrPartition)


def test_topic_ids_from_a_v12_response_both_ways():
    tid = uuid.uuid4()
    body = roundtrip_response(3, 12, {
        "throttle_time_ms": 0, "cluster_id": "c", "controller_id": 0,
        "brokers": [{"node_id": 0, "host": "h", "port": 1, "rack": None}],
        "topics": [
            {"error_code": 0, "name": "t", "topic_id": tid, "is_internal": False, "partitions": [
                {"error_code": 0, "partition_index": 0, "leader_id": 0, "leader_epoch": 2,
                 "replica_nodes": [0], "isr_nodes": [0], "offline_replicas": []}]},
            {"error_code": 3, "name": "gone", "topic_id": uuid.UUID(int=0), "is_internal": False,
             "partitions": []},
            {"error_code": UnknownTopicId.code, "name": None, "topic_id": uuid.uuid4(),
             "is_internal": False, "partitions": []}]})
    c = Cluster.from_response(body)
    assert c.topic_id("t") == tid and c.topic_name(tid) == "t"
    assert c.topic_id("gone") is None and c.topic_id("nope") is None
    assert c.topic_name(uuid.uuid4()) is None and c.topic_ids == {"t": tid}
    assert c.leader_for(TopicPartition("t", 0)) == 0 and c.partition_count("t") == 1
    assert isinstance(c.topic_error("gone"), UnknownTopicOrPartition)


def test_responses_before_v10_carry_no_topic_ids():
    c = Cluster.from_response(metadata_response({("t", 0): 0}, version=9))
    assert c.partition_count("t") == 1 and c.topic_id("t") is None and c.topic_ids == {}


def test_refresh_on_demand_with_backoff_and_by_age():
    cfg = ClientConfig(bootstrap_servers="h", retry_backoff_ms=100, metadata_max_age_ms=10_000)
    md = Metadata(cfg)
    assert md.time_to_next_update(0) == 0  # nothing known yet
    md.attempt_started(0)
    md.failed_update(ConnectionError("down"), 5)
    assert md.time_to_next_update(50) == 50  # retry.backoff.ms after the failed attempt
    md.update(metadata_response({("t", 0): 0}), 100)
    assert not md.update_requested() and md.version == 1
    assert md.time_to_next_update(100) == 10_000  # metadata.max.age.ms
    md.attempt_started(200)
    md.request_update()  # e.g. NOT_LEADER_OR_FOLLOWER
    assert md.time_to_next_update(250) == 50


def test_a_new_topic_requests_an_update_and_is_asked_for():
    md = Metadata(ClientConfig(bootstrap_servers="h"))
    md.update(metadata_response({("t", 0): 0}), 0)
    md.add_topics("new")
    assert md.update_requested()
    assert md.request_body()["topics"] == [{"name": "new"}]


def test_an_answer_to_a_request_sent_before_a_topic_was_added_keeps_what_was_known_of_it():
    md = Metadata(ClientConfig(bootstrap_servers="h"))
    md.add_topics("t")
    md.update(metadata_response({("t", 0): 0, ("t", 1): 1}), 0)
    assert not md.update_requested() and md.unasked == frozenset()
    # A request that went out without "t" (e.g. the bootstrap refresh) answers late: only "u".
    md.update(metadata_response({("u", 0): 1}), 10)
    c = md.cluster
    assert c.leader_for(TopicPartition("t", 1)) == 1 and c.partition_count("t") == 2
    assert c.leader_for(TopicPartition("u", 0)) == 1
    assert md.update_requested() and md.unasked == {"t"}  # and "t" is asked for again
    assert {"name": "t"} in md.request_body()["topics"]
    # An answer that does mention it wins, errors included.
    md.update(roundtrip_response(3, 8, {
        "throttle_time_ms": 0, "cluster_id": None, "controller_id": 0,
        "brokers": [{"node_id": 0, "host": "h", "port": 1, "rack": None}],
        "topics": [{"error_code": 3, "name": "t", "is_internal": False, "partitions": []}]}), 20)
    assert md.cluster.partition_count("t") is None
    assert isinstance(md.cluster.topic_error("t"), UnknownTopicOrPartition)
    assert not md.update_requested() and md.unasked == frozenset()
