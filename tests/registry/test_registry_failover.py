"""The schema registry survives ``kill -9`` of the ``_schemas`` partition's leader.

Schemas registered before the kill are still served by the other brokers with the same
ids and versions; new registrations go on through each survivor and get fresh ids that
both survivors agree on; a client given every broker's URL (the dead one first) fails
over by itself. Judged by confluent-kafka's ``SchemaRegistryClient``.
"""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from connector.client import Admin
from connector.cluster import EmbeddedCluster

pytestmark = [pytest.mark.integration, pytest.mark.cluster]  # starts controller + broker processes


def schema(i: int) -> str:
    return json.dumps({"type": "record", "name": f"Event{i}", "namespace": "pyq.failover",
                       "fields": [{"name": "n", "type": "long"}]})


def schemas_leader(cluster: EmbeddedCluster, exclude: int | None = None) -> int:
    """The leader of _schemas-0 (other than ``exclude``), waiting for one to be elected."""
    deadline = time.monotonic() + 30
    while True:
        with Admin(bootstrap_servers=cluster.broker(0 if exclude != 0 else 1).bootstrap_servers) as admin:
            leader = admin.describe_topics(["_schemas"])["_schemas"].partitions[0].leader
        if leader >= 0 and leader != exclude:
            return leader
        assert time.monotonic() < deadline, "no new leader of _schemas in 30 s"
        time.sleep(0.1)


def test_kill_9_of_the_schemas_leader_loses_nothing() -> None:
    with EmbeddedCluster(brokers=3, schema_registry=True) as cluster:
        urls = [cluster.broker(i).schema_registry_url or "" for i in range(3)]
        assert all(urls)
        first = SchemaRegistryClient({"url": urls[0]})
        before = {f"events-{i}": first.register_schema(f"events-{i}", Schema(schema(i), "AVRO"))
                  for i in range(10)}
        first.register_schema("events-0", Schema(json.dumps({
            "type": "record", "name": "Event0", "namespace": "pyq.failover",
            "fields": [{"name": "n", "type": "long"},
                       {"name": "tag", "type": "string", "default": ""}]}), "AVRO"))
        texts = {sid: first.get_schema(sid).schema_str for sid in before.values()}

        leader = schemas_leader(cluster)
        cluster.broker(leader).kill()  # SIGKILL, by its pid
        survivors = [i for i in range(3) if i != leader]
        assert schemas_leader(cluster, exclude=leader) in survivors

        for broker in survivors:
            client = SchemaRegistryClient({"url": urls[broker]})
            for subject, sid in before.items():
                assert client.get_schema(sid).schema_str == texts[sid]
                assert client.get_versions(subject) == ([1, 2] if subject == "events-0" else [1])
                assert client.get_version(subject, 1).schema_id == sid
        # New registrations through each survivor: fresh ids, seen by the other survivor.
        fresh = {}
        for n, broker in enumerate(survivors):
            client = SchemaRegistryClient({"url": urls[broker]})
            fresh[f"after-{broker}"] = client.register_schema(f"after-{broker}",
                                                              Schema(schema(100 + n), "AVRO"))
        assert len(set(fresh.values())) == 2 and min(fresh.values()) > max(before.values())
        for broker in survivors:
            client = SchemaRegistryClient({"url": urls[broker]})
            for subject, sid in fresh.items():
                assert client.get_latest_version(subject).schema_id == sid
        # A client with every URL, the dead broker's first, fails over to a live one.
        everyone = SchemaRegistryClient({"url": ",".join([urls[leader], *(urls[b] for b in survivors)])})
        assert everyone.register_schema("after-all", Schema(schema(200), "AVRO")) > max(fresh.values())
        assert everyone.get_schema(before["events-3"]).schema_str == texts[before["events-3"]]
        assert cluster.schema_registry_url.split(",") == [urls[b] for b in survivors]
