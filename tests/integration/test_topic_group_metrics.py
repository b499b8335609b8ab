"""Per topic, partition and group metrics on a broker's Prometheus endpoint, under
kafka_exporter's names beside pyq's own, scraped from a broker process over HTTP."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata
from prometheus_client.parser import text_string_to_metric_families

from broker_sim.process import BrokerProcess
from tests.metrics import Samples, scrape, value
from tests.wire import create_topic, wait_for, wait_for_topic_everywhere

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


DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "pyq-dashboard.json"
_PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and",
                 "or", "unless", "offset"}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: what is left once strings, label
    matchers, range durations, label lists of by/without/on/ignoring/group_* and function
    or aggregation names (an identifier followed by a parenthesis) are taken out; in
    Grafana's ``label_values(metric, label)`` the label is not a metric."""
    expr = re.sub(r"label_values\(([^,()]+),[^)]*\)", r"label_values(\1)", expr)
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    expr = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", expr):
        if not re.match(r"\s*\(", expr[m.end():]) and m.group() not in _PROMQL_WORDS:
            names.add(m.group())
    return names


def test_metric_names_of_a_promql_expression():
    assert metric_names('histogram_quantile(0.99, sum by (api, le) '
                        '(rate(pyq_request_latency_seconds_bucket{api="Fetch"}[5m])))') == {
        "pyq_request_latency_seconds_bucket"}
    assert metric_names('a{t=~"$topic"} - on (topic, partition) group_right b') == {"a", "b"}
    assert metric_names("count(x == 0) or vector(0)") == {"x"}
    assert metric_names("label_values(kafka_consumergroup_lag, consumergroup)") == {
        "kafka_consumergroup_lag"}


def test_every_dashboard_query_names_a_served_metric(broker):
    """Each panel's expr and each variable's query of docs/grafana/pyq-dashboard.json names
    only sample names the endpoint serves (after the topic and group above exist)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/metrics", timeout=10) as r:
        served = {s.name for f in text_string_to_metric_families(r.read().decode())
                  for s in f.samples}
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [(p["title"], t["expr"]) for p in dashboard["panels"] for t in p["targets"]]
    queries += [(v["name"], v["query"]["query"]) for v in dashboard["templating"]["list"]]
    assert len(queries) >= 20
    unknown = {(title, name) for title, expr in queries for name in metric_names(expr)
               if name not in served}
    assert not unknown, f"dashboard queries name metrics the endpoint does not serve: {unknown}"
    used = {name for _, expr in queries for name in metric_names(expr)}
    assert {"pyq_topic_partition_bytes_in_total", "kafka_consumergroup_lag_sum",
            "kafka_topic_partition_under_replicated_partition",
            "pyq_request_latency_seconds_bucket"} <= used


@pytest.mark.cluster
def test_over_a_cluster_each_partition_and_group_is_reported_once(cluster_factory):
    """Each broker reports the partitions it leads and the groups it coordinates: over all
    brokers, every partition's kafka_topic_* series and every group's series appear once."""
    cluster = cluster_factory(3, overrides={"metrics.port": "0"})
    create_topic(cluster.brokers[0].port, "spread", partitions=6, replication_factor=3)
    wait_for_topic_everywhere(cluster.bootstrap_servers, "spread", 6)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", linger_ms=0)
    for p in range(6):
        for _ in range(p + 1):
            producer.send("spread", VALUE, partition=p).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="spread-group",
                             enable_auto_commit=False)
    consumer.commit({TopicPartition("spread", p): OffsetAndMetadata(1, "", -1) for p in range(6)})
    consumer.close()

    def reported() -> list[Samples]:
        return [scrape(b.metrics_port) for b in cluster.brokers if b.metrics_port]

    def once_each(all_samples: list[Samples]) -> dict[int, float] | None:
        """partition -> current offset if every partition is reported by exactly one broker."""
        seen: dict[int, list[float]] = {}
        for s in all_samples:
            for (name, labels), v in s.items():
                d = dict(labels)
                if name == "kafka_topic_partition_current_offset" and d["topic"] == "spread":
                    seen.setdefault(int(d["partition"]), []).append(v)
        ok = sorted(seen) == list(range(6)) and all(len(v) == 1 for v in seen.values())
        return {p: v[0] for p, v in seen.items()} if ok else None

    # every follower in sync: lag is known on the coordinator (it hosts every replica)
    offsets = wait_for(lambda: (o := once_each(reported())) and all(
        o[p] == p + 1 for p in range(6)) and o or None, what="each partition reported once")
    assert offsets == {p: p + 1 for p in range(6)}
    samples = wait_for(lambda: (r := reported()) and all(
        value(s, "pyq_log_end_offset", topic="spread", partition="5") == 6 for s in r) and r or None,
        what="every replica caught up")
    assert sum(value(s, "kafka_topic_partitions", topic="spread") for s in samples) == 6
    assert [value(s, "kafka_brokers") for s in samples] == [3, 3, 3]
    g = {"consumergroup": "spread-group", "topic": "spread"}
    coordinators = [s for s in samples if ("kafka_consumergroup_current_offset_sum",
                                           tuple(sorted(g.items()))) in s]
    assert len(coordinators) == 1
    assert value(coordinators[0], "kafka_consumergroup_current_offset_sum", **g) == 6
    # lag: the high watermarks 1..6 minus the committed 1 each = 0+1+2+3+4+5
    wait_for(lambda: value(scrape_coordinator(cluster, g), "kafka_consumergroup_lag_sum", **g) == 15
             or None, what="the coordinator's lag from its replicas' high watermarks")


def scrape_coordinator(cluster, g: dict[str, str]) -> Samples:
    for b in cluster.brokers:
        s = scrape(b.metrics_port)
        if ("kafka_consumergroup_current_offset_sum", tuple(sorted(g.items()))) in s:
            return s
    return {}
