"""Shared fixtures: broker processes stopped by their own pids in teardown.

Markers for ``make test-fast`` (which deselects both): a test is marked ``spark`` when it
uses the ``spark`` fixture or lives in tests/spark or tests/jobs, and ``cluster`` when it
uses ``cluster_factory``; a module that starts a multi-process cluster another way says
so with ``pytestmark = pytest.mark.cluster``. So new tests are sorted without thought.

``make test`` runs the suite in two pytest-xdist workers, a module at a time
(``--dist loadfile``, so a module-scoped broker starts once): most of a test's time is
waiting on other processes (brokers, JVMs, timeouts), and two at a time use the 2 cores
that one leaves half idle. Each worker is its own pytest session, with its own
SparkSession. The ``spark-submit`` jobs run longest, so their modules come first and the
rest fills in around them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_sim.process import BrokerProcess

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
