"""Retention deletes offsets a query has not read yet: fail loudly, or continue and count."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from broker_sim.process import BrokerProcess
from connector.client import Admin, Producer
from reference.kafka_cluster import KafkaCluster
from tests.conftest import BrokerUnderTest
from tests.wire import wait_for

pytestmark = pytest.mark.integration

#: Each broker's own settings here: retention checked five times a second (the default, and
#: the shared brokers', is every 5 minutes; a static setting on Kafka, so the module has its own).
BROKER_OVERRIDES = {"auto.create.topics.enable": "false", "log.retention.check.interval.ms": "200"}
#: Kafka's first retention check waits ``log.initial.task.delay.ms`` (30 s) after start.
KAFKA_OVERRIDES = {**BROKER_OVERRIDES, "log.initial.task.delay.ms": "0"}
#: 1 MiB segments (Kafka's smallest ``segment.bytes``) of ~1 KB records: retention deletes
#: the oldest segments, a thousand records each, once the log holds more than ~2.5 MB.
TOPIC_CONFIGS = {"segment.bytes": str(1024 * 1024), "retention.bytes": str(2_500_000)}
PADDING = b"." * 1000


@pytest.fixture(scope="module", params=["pyq", "kafka"])
def broker_under_test(request, tmp_path_factory) -> Iterator[BrokerUnderTest]:
    """Conftest's ``broker_under_test`` with ``BROKER_OVERRIDES``: a pyq broker, then an Apache
    Kafka node (``KAFKA_OVERRIDES``), of this module's own."""
    directory = tmp_path_factory.mktemp(f"retention-{request.param}")
    if request.param == "kafka":
        cluster = KafkaCluster(directory, 1, overrides=KAFKA_OVERRIDES).start()
        yield BrokerUnderTest("kafka", cluster.bootstrap_servers)
        cluster.stop()
    else:
        proc = BrokerProcess(directory, overrides=BROKER_OVERRIDES).start()
        yield BrokerUnderTest("pyq", proc.bootstrap_servers)
        proc.stop()


def produce(bootstrap: str, topic: str, n: int) -> None:
    with Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5}) as producer:
        for i in range(n):
            producer.send(topic, b"record-%06d" % i + PADDING, partition=0)
        producer.flush()


def earliest(bootstrap: str, topic: str) -> int:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        return list(admin.list_offsets({(topic, 0): "earliest"}).values())[0].offset


def planned_position(checkpoint, topic: str) -> int:
    """The end offset of the last micro-batch in the checkpoint's offset log."""
    logs = sorted((checkpoint / "offsets").iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1)
    last = [p for p in logs if p.name.isdigit()][-1].read_text().strip().splitlines()[-1]
    return json.loads(last)["offsets"][topic]["0"]


def start_query(spark, bootstrap, topic, checkpoint, fail_on_data_loss, group):
    return (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "100").option("failOnDataLoss", fail_on_data_loss)
            .option("groupId", group).load()
            .writeStream.format("noop").option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="200 milliseconds").start())


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_retention_under_a_query(spark, broker_under_test, tmp_path, fail_on_data_loss):
    bootstrap = broker_under_test.bootstrap_servers
    topic = f"retained-{fail_on_data_loss}"
    group = f"g-{fail_on_data_loss}"
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topic(topic, 1, 1, TOPIC_CONFIGS)
    produce(bootstrap, topic, 500)
    query = start_query(spark, bootstrap, topic, tmp_path / "ck", fail_on_data_loss, group)
    wait_for(lambda: any(p["numInputRows"] for p in query.recentProgress), timeout=120,
             what="a first micro-batch")
    query.stop()
    read_to = planned_position(tmp_path / "ck", topic)  # where the restarted query resumes
    assert read_to >= 100

    produce(bootstrap, topic, 5000)  # retention now deletes what the query has not read
    start = wait_for(lambda: earliest(bootstrap, topic) > read_to and earliest(bootstrap, topic),
                     timeout=30, what="retention passing the query's position")

    query = start_query(spark, bootstrap, topic, tmp_path / "ck", fail_on_data_loss, group)
    if fail_on_data_loss == "true":
        with pytest.raises(Exception) as info:
            query.awaitTermination(120)
        message = str(info.value)
        # names the partition and the lost range (from where the query stood: the replay of
        # its last planned batch, or the batch after it)
        assert f"{topic}-0" in message, message
        lost = re.search(r"\[(\d+), (\d+)\)", message)
        # retention keeps deleting after ``start`` was sampled: the gap ends at most where
        # the log starts now
        assert lost and int(lost.group(1)) <= read_to and int(lost.group(1)) < int(lost.group(2)) \
            <= earliest(bootstrap, topic), message
    else:
        wait_for(lambda: query.lastProgress and json.loads(
            query.lastProgress["sources"][0]["endOffset"])["offsets"][topic]["0"] >= start + 100,
            timeout=120, what="the query continuing past the gap")
        query.stop()
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            committed = list(admin.fetch_offsets(group).values())[0]
        counters = json.loads(committed.metadata)
        assert counters["query"] == group
        assert counters["lost"] >= start - read_to  # at least the gap at restart, counted
