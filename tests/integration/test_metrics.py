"""The Prometheus endpoint (``--override metrics.port=0``) of broker and controller
processes, scraped over HTTP and parsed by prometheus_client's own text-format parser."""

from __future__ import annotations

import subprocess
import sys

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from tests.metrics import scrape, value
from tests.wire import create_topic, partition_states, wait_for, wait_for_topic_everywhere

pytestmark = pytest.mark.integration


def test_metrics_are_off_by_default(broker_factory):
    broker = broker_factory()
    assert broker.metrics_port is None
    assert "metrics on" not in broker.output()


def test_request_counts_grow_after_produce_and_fetch(broker_factory):
    broker = broker_factory(overrides={"metrics.port": "0"})
    assert broker.metrics_port
    create_topic(broker.port, "metered", partitions=1)
    before = scrape(broker.metrics_port)

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all", linger_ms=0)
    for i in range(20):
        producer.send("metered", f"record-{i}".encode() * 10).get(timeout=30)
    during = scrape(broker.metrics_port)  # the producer's connection is still open
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, consumer_timeout_ms=5000)
    tp = TopicPartition("metered", 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    assert len(list(consumer)) == 20
    consumer.close()
    after = scrape(broker.metrics_port)

    assert value(after, "pyq_requests_total", api="Produce") - value(
        before, "pyq_requests_total", api="Produce") >= 20
    assert value(after, "pyq_requests_total", api="Fetch") > value(
        before, "pyq_requests_total", api="Fetch")
    # The histogram agrees with the counter, and its buckets are cumulative.
    produce = value(after, "pyq_requests_total", api="Produce")
    assert value(after, "pyq_request_latency_seconds_count", api="Produce") == produce
    assert value(after, "pyq_request_latency_seconds_bucket", api="Produce", le="+Inf") == produce
    assert value(after, "pyq_request_latency_seconds_sum", api="Produce") > 0
    assert (value(after, "pyq_request_latency_seconds_bucket", api="Produce", le="0.001")
            <= value(after, "pyq_request_latency_seconds_bucket", api="Produce", le="0.1"))
    # Bytes in and out: at least the values produced, and the fetched batches.
    assert value(after, "pyq_request_bytes_total", api="Produce") - value(
        before, "pyq_request_bytes_total", api="Produce") >= 20 * 90
    assert value(after, "pyq_response_bytes_total", api="Fetch") >= 20 * 90
    assert value(during, "pyq_connections", listener="PLAINTEXT") >= 1
    # Purgatories, timers and partitions are there (values depend on timing).
    for kind in ("Produce", "Fetch", "DeleteRecords", "Heartbeat", "Rebalance",
                 "TransactionTimeout"):
        assert ("pyq_purgatory_size", (("purgatory", kind),)) in after
        assert ("pyq_purgatory_delayed_operations", (("purgatory", kind),)) in after
    assert any(name == "pyq_timer_tasks" for name, _ in after)
    assert value(after, "pyq_leader_partitions") == 1
    assert value(after, "pyq_under_replicated_partitions") == 0
    # A single broker embeds its controller, and shows its metrics too.
    assert value(after, "pyq_controller_brokers", state="alive") == 1
    assert value(after, "pyq_controller_offline_partitions") == 0


@pytest.mark.cluster
def test_under_replicated_while_a_follower_is_stopped(cluster_factory):
    cluster = cluster_factory(3, overrides={"metrics.port": "0", "replica.lag.time.max.ms": "1000"})
    assert cluster.controller.metrics_port and all(b.metrics_port for b in cluster.brokers)
    create_topic(cluster.brokers[0].port, "watched", partitions=1, replication_factor=3)
    wait_for_topic_everywhere(cluster.bootstrap_servers, "watched", 1)
    leader_id, isr, _ = wait_for(lambda: (s := partition_states(cluster.brokers[0].port, "watched"))
                                 and len(s[0][1]) == 3 and s[0], what="a full ISR")
    leader = cluster.broker(leader_id)
    follower = next(b for b in cluster.brokers if b.broker_id != leader_id)
    assert value(scrape(leader.metrics_port), "pyq_under_replicated_partitions") == 0

    follower.pause()  # SIGSTOP: alive, silent
    try:
        wait_for(lambda: value(scrape(leader.metrics_port), "pyq_under_replicated_partitions") >= 1,
                 timeout=30, what="the leader to report an under-replicated partition")
        leader_samples = scrape(leader.metrics_port)
        assert value(leader_samples, "pyq_isr_shrinks_total") >= 1
        wait_for(lambda: value(scrape(cluster.controller.metrics_port),
                               "pyq_controller_under_replicated_partitions") >= 1,
                 timeout=30, what="the controller to see the smaller ISR")
        controller = scrape(cluster.controller.metrics_port)
        assert value(controller, "pyq_controller_offline_partitions") == 0  # a leader remains
        assert value(controller, "pyq_requests_total", api="BrokerHeartbeat") > 0
        assert value(controller, "pyq_requests_total", api="AlterPartition") >= 1
        assert value(controller, "pyq_connections", listener="CONTROLLER") >= 2
    finally:
        follower.resume()  # SIGCONT
    wait_for(lambda: value(scrape(leader.metrics_port), "pyq_under_replicated_partitions") == 0,
             timeout=60, what="the follower to rejoin the ISR")
    assert value(scrape(leader.metrics_port), "pyq_isr_expands_total") >= 1


@pytest.mark.parametrize("argv, message", [
    (["--override", "metrics.port=70000"], "metrics.port=70000 is not allowed: must be 0..65535"),
    (["controller", "--override", "metrics.port=x"], "metrics.port=x is not allowed"),
    (["controller", "--override", "log.segment.bytes=1"], "the controller takes metrics.port=N and"),
])
def test_an_invalid_metrics_option_is_refused_at_start(tmp_path, argv, message):
    out = subprocess.run([sys.executable, "-m", "broker_sim", *argv[:-2], "--data-dir", str(tmp_path),
                          *argv[-2:]], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert message in out.stderr
