"""A secured 3-broker cluster: credentials live with the controller and reach every broker.

Clients use the SASL_SSL listeners; replication stays on the PLAINTEXT inter-broker
listener. A user created through AlterUserScramCredentials (kafka-python's admin client)
logs in on every broker, and again after the whole cluster restarts.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import pytest

from broker_sim.cluster import LocalCluster
from broker_sim.security.local_ca import LocalCA
from connector.client import Admin, Fetcher, Producer

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaAdminClient
    from kafka.admin import ScramMechanism, UserScramCredentialUpsertion

pytestmark = pytest.mark.cluster


def _cluster(directory: Path, ca: LocalCA, keystore: Path) -> LocalCluster:
    return LocalCluster(directory, 3, {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "inter.broker.listener.name": "PLAINTEXT",
        "ssl.keystore.location": str(keystore), "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN"},
        add_scram=["SCRAM-SHA-512=[name=admin,password=admin-secret]"])


def _opts(cluster: LocalCluster, ca: LocalCA, bootstrap: str, user: str, password: str) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(ca.ca_path), "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": user, "sasl.password": password}


def _logs_in_on_every_broker(cluster: LocalCluster, ca: LocalCA, user: str, password: str) -> None:
    secured = [b.listeners["SASL_SSL"] for b in cluster.brokers]
    for address in secured:  # bootstrap from this broker alone: it must know the user itself
        with Admin(_opts(cluster, ca, address, user, password)) as admin:
            deadline = time.monotonic() + 30  # a broker just started learns of the others soon
            while True:
                seen = sorted(f"{b.host}:{b.port}" for b in admin.describe_cluster(30_000).brokers)
                if seen == sorted(secured) or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert seen == sorted(secured)  # every broker's SASL_SSL address, none other


def test_a_user_added_through_the_admin_api_logs_in_everywhere_and_after_a_restart(tmp_path: Path) -> None:
    ca = LocalCA(tmp_path / "ca")
    keystore = ca.issue("broker").pem
    cluster = _cluster(tmp_path / "cluster", ca, keystore).start()
    try:
        bootstrap = cluster.listener_bootstrap("SASL_SSL")
        admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), security_protocol="SASL_SSL",
                                 ssl_cafile=str(ca.ca_path), sasl_mechanism="SCRAM-SHA-512",
                                 sasl_plain_username="admin", sasl_plain_password="admin-secret")
        result = admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion("carol", ScramMechanism.SCRAM_SHA_512, "carol-secret",
                                         iterations=8192)])
        admin.close()
        assert result == {"carol": None}
        _logs_in_on_every_broker(cluster, ca, "carol", "carol-secret")

        opts = _opts(cluster, ca, bootstrap, "carol", "carol-secret")
        with Admin(opts) as a:
            a.create_topic("replicated", num_partitions=1, replication_factor=3)
        producer = Producer(opts, acks="all")
        futures = [producer.send("replicated", f"r{i}".encode()) for i in range(300)]
        producer.flush(60)
        producer.close()
        assert [f.get(10).offset for f in futures] == list(range(300))
    finally:
        cluster.stop()

    restarted = _cluster(tmp_path / "cluster", ca, keystore).start()  # same directories
    try:
        _logs_in_on_every_broker(restarted, ca, "carol", "carol-secret")
        opts = _opts(restarted, ca, restarted.listener_bootstrap("SASL_SSL"), "carol", "carol-secret")
        with Fetcher(opts) as fetcher:
            assert len(list(fetcher.iter_records("replicated", 0, 0, 300))) == 300
    finally:
        restarted.stop()
