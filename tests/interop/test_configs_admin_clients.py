"""Topic and broker configs through admin clients we did not write, against a broker process.

kafka-python's ``KafkaAdminClient`` (describe_configs, alter_configs) and confluent-kafka's
``AdminClient`` (describe_configs, incremental_alter_configs) read and change a topic's
``retention.ms`` and ``cleanup.policy``; invalid values come back as INVALID_CONFIG naming
the config; a broker's configs are described with their sources.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin import ConfigSource as CkSource
from confluent_kafka.admin import NewTopic as CkNewTopic
from confluent_kafka.admin import ResourceType as CkResourceType
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient
from kafka.admin import NewTopic as KpNewTopic

pytestmark = pytest.mark.integration


@pytest.fixture
def kp_admin(shared_broker):
    admin = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap_servers)
    yield admin
    admin.close()


@pytest.fixture
def ck_admin(shared_broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": shared_broker.bootstrap_servers})


def _kp_topic(admin: KafkaAdminClient, topic: str, **kwargs) -> dict:
    return admin.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, topic)],
                                  **kwargs)["topic"][topic]


def test_kafka_python_reads_and_changes_retention_and_cleanup_policy(kp_admin) -> None:
    topic = "kp-configs"
    kp_admin.create_topics([KpNewTopic(topic, 1, 1)])
    everything = _kp_topic(kp_admin, topic, config_filter="all")
    assert everything["retention.ms"]["value"] == str(7 * 24 * 3600 * 1000)
    assert everything["retention.ms"]["config_source"] == "DEFAULT_CONFIG"
    assert everything["cleanup.policy"]["value"] == "delete"
    assert everything["min.insync.replicas"]["value"] == "1"  # 2, capped at RF 1

    result = kp_admin.alter_configs([KpConfigResource(
        ConfigResourceType.TOPIC, topic, configs={"retention.ms": "3600000",
                                                  "cleanup.policy": "compact,delete"})])
    assert result == {"topic": {topic: "OK"}}
    changed = _kp_topic(kp_admin, topic, include_synonyms=True)  # only what is set
    assert set(changed) == {"retention.ms", "cleanup.policy"}
    assert changed["retention.ms"]["value"] == "3600000"
    assert changed["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert [(s["name"], s["source"]) for s in changed["retention.ms"]["synonyms"]] == [
        ("retention.ms", "DYNAMIC_TOPIC_CONFIG"), ("log.retention.ms", "DEFAULT_CONFIG")]
    assert changed["cleanup.policy"]["value"] == "compact,delete"

    # AlterConfigs replaces the whole set: kafka-python adds back what is set and not named
    kp_admin.alter_configs([KpConfigResource(ConfigResourceType.TOPIC, topic,
                                             configs={"cleanup.policy": "delete"})])
    changed = _kp_topic(kp_admin, topic)
    assert changed["cleanup.policy"]["value"] == "delete"
    assert changed["retention.ms"]["value"] == "3600000"


def test_kafka_python_invalid_value_is_invalid_config_naming_it(kp_admin) -> None:
    topic = "kp-configs-invalid"
    kp_admin.create_topics([KpNewTopic(topic, 1, 1)])
    result = kp_admin.alter_configs([KpConfigResource(ConfigResourceType.TOPIC, topic,
                                                      configs={"retention.ms": "soon"})])
    message = result["topic"][topic]
    assert "InvalidConfigurationError" in message and "retention.ms" in message and "soon" in message
    result = kp_admin.alter_configs([KpConfigResource(ConfigResourceType.TOPIC, topic,
                                                      configs={"cleanup.policy": "keep-all"})])
    assert "InvalidConfigurationError" in result["topic"][topic]
    assert "cleanup.policy" in result["topic"][topic]
    assert _kp_topic(kp_admin, topic) == {}  # nothing was stored


def test_kafka_python_describes_the_broker(kp_admin, shared_broker) -> None:
    described = kp_admin.describe_configs([KpConfigResource(ConfigResourceType.BROKER, "0")],
                                          config_filter="all")["broker"]["0"]
    assert described["num.io.threads"]["read_only"] is True
    assert described["log.retention.ms"]["read_only"] is False
    assert described["auto.create.topics.enable"]["config_source"] == "DEFAULT_CONFIG"


def _ck_describe(admin: AdminClient, topic: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(CkResourceType.TOPIC, topic)
    return admin.describe_configs([resource])[resource].result(timeout=30)


def _ck_alter(admin: AdminClient, topic: str, *entries: ConfigEntry) -> None:
    resource = ConfigResource(CkResourceType.TOPIC, topic, incremental_configs=list(entries))
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)


def test_confluent_kafka_reads_and_changes_retention_and_cleanup_policy(ck_admin) -> None:
    topic = "ck-configs"
    ck_admin.create_topics([CkNewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(
        timeout=30)
    configs = _ck_describe(ck_admin, topic)
    assert configs["retention.ms"].value == str(7 * 24 * 3600 * 1000)
    assert CkSource(configs["retention.ms"].source) == CkSource.DEFAULT_CONFIG
    assert configs["cleanup.policy"].value == "delete"

    _ck_alter(ck_admin, topic,
              ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET),
              ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND))
    configs = _ck_describe(ck_admin, topic)
    assert configs["retention.ms"].value == "60000"
    assert CkSource(configs["retention.ms"].source) == CkSource.DYNAMIC_TOPIC_CONFIG
    assert configs["cleanup.policy"].value == "compact,delete"

    _ck_alter(ck_admin, topic,
              ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT),
              ConfigEntry("segment.bytes", "1048576", incremental_operation=AlterConfigOpType.SET))
    configs = _ck_describe(ck_admin, topic)
    assert configs["cleanup.policy"].value == "compact"
    assert configs["retention.ms"].value == "60000"  # untouched
    assert configs["segment.bytes"].value == "1048576"

    _ck_alter(ck_admin, topic,
              ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
              ConfigEntry("cleanup.policy", None, incremental_operation=AlterConfigOpType.DELETE))
    configs = _ck_describe(ck_admin, topic)
    assert CkSource(configs["retention.ms"].source) == CkSource.DEFAULT_CONFIG
    assert configs["cleanup.policy"].value == "delete"


def test_confluent_kafka_errors(ck_admin) -> None:
    topic = "ck-configs-invalid"
    ck_admin.create_topics([CkNewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(
        timeout=30)
    with pytest.raises(KafkaException) as invalid:
        _ck_alter(ck_admin, topic, ConfigEntry("retention.ms", "-5",
                                               incremental_operation=AlterConfigOpType.SET))
    error = invalid.value.args[0]
    assert error.name() == "INVALID_CONFIG" and "retention.ms" in error.str()
    with pytest.raises(KafkaException) as unknown:
        _ck_alter(ck_admin, "ck-no-such-topic", ConfigEntry(
            "retention.ms", "1000", incremental_operation=AlterConfigOpType.SET))
    assert unknown.value.args[0].name() == "UNKNOWN_TOPIC_OR_PART"
    with pytest.raises(KafkaException) as missing:
        _ck_describe(ck_admin, "ck-no-such-topic")
    assert missing.value.args[0].name() == "UNKNOWN_TOPIC_OR_PART"
