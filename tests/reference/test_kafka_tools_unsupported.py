"""What Kafka 4's tools cannot do on pyq, and how they say so.

pyq does not move replicas between brokers: it has no AlterPartitionReassignments (45) or
ListPartitionReassignments (46) and does not advertise them. ``kafka-reassign-partitions``
then stops before changing anything, with Kafka's own UnsupportedVersionException naming
the API, and exit status 1 — for ``--execute``, ``--verify``, ``--cancel`` and ``--list``
alike, since each first lists the reassignments in progress. Only ``--generate``, which
reads topics and brokers, runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from connector.client import Admin
from connector.cluster import EmbeddedCluster
from reference.kafka_tools import run_tool

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

REFUSED = ("Error: org.apache.kafka.common.errors.UnsupportedVersionException: "
           "The node does not support LIST_PARTITION_REASSIGNMENTS")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cluster = EmbeddedCluster(brokers=2, data_dir=tmp_path_factory.mktemp("pyq-unsupported-tools"))
    cluster.start()
    try:
        yield cluster.bootstrap_servers
    finally:
        cluster.stop()


def test_kafka_reassign_partitions_stops_naming_the_api_pyq_lacks(servers: str, tmp_path: Path) -> None:
    with Admin({"bootstrap.servers": servers}) as admin:
        admin.create_topic("kt-reassign", 1, 1)
        [before] = admin.describe_topics(["kt-reassign"])["kt-reassign"].partitions[0].replicas
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "kt-reassign", "partition": 0, "replicas": [1 - before]}]}))
    for action in (["--execute", "--reassignment-json-file", str(plan)],
                   ["--verify", "--reassignment-json-file", str(plan)],
                   ["--cancel", "--reassignment-json-file", str(plan)], ["--list"]):
        done = run_tool("kafka-reassign-partitions", "--bootstrap-server", servers, *action, check=False)
        assert done.returncode == 1 and done.stdout.startswith(REFUSED), (action, done.stdout[:500])
    with Admin({"bootstrap.servers": servers}) as admin:
        assert admin.describe_topics(["kt-reassign"])["kt-reassign"].partitions[0].replicas == (before,)
