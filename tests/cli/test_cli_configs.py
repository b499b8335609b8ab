"""``pyq topics alter --config/--delete-config`` and ``pyq configs describe|alter``: the
installed ``pyq`` command run as a separate process against a broker — pyq's broker process,
then Apache Kafka (``broker_under_test``), the same tests on both — and the option parsing
on its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from connector.cli.errors import CommandError
from connector.cli.topics import config_changes, describe_changes
from connector.client import Admin
from tests.cli.support import pyq_here

PYQ = str(Path(sys.executable).parent / "pyq")  # the console script pip installed


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYQ, *args], capture_output=True, text=True, timeout=60)


def rows(stdout: str) -> dict[str, list[str]]:
    """A ``pyq configs describe`` table as {NAME: [VALUE, SOURCE, READ-ONLY]}."""
    lines = stdout.strip().splitlines()
    assert lines[0].split() == ["NAME", "VALUE", "SOURCE", "READ-ONLY"]
    return {parts[0]: parts[1:] for parts in (line.split() for line in lines[1:])}


def set_on(described: dict[str, list[str]], source: str) -> dict[str, list[str]]:
    """The rows set at ``source``. Without ``--all`` ``describe`` shows every config set
    anywhere but the defaults: Kafka 4 also reports ``min.insync.replicas``, which its
    cluster holds as a dynamic default (DYNAMIC_DEFAULT_BROKER_CONFIG), pyq's broker nothing."""
    assert all(row[1] != "DEFAULT_CONFIG" for row in described.values())
    return {name: row for name, row in described.items() if row[1] == source}


@pytest.fixture(scope="module")
def broker(broker_under_test):
    return broker_under_test


@pytest.fixture(scope="module")
def node(broker) -> str:
    """The broker's node id (pyq's broker is 0, Kafka's node 1)."""
    with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
        [only] = admin.describe_cluster().brokers
    return str(only.node_id)


def test_config_changes_parsing() -> None:
    changes = config_changes([("retention.ms", "1000")], ["cleanup.policy"])
    assert changes == {"retention.ms": "1000", "cleanup.policy": None}
    assert describe_changes(changes) == "set retention.ms=1000, deleted cleanup.policy"
    with pytest.raises(CommandError, match="both set and deleted"):
        config_changes([("a", "1")], ["a"])
    with pytest.raises(CommandError, match="more than once"):
        config_changes([("a", "1"), ("a", "2")], [])


@pytest.mark.parametrize(("args", "message"), [
    (["topics", "alter", "t"], "nothing to alter"),
    (["topics", "alter", "t", "--config", "retention.ms"], "is not NAME=VALUE"),
    (["configs", "describe"], "one of the arguments --topic --broker --broker-defaults is required"),
    (["configs", "describe", "--topic", "t", "--broker", "0"], "not allowed with argument"),
    (["configs", "alter", "--broker", "zero", "--config", "log.retention.ms=1"], "must be a broker id"),
    (["configs", "alter", "--topic", "t"], "nothing to alter"),
])
def test_usage_errors_exit_2(monkeypatch: pytest.MonkeyPatch, args: list[str], message: str) -> None:
    result = pyq_here(monkeypatch, *args, "--bootstrap-server", "127.0.0.1:1")
    assert result.returncode == 2, result
    assert message in result.stderr


def test_topics_alter_and_configs_describe(broker) -> None:
    bootstrap = ["--bootstrap-server", broker.bootstrap_servers]
    topic = "cli-configs"
    assert run("topics", "create", topic, *bootstrap).returncode == 0

    result = run("topics", "alter", topic, "--config", "retention.ms=3600000",
                 "--config", "cleanup.policy=compact,delete", *bootstrap)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (f"topic {topic}: set retention.ms=3600000, "
                                     "cleanup.policy=compact,delete")

    described = run("configs", "describe", "--topic", topic, *bootstrap)
    assert described.returncode == 0, described.stderr
    assert set_on(rows(described.stdout), "DYNAMIC_TOPIC_CONFIG") == {
        "cleanup.policy": ["compact,delete", "DYNAMIC_TOPIC_CONFIG", "false"],
        "retention.ms": ["3600000", "DYNAMIC_TOPIC_CONFIG", "false"]}
    everything = rows(run("configs", "describe", "--topic", topic, "--all", *bootstrap).stdout)
    assert everything["segment.bytes"] == [str(1024 ** 3), "DEFAULT_CONFIG", "false"]
    # pyq's default; on Kafka 4 the cluster's dynamic default, of the same value
    assert everything["min.insync.replicas"][0::2] == ["1", "false"]

    result = run("topics", "alter", topic, "--delete-config", "cleanup.policy", "--partitions", "2",
                 *bootstrap)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"topic {topic} now has 2 partitions",
                                          f"topic {topic}: deleted cleanup.policy"]
    assert set(set_on(rows(run("configs", "describe", "--topic", topic, *bootstrap).stdout),
                      "DYNAMIC_TOPIC_CONFIG")) == {"retention.ms"}


def test_invalid_values_and_unknown_topics_fail_naming_them(broker) -> None:
    bootstrap = ["--bootstrap-server", broker.bootstrap_servers]
    topic = "cli-configs-invalid"
    assert run("topics", "create", topic, *bootstrap).returncode == 0
    result = run("topics", "alter", topic, "--config", "retention.ms=soon", *bootstrap)
    assert result.returncode == 1
    # the broker's own words after the CLI's: pyq's "Invalid value 'soon' for configuration
    # retention.ms", Kafka's "Invalid value soon for configuration retention.ms: Not a number ..."
    assert result.stderr.startswith(f"pyq topics alter: error: InvalidConfig: topic '{topic}': "
                                    "Invalid value ")
    assert "soon" in result.stderr and "retention.ms" in result.stderr
    result = run("configs", "describe", "--topic", "cli-no-such-topic", *bootstrap)
    assert result.returncode == 1
    assert "topic 'cli-no-such-topic' does not exist" in result.stderr


def test_broker_configs(broker, node) -> None:
    bootstrap = ["--bootstrap-server", broker.bootstrap_servers]
    described = rows(run("configs", "describe", "--broker", node, *bootstrap).stdout)
    assert described["log.dirs"][1:] == ["STATIC_BROKER_CONFIG", "true"]  # as configured at start
    assert "num.io.threads" not in described  # at its default: only with --all
    everything = rows(run("configs", "describe", "--broker", node, "--all", *bootstrap).stdout)
    assert everything["num.io.threads"][1] == "DEFAULT_CONFIG"  # pyq 4 and read-only, Kafka 8
    assert everything["log.retention.ms"][1:] == ["DEFAULT_CONFIG", "false"]

    result = run("configs", "alter", "--broker-defaults", "--config", "log.retention.ms=86400000",
                 *bootstrap)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "broker defaults: set log.retention.ms=86400000"
    try:
        assert set_on(rows(run("configs", "describe", "--broker-defaults", *bootstrap).stdout),
                      "DYNAMIC_DEFAULT_BROKER_CONFIG")["log.retention.ms"] == [
            "86400000", "DYNAMIC_DEFAULT_BROKER_CONFIG", "false"]
        assert rows(run("configs", "describe", "--broker", node, *bootstrap).stdout)[
            "log.retention.ms"] == ["86400000", "DYNAMIC_DEFAULT_BROKER_CONFIG", "false"]
        result = run("configs", "alter", "--broker", node, "--config", "log.dirs=/elsewhere",
                     *bootstrap)
        assert result.returncode == 1 and "log.dirs" in result.stderr, result.stderr
        assert result.stderr.startswith("pyq configs alter: error: ") and \
            len(result.stderr.splitlines()) == 1, result.stderr
    finally:
        run("configs", "alter", "--broker-defaults", "--delete-config", "log.retention.ms", *bootstrap)
