"""Apache Kafka's own command-line tools (Kafka 4, from its jars) on a 3-broker pyq cluster.

Each test runs a tool as an operator would (``kafka-topics --bootstrap-server ...``) and
checks what it printed against what pyq's client reads back, or the other way round: the
tools are Kafka's Java admin, producer and consumer clients, so these are also the Java
clients' tests. One cluster serves the module; tests use their own topics and groups.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from connector.client import Admin, Producer
from connector.client.metadata import TopicPartition
from connector.cluster import EmbeddedCluster
from reference.kafka_tools import run_tool
from tests.wire import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.cluster]


@pytest.fixture(scope="module")
def pyq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    cluster = EmbeddedCluster(brokers=3, data_dir=tmp_path_factory.mktemp("pyq-for-kafka-tools"),
                              overrides={"metrics.port": "0"})
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def servers(pyq: EmbeddedCluster) -> str:
    return pyq.bootstrap_servers


def tool(name: str, servers: str, *args: str, input: str | None = None) -> str:
    return run_tool(name, "--bootstrap-server", servers, *args, input=input).stdout


def table(text: str) -> list[dict[str, str]]:
    """Rows of a whitespace-aligned table whose header line starts with GROUP."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    start = next(i for i, words in enumerate(lines) if words[0] == "GROUP")
    header = lines[start]
    return [dict(zip(header, words, strict=False)) for words in lines[start + 1:]]


def produce(servers: str, topic: str, count: int, partitions: int = 3) -> None:
    with Producer({"bootstrap.servers": servers, "acks": "all"}) as producer:
        futures = [producer.send(topic, b"value-%d" % i, key=b"key-%d" % i, partition=i % partitions)
                   for i in range(count)]
        producer.flush()
        for f in futures:
            f.result(30)


def test_kafka_topics_creates_describes_alters_and_deletes(servers: str) -> None:
    tool("kafka-topics", servers, "--create", "--topic", "kt-orders", "--partitions", "3",
         "--replication-factor", "3", "--config", "retention.ms=3600000")
    described = tool("kafka-topics", servers, "--describe", "--topic", "kt-orders")
    assert "PartitionCount: 3" in described and "ReplicationFactor: 3" in described
    assert "retention.ms=3600000" in described
    rows = re.findall(r"Partition: (\d+)\s+Leader: (\d+)\s+Replicas: ([\d,]+)\s+Isr: ([\d,]+)", described)
    assert sorted(int(p) for p, *_ in rows) == [0, 1, 2]
    with Admin({"bootstrap.servers": servers}) as admin:
        topic = admin.describe_topics(["kt-orders"])["kt-orders"]
        ours = {p.partition: (p.leader, sorted(p.replicas)) for p in topic.partitions}
    assert {int(p): (int(leader), sorted(int(r) for r in replicas.split(",")))
            for p, leader, replicas, _ in rows} == ours
    assert all(sorted(isr.split(",")) == sorted(replicas.split(",")) for _, _, replicas, isr in rows)

    tool("kafka-topics", servers, "--alter", "--topic", "kt-orders", "--partitions", "5")
    with Admin({"bootstrap.servers": servers}) as admin:
        wait_for(lambda: len(admin.describe_topics(["kt-orders"])["kt-orders"].partitions) == 5, 10)
    assert "kt-orders" in tool("kafka-topics", servers, "--list").split()

    tool("kafka-topics", servers, "--delete", "--topic", "kt-orders")
    wait_for(lambda: "kt-orders" not in tool("kafka-topics", servers, "--list").split(), 20)


def requests_answered(pyq: EmbeddedCluster, api: str) -> int:
    """How many ``api`` requests the brokers answered, from their Prometheus endpoints."""
    total = 0
    for broker in pyq.brokers:
        with urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/metrics", timeout=10) as r:
            found = re.search(rf'^pyq_requests_total{{api="{api}"}} (\S+)$', r.read().decode(), re.M)
        total += int(float(found.group(1))) if found else 0
    return total


def test_kafka_topics_describes_a_page_of_partitions_at_a_time(servers: str, pyq: EmbeddedCluster) -> None:
    sizes = {"kt-pages-a": 5, "kt-pages-b": 1, "kt-pages-c": 4}
    with Admin({"bootstrap.servers": servers}) as admin:
        for name, partitions in sizes.items():
            admin.create_topic(name, partitions, 2)
        wait_for(lambda: all(len(t.partitions) == sizes[n]
                             for n, t in admin.describe_topics(list(sizes)).items()), 10)
        ours = {(n, p.partition): p.leader for n, t in admin.describe_topics(list(sizes)).items()
                for p in t.partitions}
    before = requests_answered(pyq, "DescribeTopicPartitions")
    described = tool("kafka-topics", servers, "--describe", "--topic", "kt-pages-.*",
                     "--partition-size-limit-per-response", "2")
    rows = re.findall(r"Topic: (\S+)\s+Partition: (\d+)\s+Leader: (\d+)", described)
    assert Counter((t, int(p)) for t, p, _ in rows) == Counter(list(ours))  # every partition once
    assert {(t, int(p)): int(leader) for t, p, leader in rows} == ours
    # 10 partitions two a page: a0-1 | a2-3 | a4 b0 | c0-1 | c2-3, each page a request
    assert requests_answered(pyq, "DescribeTopicPartitions") - before == 5


def test_a_replication_factor_above_the_broker_count_is_refused_with_kafkas_message(servers: str) -> None:
    done = run_tool("kafka-topics", "--bootstrap-server", servers, "--create", "--topic", "kt-rf4",
                    "--partitions", "1", "--replication-factor", "4", check=False)
    assert done.returncode != 0
    assert "InvalidReplicationFactorException" in done.stdout + done.stderr


def test_console_producer_and_consumer_carry_keys_headers_and_group_offsets(servers: str) -> None:
    tool("kafka-topics", servers, "--create", "--topic", "kt-console", "--partitions", "2",
         "--replication-factor", "3")
    lines = "".join(f"source:web,trace:t{i}\tk{i}\tv{i}\n" for i in range(20))
    tool("kafka-console-producer", servers, "--topic", "kt-console",
         "--reader-property", "parse.key=true", "--reader-property", "parse.headers=true",
         "--producer-property", "acks=all", input=lines)
    out = tool("kafka-console-consumer", servers, "--topic", "kt-console", "--group", "kt-console-g",
               "--from-beginning", "--max-messages", "20",
               "--formatter-property", "print.key=true", "--formatter-property", "print.headers=true")
    got = sorted(line.split("\t") for line in out.splitlines() if line.count("\t") == 2)
    assert got == sorted([f"source:web,trace:t{i}", f"k{i}", f"v{i}"] for i in range(20))

    # the console consumer committed its position: Kafka's group tool sees no lag
    rows = table(tool("kafka-consumer-groups", servers, "--describe", "--group", "kt-console-g"))
    assert sum(int(r["CURRENT-OFFSET"]) for r in rows) == 20
    assert all(r["LAG"] == "0" for r in rows)
    with Admin({"bootstrap.servers": servers}) as admin:
        committed = admin.fetch_offsets("kt-console-g")
    assert sum(v.offset for v in committed.values()) == 20


def test_consumer_groups_reset_delete_offsets_and_delete(servers: str) -> None:
    with Admin({"bootstrap.servers": servers}) as admin:
        admin.create_topic("kt-groups", 3, 3)
    produce(servers, "kt-groups", 30)
    tool("kafka-console-consumer", servers, "--topic", "kt-groups", "--group", "kt-g",
         "--from-beginning", "--max-messages", "30")
    assert "kt-g" in tool("kafka-consumer-groups", servers, "--list").split()

    reset = table(tool("kafka-consumer-groups", servers, "--reset-offsets", "--group", "kt-g",
                       "--topic", "kt-groups", "--to-offset", "4", "--execute"))
    assert sorted((int(r["PARTITION"]), int(r["NEW-OFFSET"])) for r in reset) == [(0, 4), (1, 4), (2, 4)]
    rows = table(tool("kafka-consumer-groups", servers, "--describe", "--group", "kt-g"))
    assert sorted((int(r["PARTITION"]), int(r["CURRENT-OFFSET"]), int(r["LAG"])) for r in rows) == [
        (0, 4, 6), (1, 4, 6), (2, 4, 6)]

    tool("kafka-consumer-groups", servers, "--delete-offsets", "--group", "kt-g",
         "--topic", "kt-groups:1")
    with Admin({"bootstrap.servers": servers}) as admin:
        left = admin.fetch_offsets("kt-g")
    assert sorted(tp.partition for tp in left) == [0, 2]

    tool("kafka-consumer-groups", servers, "--delete", "--group", "kt-g")
    assert "kt-g" not in tool("kafka-consumer-groups", servers, "--list").split()


def test_kafka_configs_alter_and_describe_a_topic(servers: str) -> None:
    with Admin({"bootstrap.servers": servers}) as admin:
        admin.create_topic("kt-configs", 1, 3)
    tool("kafka-configs", servers, "--alter", "--entity-type", "topics", "--entity-name", "kt-configs",
         "--add-config", "retention.ms=123456,cleanup.policy=compact")
    described = tool("kafka-configs", servers, "--describe", "--entity-type", "topics",
                     "--entity-name", "kt-configs")
    assert "retention.ms=123456" in described and "cleanup.policy=compact" in described
    with Admin({"bootstrap.servers": servers}) as admin:
        [configs] = admin.describe_configs([("topic", "kt-configs")]).values()
    assert configs["retention.ms"].value == "123456"

    tool("kafka-configs", servers, "--alter", "--entity-type", "topics", "--entity-name", "kt-configs",
         "--delete-config", "retention.ms")
    described = tool("kafka-configs", servers, "--describe", "--entity-type", "topics",
                     "--entity-name", "kt-configs")
    assert "retention.ms" not in described and "cleanup.policy=compact" in described


def test_get_offsets_and_delete_records(servers: str, tmp_path) -> None:
    with Admin({"bootstrap.servers": servers}) as admin:
        admin.create_topic("kt-offsets", 3, 3)
    produce(servers, "kt-offsets", 30)
    latest = tool("kafka-get-offsets", servers, "--topic", "kt-offsets")
    assert sorted(latest.split()) == ["kt-offsets:0:10", "kt-offsets:1:10", "kt-offsets:2:10"]

    plan = tmp_path / "delete.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "kt-offsets", "partition": 1, "offset": 7}]}))
    out = tool("kafka-delete-records", servers, "--offset-json-file", str(plan))
    assert "low_watermark: 7" in out
    earliest = tool("kafka-get-offsets", servers, "--topic", "kt-offsets", "--time", "-2")
    assert sorted(earliest.split()) == ["kt-offsets:0:0", "kt-offsets:1:7", "kt-offsets:2:0"]
    with Admin({"bootstrap.servers": servers}) as admin:
        ours = admin.list_offsets({("kt-offsets", 1): "earliest"})
    assert [v.offset for v in ours.values()] == [7]


def test_kafka_transactions_lists_and_describes_a_pyq_transaction(servers: str) -> None:
    with Admin({"bootstrap.servers": servers}) as admin:
        admin.create_topic("kt-txn", 1, 3)
    with Producer({"bootstrap.servers": servers, "transactional.id": "kt-txn-1"}) as producer:
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.send("kt-txn", b"a")
        producer.commit_transaction(30)
    listed = tool("kafka-transactions", servers, "list")
    [row] = [line.split() for line in listed.splitlines() if line.startswith("kt-txn-1")]
    assert row[3] == "CompleteCommit"
    described = tool("kafka-transactions", servers, "describe", "--transactional-id", "kt-txn-1")
    assert "CompleteCommit" in described


def test_kafka_cluster_prints_the_cluster_id_pyq_reports(servers: str) -> None:
    out = run_tool("kafka-cluster", "cluster-id", "--bootstrap-server", servers).stdout
    with Admin({"bootstrap.servers": servers}) as admin:
        ours = admin.describe_cluster().cluster_id
    assert out.strip() == f"Cluster ID: {ours}"


def test_producer_and_consumer_perf_tests_run_clean(servers: str) -> None:
    with Admin({"bootstrap.servers": servers}) as admin:
        admin.create_topic("kt-perf", 3, 3)
    produced = run_tool("kafka-producer-perf-test", "--topic", "kt-perf", "--num-records", "20000",
                        "--record-size", "100", "--throughput", "-1", "--producer-props",
                        f"bootstrap.servers={servers}", "acks=all").stdout
    assert re.search(r"^20000 records sent", produced, re.M), produced
    consumed = tool("kafka-consumer-perf-test", servers, "--topic", "kt-perf", "--messages", "20000",
                    "--timeout", "60000")
    header, values = [line for line in consumed.splitlines() if line.strip()][-2:]
    assert dict(zip(header.split(", "), values.split(", "), strict=False))["data.consumed.in.nMsg"] == "20000"
    with Admin({"bootstrap.servers": servers}) as admin:
        ends = admin.list_offsets({TopicPartition("kt-perf", p): "latest" for p in range(3)})
    assert sum(v.offset for v in ends.values()) == 20000


def test_kafka_log_dirs_reports_each_replicas_size(servers: str, pyq: EmbeddedCluster) -> None:
    with Admin({"bootstrap.servers": servers}) as admin:
        admin.create_topic("kt-logdirs", 2, 3)
    produce(servers, "kt-logdirs", 40, partitions=2)
    out = tool("kafka-log-dirs", servers, "--describe", "--topic-list", "kt-logdirs")
    report = json.loads(out.splitlines()[-1])
    assert sorted(b["broker"] for b in report["brokers"]) == [0, 1, 2]
    for broker in report["brokers"]:
        [log_dir] = broker["logDirs"]
        assert log_dir["error"] is None
        path = Path(log_dir["logDir"])
        assert path.is_relative_to(pyq.broker(broker["broker"]).data_dir.absolute())
        # every replica of both partitions, each holding the 20 records written to it
        sizes = {p["partition"]: p["size"] for p in log_dir["partitions"]}
        assert set(sizes) == {"kt-logdirs-0", "kt-logdirs-1"}
        on_disk = {name: sum(f.stat().st_size for f in (path / name).glob("*.log")) for name in sizes}
        assert sizes == on_disk and all(size > 20 * len(b"value-00") for size in sizes.values())
        assert all(p["offsetLag"] == 0 and not p["isFuture"] for p in log_dir["partitions"])


def test_kafka_features_describes_what_pyq_supports(servers: str) -> None:
    out = run_tool("kafka-features", "--bootstrap-server", servers, "describe").stdout
    features = {m["Feature"]: m for m in (
        dict(re.findall(r"(\w+): (\S+)", line)) for line in out.splitlines() if line.strip())}
    assert features["group.version"]["FinalizedVersionLevel"] == "1"
    assert features["group.version"]["SupportedMaxVersion"] == "1"
    assert features["transaction.version"]["SupportedMaxVersion"] == "0"


def test_describe_producers_and_find_hanging_see_an_open_transaction(servers: str) -> None:
    with Admin({"bootstrap.servers": servers}) as admin:
        admin.create_topic("kt-hanging", 1, 3)
    with Producer({"bootstrap.servers": servers, "transactional.id": "kt-hanging-1"}) as producer:
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.send("kt-hanging", b"a").result(30)
        described = tool("kafka-transactions", servers, "describe-producers", "--topic", "kt-hanging",
                         "--partition", "0")
        [row] = [line.split() for line in described.splitlines()[1:] if line.strip()]
        header = described.splitlines()[0].split()
        producer_row = dict(zip(header, row, strict=False))
        assert producer_row["CurrentTransactionStartOffset"] == "0"
        assert producer_row["LastSequence"] == "0"
        # open but not hanging: the coordinator knows the transaction and it is young
        hanging = tool("kafka-transactions", servers, "find-hanging", "--broker-id", "0",
                       "--max-transaction-timeout", "1")
        assert "kt-hanging" not in hanging
        producer.commit_transaction(30)
    after = tool("kafka-transactions", servers, "describe-producers", "--topic", "kt-hanging",
                 "--partition", "0")
    [row] = [line.split() for line in after.splitlines()[1:] if line.strip()]
    assert dict(zip(after.splitlines()[0].split(), row, strict=False))["CurrentTransactionStartOffset"] == "None"


def test_kafka_leader_election_moves_leadership_back_to_the_preferred_replica(
        servers: str, pyq: EmbeddedCluster) -> None:
    with Admin({"bootstrap.servers": servers}) as admin:
        admin.create_topic("kt-elect", 1, 3)

        def partition():
            return admin.describe_topics(["kt-elect"])["kt-elect"].partitions[0]

        preferred = partition().replicas[0]
        wait_for(lambda: partition().leader == preferred and len(partition().isr) == 3, 30)
        already = tool("kafka-leader-election", servers, "--election-type", "preferred",
                       "--topic", "kt-elect", "--partition", "0")
        assert "Valid replica already elected for partitions kt-elect-0" in already

        pyq.broker(preferred).stop()
        wait_for(lambda: partition().leader not in (preferred, -1), 30, what="a new leader")
        pyq.broker(preferred).start()
        wait_for(lambda: preferred in partition().isr, 60, what="the preferred replica back in sync")
        assert partition().leader != preferred  # nothing moves it back on its own

        out = tool("kafka-leader-election", servers, "--election-type", "preferred",
                   "--topic", "kt-elect", "--partition", "0")
        assert "Successfully completed leader election (PREFERRED) for partitions kt-elect-0" in out
        wait_for(lambda: partition().leader == preferred, 10)


def test_kafka_features_sets_a_feature_to_its_level_and_refuses_any_other(servers: str) -> None:
    for args, said in [(["upgrade", "--feature", "group.version=1"], "group.version was upgraded to 1."),
                       (["downgrade", "--feature", "group.version=1"], "group.version was downgraded to 1."),
                       (["upgrade", "--feature", "group.version=1", "--dry-run"],
                        "group.version can be upgraded to 1.")]:
        assert run_tool("kafka-features", "--bootstrap-server", servers, *args).stdout.strip() == said
    for args, said in [
            (["upgrade", "--feature", "transaction.version=2"], "Could not upgrade transaction.version to 2."),
            (["upgrade", "--feature", "transaction.version=2", "--dry-run"],
             "Can not upgrade transaction.version to 2."),
            (["disable", "--feature", "group.version"], "Could not disable group.version.")]:
        refused = run_tool("kafka-features", "--bootstrap-server", servers, *args, check=False)
        assert refused.returncode == 1 and refused.stderr.strip() == "1 out of 1 operation(s) failed."
        assert refused.stdout.startswith(f"{said} No feature was updated. Invalid update version"), refused.stdout
        assert "pyq supports only version" in refused.stdout
    described = run_tool("kafka-features", "--bootstrap-server", servers, "describe").stdout
    assert re.search(r"Feature: transaction.version\s.*FinalizedVersionLevel: 0\s", described)
    assert re.search(r"Feature: group.version\s.*FinalizedVersionLevel: 1\s", described)

