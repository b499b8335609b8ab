"""Shared fixtures: broker processes stopped by their own pids in teardown.

Markers for ``make test-fast`` (which deselects all three): a test is marked ``spark`` when it
uses the ``spark`` fixture or lives in tests/spark or tests/jobs, ``cluster`` when it
uses ``cluster_factory``, and ``kafka`` when it runs Apache Kafka or its tools (the
``kafka``/``kafka_cluster`` fixtures, the ``[kafka]`` case of ``broker_under_test``, or
tests/reference); a module that starts a multi-process cluster another way says
so with ``pytestmark = pytest.mark.cluster``. So new tests are sorted without thought.

``make test`` runs the suite in two pytest-xdist workers, a module at a time
(``--dist loadfile``, so a module-scoped broker starts once): most of a test's time is
waiting on other processes (brokers, JVMs, timeouts), and two at a time use the 2 cores
that one leaves half idle. Each worker is its own pytest session, with its own
SparkSession. The ``spark-submit`` jobs run longest, so their modules come first and the
rest fills in around them.

Apache Kafka is the judge of our client and connector: ``kafka`` is one real Kafka node per
session (each worker's), started on first use, and a module whose fixture takes
``broker_under_test`` runs each of its tests once on pyq's broker and once on Kafka (ids
``[pyq]`` and ``[kafka]``), the same test body asserting the same behaviour.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from broker_sim.process import BrokerProcess
from reference.kafka_cluster import KafkaCluster

# Spark workers must start the venv's interpreter (set before any SparkSession exists).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        area = item.path.parent.name
        if "spark" in fixtures or area in ("spark", "jobs"):
            item.add_marker(pytest.mark.spark)
        if "cluster_factory" in fixtures:
            item.add_marker(pytest.mark.cluster)
        callspec = getattr(item, "callspec", None)
        on_kafka = callspec is not None and callspec.params.get("broker_under_test") == "kafka"
        if on_kafka or fixtures & {"kafka", "kafka_cluster"} or area == "reference":
            item.add_marker(pytest.mark.kafka)
    items.sort(key=lambda item: item.path.parent.name != "jobs")  # stable: the rest keep their order


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator:
    """Start broker processes on ephemeral ports; every one is stopped at teardown."""
    started: list[BrokerProcess] = []

    def start(data_dir: Path | None = None, **kwargs) -> BrokerProcess:
        proc = BrokerProcess(data_dir or tmp_path / f"broker{len(started)}", **kwargs)
        started.append(proc)
        return proc.start()

    yield start
    for proc in started:
        proc.stop()


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for a whole test module (tests use distinct topic names)."""
    proc = BrokerProcess(tmp_path_factory.mktemp("shared-broker"),
                         overrides={"auto.create.topics.enable": "false"})
    proc.start()
    yield proc
    proc.stop()


#: Users of the secured listeners of ``kafka`` and ``kafka_cluster`` (SCRAM-SHA-512).
KAFKA_USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


def _start_kafka(directory: Path, nodes: int) -> KafkaCluster:
    from connector.local_security import LocalSecurity

    security = LocalSecurity(directory / "security", "SASL_SSL", users=KAFKA_USERS)
    return KafkaCluster(directory, nodes, security=security, authorizer=True,
                        overrides={"super.users": "User:admin",
                                   "auto.create.topics.enable": "false"}).start()


@pytest.fixture(scope="session")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """One Apache Kafka node (broker and controller) for the session, as ``shared_broker`` is
    configured (no auto-created topics): PLAINTEXT (``bootstrap_servers``), and SASL_SSL
    (``client_options(user)``) with ACLs checked by Kafka's StandardAuthorizer for the users
    in ``KAFKA_USERS`` (``admin`` is a super user)."""
    cluster = _start_kafka(tmp_path_factory.mktemp("kafka"), 1)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """Three Apache Kafka nodes (replication factor 3), secured as ``kafka`` is."""
    cluster = _start_kafka(tmp_path_factory.mktemp("kafka-cluster"), 3)
    yield cluster
    cluster.stop()


class BrokerUnderTest(NamedTuple):
    """The broker a parametrised test runs on: ``name`` is ``pyq`` or ``kafka``."""

    name: str
    bootstrap_servers: str


@pytest.fixture(scope="module", params=["pyq", "kafka"])
def broker_under_test(request: pytest.FixtureRequest) -> BrokerUnderTest:
    """pyq's module-scoped ``shared_broker``, then the session's Apache Kafka ``kafka``."""
    if request.param == "kafka":
        return BrokerUnderTest("kafka", request.getfixturevalue("kafka").bootstrap_servers)
    return BrokerUnderTest("pyq", request.getfixturevalue("shared_broker").bootstrap_servers)


@pytest.fixture
def cluster_factory(tmp_path: Path) -> Iterator:
    """Start local clusters (controller + broker processes); all stopped at teardown."""
    from broker_sim.cluster import LocalCluster

    started: list[LocalCluster] = []

    def start(brokers: int = 3, **kwargs) -> LocalCluster:
        cluster = LocalCluster(tmp_path / f"cluster{len(started)}", brokers, **kwargs)
        started.append(cluster)
        return cluster.start()

    yield start
    for cluster in started:
        cluster.stop()


@pytest.fixture(scope="session")
def spark():
    """One SparkSession for the whole session (each xdist worker's): local[2], UI off, 2
    shuffle partitions."""
    from connector.spark_session import build_session

    session = build_session("pyq-tests", "local[2]", shuffle_partitions=2, workers_use_this_python=True,
                            conf={"spark.sql.streaming.stopTimeout": "30s"})
    yield session
    session.stop()
