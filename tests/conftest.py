"""Shared fixtures: broker processes stopped by their own pids in teardown."""

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
    """One SparkSession for the whole suite: local[2], UI off, 2 shuffle partitions."""
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("pyq-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.streaming.stopTimeout", "30s")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
