"""Apache Kafka's command-line tools (Kafka 4) on a 3-broker pyq cluster secured with SASL_SSL.

The cluster is secured as the session's Kafka is (:func:`tests.secured.secured_pyq_cluster`):
SCRAM-SHA-512 over TLS with a CA made for the module, pyq's authorizer, ``admin`` a super
user and nothing allowed to anyone else unless an ACL says so. Every tool runs as an
operator would run it against such a cluster, with a client properties file
(``--command-config``, which Kafka 4.4's console producer and consumer take too in place
of the deprecated ``--producer.config`` / ``--consumer.config``) holding the SASL login
and a PEM trust store for the CA; what it prints is checked against what pyq's client reads
back as ``admin``, or the other way round. ``bob`` gets only the ACLs ``kafka-acls`` gives
him, and a tool run as bob beyond them ends with Kafka's authorization error, named as
Kafka names it, rather than hanging or crashing.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from connector.client import Admin, Producer
from connector.cluster import EmbeddedCluster
from reference.kafka_tools import java_client_properties, run_tool
from tests.reference.test_kafka_tools_on_pyq import table
from tests.secured import secured_pyq_cluster
from tests.wire import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.cluster]


class SecuredTools:
    """Kafka's tools against one secured pyq cluster, as one of its users.

    Each user's properties file is written once, in the module's directory; ``admin`` is a
    super user, every other user may do only what an ACL allows."""

    def __init__(self, cluster: EmbeddedCluster, directory: Path) -> None:
        self.cluster = cluster
        self.directory = directory
        self.servers = cluster.bootstrap_servers

    def options(self, user: str = "admin") -> dict[str, object]:
        return self.cluster.client_options(user)

    def config(self, user: str = "admin") -> str:
        path = self.directory / f"{user}.properties"
        if not path.exists():
            path.write_text(java_client_properties(self.options(user)))
        return str(path)

    def run(self, name: str, *args: str, user: str = "admin", input: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        """``name --bootstrap-server ... --command-config <user's file> args``."""
        return run_tool(name, "--bootstrap-server", self.servers, "--command-config", self.config(user),
                        *args, input=input, check=check)

    def __call__(self, name: str, *args: str, user: str = "admin", input: str | None = None) -> str:
        return self.run(name, *args, user=user, input=input).stdout


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredTools]:
    cluster = secured_pyq_cluster(tmp_path_factory.mktemp("pyq-secured-tools"), brokers=3)
    cluster.start()
    try:
        yield SecuredTools(cluster, tmp_path_factory.mktemp("tool-configs"))
    finally:
        cluster.stop()


def produce(tools: SecuredTools, topic: str, count: int, partitions: int) -> None:
    with Producer({**tools.options(), "acks": "all"}) as producer:
        futures = [producer.send(topic, b"value-%d" % i, key=b"key-%d" % i, partition=i % partitions)
                   for i in range(count)]
        producer.flush()
        for f in futures:
            f.result(30)


def test_kafka_topics_creates_describes_and_deletes(tools: SecuredTools) -> None:
    tools("kafka-topics", "--create", "--topic", "ks-orders", "--partitions", "3",
          "--replication-factor", "3", "--config", "retention.ms=3600000")
    described = tools("kafka-topics", "--describe", "--topic", "ks-orders")
    assert "PartitionCount: 3" in described and "ReplicationFactor: 3" in described
    assert "retention.ms=3600000" in described
    rows = re.findall(r"Partition: (\d+)\s+Leader: (\d+)\s+Replicas: ([\d,]+)\s+Isr: ([\d,]+)", described)
    with Admin(tools.options()) as admin:
        topic = admin.describe_topics(["ks-orders"])["ks-orders"]
        ours = {p.partition: (p.leader, sorted(p.replicas)) for p in topic.partitions}
    assert {int(p): (int(leader), sorted(int(r) for r in replicas.split(",")))
            for p, leader, replicas, _ in rows} == ours
    assert sorted(ours) == [0, 1, 2]
    assert "ks-orders" in tools("kafka-topics", "--list").split()

    tools("kafka-topics", "--delete", "--topic", "ks-orders")
    wait_for(lambda: "ks-orders" not in tools("kafka-topics", "--list").split(), 20)


def test_console_producer_and_consumer_with_a_group_then_reset_its_offsets(tools: SecuredTools) -> None:
    with Admin(tools.options()) as admin:
        admin.create_topic("ks-console", 2, 3)
    lines = "".join(f"k{i}\tv{i}\n" for i in range(20))
    tools("kafka-console-producer", "--topic", "ks-console", "--reader-property", "parse.key=true",
          "--producer-property", "acks=all", input=lines)
    out = tools("kafka-console-consumer", "--topic", "ks-console", "--group", "ks-console-g",
                "--from-beginning", "--max-messages", "20", "--formatter-property", "print.key=true")
    got = sorted(line.split("\t") for line in out.splitlines() if line.count("\t") == 1)
    assert got == sorted([f"k{i}", f"v{i}"] for i in range(20))

    rows = table(tools("kafka-consumer-groups", "--describe", "--group", "ks-console-g"))
    with Admin(tools.options()) as admin:
        committed = admin.fetch_offsets("ks-console-g")
    assert {(r["TOPIC"], int(r["PARTITION"])): int(r["CURRENT-OFFSET"]) for r in rows} == {
        (tp.topic, tp.partition): v.offset for tp, v in committed.items()}
    assert sum(v.offset for v in committed.values()) == 20 and all(r["LAG"] == "0" for r in rows)

    reset = table(tools("kafka-consumer-groups", "--reset-offsets", "--group", "ks-console-g",
                        "--topic", "ks-console", "--to-earliest", "--execute"))
    assert sorted((int(r["PARTITION"]), int(r["NEW-OFFSET"])) for r in reset) == [(0, 0), (1, 0)]
    with Admin(tools.options()) as admin:
        assert sorted((tp.partition, v.offset) for tp, v in admin.fetch_offsets("ks-console-g").items()) \
            == [(0, 0), (1, 0)]


def test_kafka_configs_alters_and_describes_a_topic(tools: SecuredTools) -> None:
    with Admin(tools.options()) as admin:
        admin.create_topic("ks-configs", 1, 3)
    tools("kafka-configs", "--alter", "--entity-type", "topics", "--entity-name", "ks-configs",
          "--add-config", "retention.ms=123456,cleanup.policy=compact")
    described = tools("kafka-configs", "--describe", "--entity-type", "topics", "--entity-name", "ks-configs")
    assert "retention.ms=123456" in described and "cleanup.policy=compact" in described
    with Admin(tools.options()) as admin:
        [configs] = admin.describe_configs([("topic", "ks-configs")]).values()
    assert configs["retention.ms"].value == "123456"


def test_get_offsets_and_delete_records(tools: SecuredTools, tmp_path: Path) -> None:
    with Admin(tools.options()) as admin:
        admin.create_topic("ks-offsets", 3, 3)
    produce(tools, "ks-offsets", 30, 3)
    latest = tools("kafka-get-offsets", "--topic", "ks-offsets")
    assert sorted(latest.split()) == ["ks-offsets:0:10", "ks-offsets:1:10", "ks-offsets:2:10"]

    plan = tmp_path / "delete.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "ks-offsets", "partition": 2, "offset": 6}]}))
    assert "low_watermark: 6" in tools("kafka-delete-records", "--offset-json-file", str(plan))
    with Admin(tools.options()) as admin:
        [earliest] = admin.list_offsets({("ks-offsets", 2): "earliest"}).values()
    assert earliest.offset == 6
    assert "ks-offsets:2:6" in tools("kafka-get-offsets", "--topic", "ks-offsets", "--time", "-2").split()


def test_kafka_transactions_lists_a_pyq_transaction(tools: SecuredTools) -> None:
    with Admin(tools.options()) as admin:
        admin.create_topic("ks-txn", 1, 3)
    with Producer({**tools.options(), "transactional.id": "ks-txn-1"}) as producer:
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.send("ks-txn", b"a")
        producer.commit_transaction(30)
    listed = tools("kafka-transactions", "list")
    [row] = [line.split() for line in listed.splitlines() if line.startswith("ks-txn-1")]
    assert row[3] == "CompleteCommit"


def test_kafka_log_dirs_reports_every_replica(tools: SecuredTools) -> None:
    with Admin(tools.options()) as admin:
        admin.create_topic("ks-logdirs", 2, 3)
    produce(tools, "ks-logdirs", 20, 2)
    report = json.loads(tools("kafka-log-dirs", "--describe", "--topic-list", "ks-logdirs").splitlines()[-1])
    assert sorted(b["broker"] for b in report["brokers"]) == [0, 1, 2]
    for broker in report["brokers"]:
        [log_dir] = broker["logDirs"]
        assert log_dir["error"] is None
        assert Path(log_dir["logDir"]).is_relative_to(tools.cluster.broker(broker["broker"]).data_dir.absolute())
        assert sorted(p["partition"] for p in log_dir["partitions"]) == ["ks-logdirs-0", "ks-logdirs-1"]
        assert all(p["size"] > 0 for p in log_dir["partitions"])


def test_kafka_cluster_and_kafka_features_describe_the_cluster(tools: SecuredTools) -> None:
    out = run_tool("kafka-cluster", "cluster-id", "--bootstrap-server", tools.servers,
                   "--command-config", tools.config()).stdout
    with Admin(tools.options()) as admin:
        assert out.strip() == f"Cluster ID: {admin.describe_cluster().cluster_id}"
    described = tools("kafka-features", "describe")
    features = {m["Feature"]: m for m in (
        dict(re.findall(r"(\w+): (\S+)", line)) for line in described.splitlines() if line.strip())}
    assert (features["group.version"]["SupportedMaxVersion"],
            features["group.version"]["FinalizedVersionLevel"]) == ("1", "1")
    assert features["transaction.version"]["FinalizedVersionLevel"] == "0"


def test_a_user_without_the_acls_gets_kafkas_authorization_errors(tools: SecuredTools, tmp_path: Path) -> None:
    with Admin(tools.options()) as admin:
        admin.create_topic("ks-bob", 1, 3)
        admin.create_topic("ks-bob-out", 1, 3)
    produce(tools, "ks-bob", 5, 1)
    for args in (["--operation", "Read", "--topic", "ks-bob"],
                 ["--operation", "Read", "--group", "ks-bob-g"]):
        tools("kafka-acls", "--add", "--allow-principal", "User:bob", *args)
    assert "User:bob" in tools("kafka-acls", "--list", "--topic", "ks-bob")

    # what the ACLs allow: read the topic with his group; describing it also reads its
    # configs, which Read does not allow until DescribeConfigs is added
    refused = tools.run("kafka-topics", "--describe", "--topic", "ks-bob", user="bob", check=False)
    assert refused.returncode == 1 and "TopicAuthorizationException" in refused.stderr, refused
    tools("kafka-acls", "--add", "--allow-principal", "User:bob", "--operation", "DescribeConfigs",
          "--topic", "ks-bob")
    described = tools("kafka-topics", "--describe", "--topic", "ks-bob", user="bob")
    assert "PartitionCount: 1" in described and "ReplicationFactor: 3" in described
    out = tools("kafka-console-consumer", "--topic", "ks-bob", "--group", "ks-bob-g", "--from-beginning",
                "--max-messages", "5", user="bob")
    assert sorted(out.split()) == sorted(f"value-{i}" for i in range(5))

    # and what they do not: delete its records, create a topic, change a feature
    plan = tmp_path / "delete.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "ks-bob", "partition": 0, "offset": 2}]}))
    deleted = tools.run("kafka-delete-records", "--offset-json-file", str(plan), user="bob", check=False)
    assert "TopicAuthorizationException" in deleted.stdout, deleted
    created = tools.run("kafka-topics", "--create", "--topic", "ks-bob-2", "--partitions", "1", user="bob",
                        check=False)
    assert created.returncode != 0
    assert "TopicAuthorizationException" in created.stdout + created.stderr, created
    featured = tools.run("kafka-features", "upgrade", "--feature", "group.version=1", user="bob", check=False)
    assert featured.returncode != 0
    assert "Could not upgrade group.version to 1. Alter on the cluster is needed" in featured.stdout, featured

    # writing: an idempotent producer with Write on no topic at all may not even start
    # (KIP-679: IdempotentWrite on the cluster or Write on some topic), then with Write on
    # another topic it starts and is refused the topic it may only read
    written = tools.run("kafka-console-producer", "--topic", "ks-bob", input="nope\n", user="bob", check=False)
    assert "ClusterAuthorizationException" in written.stderr, written
    tools("kafka-acls", "--add", "--allow-principal", "User:bob", "--operation", "Write", "--topic", "ks-bob-out")
    written = tools.run("kafka-console-producer", "--topic", "ks-bob", input="nope\n", user="bob", check=False)
    assert "TopicAuthorizationException" in written.stderr, written
    tools("kafka-console-producer", "--topic", "ks-bob-out", "--producer-property", "acks=all",
          input="yes\n", user="bob")

    with Admin(tools.options()) as admin:
        def offset(topic: str, when: str) -> int:
            return next(iter(admin.list_offsets({(topic, 0): when}).values())).offset

        assert (offset("ks-bob", "earliest"), offset("ks-bob", "latest"), offset("ks-bob-out", "latest")) \
            == (0, 5, 1)
        assert "ks-bob-2" not in admin.list_topics()
