"""Configs under ACLs (a SASL broker process with pyq's authorizer): DescribeConfigs needs
DescribeConfigs on the topic (on the cluster for a broker), the alter APIs AlterConfigs;
nothing changes without it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from broker_sim.process import BrokerProcess
from broker_sim.protocol.errors import ClusterAuthorizationFailed, TopicAuthorizationFailed
from broker_sim.security.acl import Operation, ResourceType
from connector.client import Admin
from tests.security.test_acls import _start, allow, as_user, grant


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = _start(tmp_path_factory.mktemp("config-acls"))
    with Admin(as_user(proc, "admin")) as admin:
        admin.create_topic("settings", num_partitions=1)
    yield proc
    proc.stop()


def test_configs_need_describe_configs_and_alter_configs(secured: BrokerProcess) -> None:
    topic = ("topic", "settings")
    with Admin(as_user(secured, "bob")) as bob:
        with pytest.raises(TopicAuthorizationFailed):
            bob.describe_configs([topic])
        with pytest.raises(TopicAuthorizationFailed):
            bob.incremental_alter_configs({topic: {"retention.ms": "1000"}})
        with pytest.raises(ClusterAuthorizationFailed):
            bob.describe_configs([("broker", 0)])
        with pytest.raises(ClusterAuthorizationFailed):
            bob.incremental_alter_configs({("broker", ""): {"log.retention.ms": "1000"}})

    grant(secured, allow(ResourceType.TOPIC, "settings", "bob", Operation.DESCRIBE_CONFIGS))
    with Admin(as_user(secured, "bob")) as bob:
        assert bob.describe_configs([topic])[topic]["retention.ms"].is_default
        with pytest.raises(TopicAuthorizationFailed):  # describing is not altering
            bob.alter_configs({topic: {"retention.ms": "1000"}})

    grant(secured, allow(ResourceType.TOPIC, "settings", "bob", Operation.ALTER_CONFIGS),
          allow(ResourceType.CLUSTER, "kafka-cluster", "bob", Operation.DESCRIBE_CONFIGS))
    with Admin(as_user(secured, "bob")) as bob:
        bob.incremental_alter_configs({topic: {"retention.ms": "1000"}})
        assert bob.describe_configs([topic])[topic]["retention.ms"].value == "1000"
        assert bob.describe_configs([("broker", 0)])[("broker", "0")]["num.io.threads"].read_only
        broker_ssl = bob.describe_configs([("broker", 0)])[("broker", "0")]["ssl.key.password"]
        assert broker_ssl.sensitive and broker_ssl.value is None
        with pytest.raises(ClusterAuthorizationFailed):  # still no AlterConfigs on the cluster
            bob.incremental_alter_configs({("broker", ""): {"log.retention.ms": "1000"}})
