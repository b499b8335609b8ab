"""Config changes take effect on running brokers, and survive restarts (real processes).

* ``min.insync.replicas`` changed through one broker refuses or accepts acks=all writes on
  the partition's leader (another broker) at once, without a restart; the change survives
  a restart of the controller and of the leader.
* ``segment.bytes`` changed at runtime applies to the segments that follow, and lowering
  ``retention.ms`` at runtime deletes the old segments at the next retention run.
* Dynamic broker configs (``log.retention.ms`` cluster-wide) and topic configs are still
  there, and in effect, after a single broker restarts.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from broker_sim.process import BrokerProcess
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import NotEnoughReplicas
from broker_sim.protocol.records import RecordBatchBuilder
from tests.metrics import scrape, value
from tests.wire import (
    WireClient,
    list_offsets_body,
    partition_states,
    produce_body,
    wait_for,
    wait_for_topic_everywhere,
)

pytestmark = pytest.mark.integration

SET, DELETE = 0, 1
HOUR_MS = 3_600_000


def batch(*values: bytes, timestamp: int | None = None) -> bytes:
    """Records keyed ``k`` (a compacted topic refuses records without a key)."""
    b = RecordBatchBuilder()
    for v in values:
        b.append(int(time.time() * 1000) if timestamp is None else timestamp, b"k", v)
    return b.build()


def alter(port: int, resource_type: int, name: str, *ops: tuple[str, int, str | None]) -> tuple[int, str]:
    """IncrementalAlterConfigs v1 sent to the broker at ``port``: (error code, message)."""
    with WireClient(port) as c:
        r = c.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {
            "resources": [{"resource_type": resource_type, "resource_name": name,
                           "configs": [{"name": n, "config_operation": op, "value": v}
                                       for n, op, v in ops]}],
            "validate_only": False})
    return r.responses[0].error_code, r.responses[0].error_message


def describe(port: int, resource_type: int, name: str) -> dict[str, tuple[str | None, int]]:
    """DescribeConfigs v4 on the broker at ``port``: {config: (value, source)}."""
    with WireClient(port) as c:
        r = c.request(ApiKey.DESCRIBE_CONFIGS, 4, {
            "resources": [{"resource_type": resource_type, "resource_name": name,
                           "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False})
    assert r.results[0].error_code == 0, r.results[0]
    return {c.name: (c.value, c.config_source) for c in r.results[0].configs}


def produce_code(port: int, topic: str, acks: int = -1) -> int:
    with WireClient(port) as c:
        r = c.request(ApiKey.PRODUCE, 8, produce_body(topic, 0, batch(b"x"), acks=acks, timeout_ms=5000))
    return r.responses[0].partition_responses[0].error_code


def earliest(port: int, topic: str) -> int:
    with WireClient(port) as c:
        r = c.request(ApiKey.LIST_OFFSETS, 5, list_offsets_body(topic, 0, -2))
    p = r.topics[0].partitions[0]
    assert p.error_code == 0, p
    return p.offset


def test_min_insync_replicas_changes_acks_all_at_once_and_survives_restarts(cluster_factory) -> None:
    cluster = cluster_factory(2, overrides={"replica.lag.time.max.ms": "2000"})
    topic = "min-isr-runtime"
    with WireClient(cluster.brokers[0].port) as c:
        r = c.request(ApiKey.CREATE_TOPICS, 4, {
            "topics": [{"name": topic, "num_partitions": 1, "replication_factor": 2,
                        "assignments": [], "configs": []}], "timeout_ms": 10_000, "validate_only": False})
    assert r.topics[0].error_code == 0
    wait_for_topic_everywhere(cluster.bootstrap_servers, topic, 1)

    def leader_port() -> int:
        leader, isr, _ = wait_for(lambda: partition_states(cluster.brokers[0].port, topic).get(0),
                                  what="a leader")
        return cluster.broker(leader).port

    def other(port: int) -> int:
        return next(b.port for b in cluster.brokers if b.port != port)

    lead = leader_port()
    wait_for(lambda: produce_code(lead, topic) == 0, what="acks=all accepted (default min ISR 2)")

    # Changed through the broker that does not lead: in effect on the leader when it returns.
    assert alter(other(lead), 2, topic, ("min.insync.replicas", SET, "3")) == (0, None)
    assert produce_code(lead, topic) == NotEnoughReplicas.code
    assert produce_code(lead, topic, acks=1) == 0  # acks=1 does not care
    for b in cluster.brokers:
        assert describe(b.port, 2, topic)["min.insync.replicas"] == ("3", 1)  # DYNAMIC_TOPIC_CONFIG

    # The controller (on its port) and the leader restart: the override is still there.
    command = cluster.controller.command
    command[command.index("--port") + 1] = str(cluster.controller.port)
    cluster.controller.stop()
    cluster.controller.start()
    restarted = next(b for b in cluster.brokers if b.port == lead)
    restarted.stop()
    restarted.start()
    wait_for(lambda: describe(restarted.port, 2, topic)["min.insync.replicas"] == ("3", 1),
             what="the restarted broker to describe the override")
    lead = leader_port()
    wait_for(lambda: produce_code(lead, topic) == NotEnoughReplicas.code,
             what="acks=all refused by the leader after the restarts")

    # Deleted: back to the default (2, the replication factor), once both are in sync again.
    assert alter(cluster.brokers[0].port, 2, topic, ("min.insync.replicas", DELETE, None)) == (0, None)
    assert describe(cluster.brokers[1].port, 2, topic)["min.insync.replicas"] == ("2", 5)  # DEFAULT
    wait_for(lambda: produce_code(leader_port(), topic) == 0, what="acks=all accepted again")


def _segments(data_dir: Path, topic: str) -> list[Path]:
    return sorted((data_dir / "logs" / f"{topic}-0").glob("*.log"))


def retention_checks(broker: BrokerProcess, n: int) -> None:
    """Until the broker has finished ``n`` more log-retention checks (its metrics endpoint)."""
    assert broker.metrics_port is not None
    port = broker.metrics_port
    start = value(scrape(port), "pyq_log_retention_checks_total")
    wait_for(lambda: value(scrape(port), "pyq_log_retention_checks_total") >= start + n,
             what=f"{n} more log-retention checks")


def test_segment_bytes_and_retention_changed_at_runtime(broker_factory, tmp_path: Path) -> None:
    data_dir = tmp_path / "b"
    broker = broker_factory(data_dir, overrides={"log.retention.check.interval.ms": "200",
                                                 "metrics.port": "0"})
    topic = "retention-runtime"
    with WireClient(broker.port) as c:
        r = c.request(ApiKey.CREATE_TOPICS, 4, {
            "topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1,
                        "assignments": [], "configs": []}], "timeout_ms": 10_000, "validate_only": False})
    assert r.topics[0].error_code == 0

    def produce_old(n: int) -> None:
        with WireClient(broker.port) as c:
            for i in range(n):
                records = batch(b"v" * 200, timestamp=int(time.time() * 1000) - 2 * HOUR_MS + i)
                r = c.request(ApiKey.PRODUCE, 8, produce_body(topic, 0, records, acks=1))
                assert r.responses[0].partition_responses[0].error_code == 0

    produce_old(3)
    assert len(_segments(data_dir, topic)) == 1  # 1 GiB segments by default
    assert alter(broker.port, 2, topic, ("segment.bytes", SET, "600")) == (0, None)
    produce_old(12)
    rolled = _segments(data_dir, topic)
    assert len(rolled) >= 4, rolled  # the new size applies to the segments that follow

    retention_checks(broker, 3)  # two-hour-old records are young for 7 days
    assert earliest(broker.port, topic) == 0
    assert alter(broker.port, 2, topic, ("retention.ms", SET, str(HOUR_MS))) == (0, None)
    wait_for(lambda: earliest(broker.port, topic) > 0, what="old segments deleted")
    # The log start moves when the shorter log is published; the files are unlinked just
    # after, once the new start is checkpointed (a reader can see the one before the other).
    wait_for(lambda: len(_segments(data_dir, topic)) == 1, what="only the active segment's file left")


def test_cleanup_policy_compact_alone_keeps_old_segments(broker_factory, tmp_path: Path) -> None:
    """Retention by time belongs to ``delete``: a ``compact`` topic keeps its segments."""
    data_dir = tmp_path / "b"
    broker = broker_factory(data_dir, overrides={"log.retention.check.interval.ms": "200",
                                                 "metrics.port": "0"})
    topic = "compact-keeps"
    with WireClient(broker.port) as c:
        r = c.request(ApiKey.CREATE_TOPICS, 4, {
            "topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                        "configs": [{"name": "cleanup.policy", "value": "compact"},
                                    {"name": "segment.bytes", "value": "600"}]}],
            "timeout_ms": 10_000, "validate_only": False})
        assert r.topics[0].error_code == 0
        for i in range(8):
            r = c.request(ApiKey.PRODUCE, 8, produce_body(
                topic, 0, batch(b"v" * 200, timestamp=int(time.time() * 1000) - 2 * HOUR_MS + i), acks=1))
            assert r.responses[0].partition_responses[0].error_code == 0
    assert alter(broker.port, 2, topic, ("retention.ms", SET, "1000")) == (0, None)
    retention_checks(broker, 4)
    assert earliest(broker.port, topic) == 0
    assert alter(broker.port, 2, topic, ("cleanup.policy", SET, "compact,delete")) == (0, None)
    wait_for(lambda: earliest(broker.port, topic) > 0, what="retention once delete is in the policy")


def test_configs_survive_a_single_broker_restart(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "b").start()
    port = broker.port
    assert port is not None
    try:
        topic = "restart-configs"
        with WireClient(port) as c:
            r = c.request(ApiKey.CREATE_TOPICS, 4, {
                "topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1,
                            "assignments": [], "configs": []}],
                "timeout_ms": 10_000, "validate_only": False})
        assert r.topics[0].error_code == 0
        assert alter(port, 2, topic, ("retention.ms", SET, "123456"),
                     ("cleanup.policy", SET, "delete,compact")) == (0, None)
        assert alter(port, 4, "", ("log.segment.bytes", SET, "2048")) == (0, None)
        assert alter(port, 4, "0", ("log.retention.bytes", SET, "99999")) == (0, None)
        code, message = alter(port, 4, "0", ("num.io.threads", SET, "9"))
        assert code == 40 and "num.io.threads" in message  # INVALID_CONFIG: static

        broker.stop()
        broker.start()
        assert broker.port == port  # a restarted broker listens where it did
        topic_configs = describe(port, 2, topic)
        assert topic_configs["retention.ms"] == ("123456", 1)  # DYNAMIC_TOPIC_CONFIG
        assert topic_configs["cleanup.policy"] == ("compact,delete", 1)
        assert topic_configs["segment.bytes"] == ("2048", 3)  # DYNAMIC_DEFAULT_BROKER_CONFIG
        assert topic_configs["retention.bytes"] == ("99999", 2)  # DYNAMIC_BROKER_CONFIG
        broker_configs = describe(port, 4, "0")
        assert broker_configs["log.segment.bytes"] == ("2048", 3)
        assert broker_configs["num.io.threads"] == ("4", 5)
        assert describe(port, 4, "") == {"log.segment.bytes": ("2048", 3)}
        # in effect: 2048-byte segments roll on the restarted broker
        with WireClient(port) as c:
            for _ in range(12):
                r = c.request(ApiKey.PRODUCE, 8, produce_body(topic, 0, batch(b"v" * 400), acks=1))
                assert r.responses[0].partition_responses[0].error_code == 0
        assert len(_segments(tmp_path / "b", topic)) >= 2
    finally:
        broker.stop()
