"""The cluster-level admin APIs under ACLs, judged by librdkafka's admin client on a SASL
broker process with pyq's authorizer: ElectLeaders needs Alter on the cluster
(CLUSTER_AUTHORIZATION_FAILED for each partition otherwise), and DescribeCluster's
authorized operations say what the principal may do."""

from __future__ import annotations

import pytest
from confluent_kafka import ElectionType, KafkaError, KafkaException
from confluent_kafka import TopicPartition as TP
from confluent_kafka.admin import AdminClient

from broker_sim.security.acl import Operation, ResourceType
from connector.client import Admin
from tests.security.test_acls import _start, allow, as_user, grant


def test_elect_leaders_needs_alter_on_the_cluster(tmp_path) -> None:  # type: ignore[no-untyped-def]
    proc = _start(tmp_path / "broker")
    try:
        with Admin(as_user(proc, "admin")) as admin:
            admin.create_topic("elected", num_partitions=1)
        bob = AdminClient(as_user(proc, "bob"))
        ops = bob.describe_cluster(include_authorized_operations=True).result(30).authorized_operations
        assert not ops  # bob may do nothing on the cluster yet (librdkafka: None)
        with pytest.raises(KafkaException) as refused:
            bob.elect_leaders(ElectionType.PREFERRED, [TP("elected", 0)]).result(30)
        assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED

        grant(proc, allow(ResourceType.CLUSTER, "kafka-cluster", "bob", Operation.ALTER))
        ops = bob.describe_cluster(include_authorized_operations=True).result(30).authorized_operations
        assert sorted(op.name for op in ops) == ["ALTER", "DESCRIBE"]  # Alter implies Describe
        results = bob.elect_leaders(ElectionType.PREFERRED, [TP("elected", 0)]).result(30)
        assert [err.code() for err in results.values()] == [KafkaError.ELECTION_NOT_NEEDED]
    finally:
        proc.stop()
