"""The cluster-level admin APIs under ACLs, judged by librdkafka's admin client on a SASL
broker process with pyq's authorizer: ElectLeaders needs Alter on the cluster
(CLUSTER_AUTHORIZATION_FAILED for each partition otherwise), and DescribeCluster's
authorized operations say what the principal may do."""

from __future__ import annotations

import pytest
from confluent_kafka import ElectionType, KafkaError, KafkaException
from confluent_kafka import TopicPartition as TP
from confluent_kafka.admin import AdminClient

from broker_sim.process import BrokerProcess
from broker_sim.protocol.errors import TopicAuthorizationFailed
from broker_sim.security.acl import Operation, ResourceType
from connector.client import Admin, Fetcher, Producer
from tests.security.test_acls import USERS, _start, allow, as_user, grant
from tests.wire import wait_for


def test_elect_leaders_needs_alter_on_the_cluster(tmp_path) -> None:
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


def test_the_plaintext_inter_broker_listener_may_do_cluster_actions_only(tmp_path) -> None:
    """Brokers reach each other unauthenticated on the PLAINTEXT inter-broker listener: an
    exactly-once transaction's markers, written over it, commit (ClusterAction); a client
    that connects there still gets nothing an ACL does not allow."""
    proc = BrokerProcess(tmp_path / "broker", overrides={
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "inter.broker.listener.name": "PLAINTEXT", "authorizer.class.name": "pyq",
        "super.users": "User:admin"},
        add_scram=[f"SCRAM-SHA-256=[name={u},password={p}]" for u, p in USERS.items()]).start()
    try:
        secured = {**as_user(proc, "admin"),
                   "bootstrap.servers": proc.listeners["SASL_PLAINTEXT"]}
        with Admin(secured) as admin:
            admin.create_topic("ledger", num_partitions=1)
        with Producer({**secured, "transactional.id": "ledger-writer"}) as producer:
            producer.init_transactions(30)
            producer.begin_transaction()
            producer.send("ledger", b"committed", partition=0)
            producer.commit_transaction(30)
        with Fetcher({**secured, "isolation.level": "read_committed"}) as fetcher:
            wait_for(lambda: fetcher.offset_bounds("ledger", 0)[1] == 2, 30,
                     what="the commit marker written over the inter-broker listener")

        anonymous = {"bootstrap.servers": proc.listeners["PLAINTEXT"]}
        with Producer({**anonymous, "retries": "0"}) as producer:
            with pytest.raises(TopicAuthorizationFailed):
                producer.send("ledger", b"sneaked in", partition=0).result(30)
    finally:
        proc.stop()
