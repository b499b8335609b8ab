"""Per topic, partition and group metrics on a broker's Prometheus endpoint, under
kafka_exporter's names beside pyq's own, scraped from a broker process over HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from broker_sim.process import BrokerProcess
from tests.metrics import Samples, scrape, value
from tests.wire import create_topic, wait_for

pytestmark = pytest.mark.integration

TOPIC, GROUP = "metered-topic", "metered-group"
PER_PARTITION = {0: 30, 1: 12}
VALUE = b"v" * 100


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("metrics-broker"),
                         overrides={"metrics.port": "0"})
    proc.start()
    assert proc.port is not None
    create_topic(proc.port, TOPIC, partitions=2)
    producer = KafkaProducer(bootstrap_servers=proc.bootstrap_servers, acks="all", linger_ms=0)
    for partition, n in PER_PARTITION.items():
        for _ in range(n):
            producer.send(TOPIC, VALUE, partition=partition).get(timeout=30)
    producer.close()
    yield proc
    proc.stop()


def _by_partition(samples: Samples, name: str, **labels: str) -> dict[int, float]:
    return {p: value(samples, name, topic=TOPIC, partition=str(p), **labels)
            for p in PER_PARTITION}


def test_topic_partitions_under_kafka_exporter_names(broker):
    s = scrape(broker.metrics_port)
    assert value(s, "kafka_brokers") == 1
    assert value(s, "kafka_topic_partitions", topic=TOPIC) == 2
    assert _by_partition(s, "kafka_topic_partition_current_offset") == {0: 30, 1: 12}
    assert _by_partition(s, "kafka_topic_partition_oldest_offset") == {0: 0, 1: 0}
    assert _by_partition(s, "kafka_topic_partition_leader") == {0: 0, 1: 0}
    assert _by_partition(s, "kafka_topic_partition_replicas") == {0: 1, 1: 1}
    assert _by_partition(s, "kafka_topic_partition_in_sync_replica") == {0: 1, 1: 1}
    assert _by_partition(s, "kafka_topic_partition_under_replicated_partition") == {0: 0, 1: 0}
    assert _by_partition(s, "kafka_topic_partition_leader_is_preferred") == {0: 1, 1: 1}
    # pyq's own: what was produced, the log on disk
    assert _by_partition(s, "pyq_topic_partition_messages_in_total") == {0: 30, 1: 12}
    bytes_in = _by_partition(s, "pyq_topic_partition_bytes_in_total")
    assert bytes_in[0] >= 30 * len(VALUE) and bytes_in[1] >= 12 * len(VALUE)
    sizes = _by_partition(s, "pyq_log_size_bytes")
    assert sizes[0] >= bytes_in[0] * 0.9 and sizes[1] > 0  # batches as written
    assert _by_partition(s, "pyq_log_end_offset") == {0: 30, 1: 12}
    assert _by_partition(s, "pyq_log_start_offset") == {0: 0, 1: 0}


def test_bytes_out_counts_what_consumers_fetch(broker):
    before = _by_partition(scrape(broker.metrics_port), "pyq_topic_partition_bytes_out_total")
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, consumer_timeout_ms=5000)
    tp = TopicPartition(TOPIC, 1)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    assert len(list(consumer)) == 12
    consumer.close()
    after = _by_partition(scrape(broker.metrics_port), "pyq_topic_partition_bytes_out_total")
    assert after[1] - before[1] >= 12 * len(VALUE)
    assert after[0] == before[0]


def test_group_offsets_lag_and_members(broker):
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=broker.bootstrap_servers, group_id=GROUP,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    wait_for(lambda: consumer.poll(200) or consumer.assignment(), what="an assignment")
    consumer.commit({TopicPartition(TOPIC, 0): OffsetAndMetadata(10, "", -1),
                     TopicPartition(TOPIC, 1): OffsetAndMetadata(12, "", -1)})
    s = scrape(broker.metrics_port)
    g = {"consumergroup": GROUP}
    assert _by_partition(s, "kafka_consumergroup_current_offset", **g) == {0: 10, 1: 12}
    assert _by_partition(s, "kafka_consumergroup_lag", **g) == {0: 20, 1: 0}
    assert value(s, "kafka_consumergroup_lag_sum", topic=TOPIC, **g) == 20
    assert value(s, "kafka_consumergroup_current_offset_sum", topic=TOPIC, **g) == 22
    assert value(s, "kafka_consumergroup_members", **g) == 1

    consumer.commit({TopicPartition(TOPIC, 0): OffsetAndMetadata(30, "", -1)})
    s = scrape(broker.metrics_port)
    assert value(s, "kafka_consumergroup_lag_sum", topic=TOPIC, **g) == 0
    consumer.close()
    wait_for(lambda: value(scrape(broker.metrics_port), "kafka_consumergroup_members", **g) == 0
             or None, what="the member gone from the metrics")
