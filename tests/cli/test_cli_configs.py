"""``pyq topics alter --config/--delete-config`` and ``pyq configs describe|alter``: the
installed ``pyq`` command run as a separate process against a broker process, and the
option parsing on its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from connector.cli.errors import CommandError
from connector.cli.topics import config_changes, describe_changes
from tests.cli.support import pyq_here

PYQ = str(Path(sys.executable).parent / "pyq")  # the console script pip installed


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYQ, *args], capture_output=True, text=True, timeout=60)


def rows(stdout: str) -> dict[str, list[str]]:
    """A ``pyq configs describe`` table as {NAME: [VALUE, SOURCE, READ-ONLY]}."""
    lines = stdout.strip().splitlines()
    assert lines[0].split() == ["NAME", "VALUE", "SOURCE", "READ-ONLY"]
    return {parts[0]: parts[1:] for parts in (line.split() for line in lines[1:])}


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


def test_topics_alter_and_configs_describe(shared_broker) -> None:  # type: ignore[no-untyped-def]
    bootstrap = ["--bootstrap-server", shared_broker.bootstrap_servers]
    topic = "cli-configs"
    assert run("topics", "create", topic, *bootstrap).returncode == 0

    result = run("topics", "alter", topic, "--config", "retention.ms=3600000",
                 "--config", "cleanup.policy=compact,delete", *bootstrap)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (f"topic {topic}: set retention.ms=3600000, "
                                     "cleanup.policy=compact,delete")

    described = run("configs", "describe", "--topic", topic, *bootstrap)
    assert described.returncode == 0, described.stderr
    assert rows(described.stdout) == {
        "cleanup.policy": ["compact,delete", "DYNAMIC_TOPIC_CONFIG", "false"],
        "retention.ms": ["3600000", "DYNAMIC_TOPIC_CONFIG", "false"]}
    everything = rows(run("configs", "describe", "--topic", topic, "--all", *bootstrap).stdout)
    assert everything["segment.bytes"] == [str(1024 ** 3), "DEFAULT_CONFIG", "false"]
    assert everything["min.insync.replicas"] == ["1", "DEFAULT_CONFIG", "false"]

    result = run("topics", "alter", topic, "--delete-config", "cleanup.policy", "--partitions", "2",
                 *bootstrap)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"topic {topic} now has 2 partitions",
                                          f"topic {topic}: deleted cleanup.policy"]
    assert set(rows(run("configs", "describe", "--topic", topic, *bootstrap).stdout)) == {"retention.ms"}


def test_invalid_values_and_unknown_topics_fail_naming_them(shared_broker) -> None:  # type: ignore[no-untyped-def]
    bootstrap = ["--bootstrap-server", shared_broker.bootstrap_servers]
    topic = "cli-configs-invalid"
    assert run("topics", "create", topic, *bootstrap).returncode == 0
    result = run("topics", "alter", topic, "--config", "retention.ms=soon", *bootstrap)
    assert result.returncode == 1
    assert result.stderr.startswith("pyq topics alter: error: InvalidConfig: topic "
                                    f"'{topic}': Invalid value 'soon' for configuration retention.ms")
    result = run("configs", "describe", "--topic", "cli-no-such-topic", *bootstrap)
    assert result.returncode == 1
    assert "topic 'cli-no-such-topic' does not exist" in result.stderr


def test_broker_configs(shared_broker) -> None:  # type: ignore[no-untyped-def]
    bootstrap = ["--bootstrap-server", shared_broker.bootstrap_servers]
    described = rows(run("configs", "describe", "--broker", "0", *bootstrap).stdout)
    assert described["port"] == ["0", "STATIC_BROKER_CONFIG", "true"]  # as configured: ephemeral
    assert "num.io.threads" not in described  # at its default: only with --all
    everything = rows(run("configs", "describe", "--broker", "0", "--all", *bootstrap).stdout)
    assert everything["num.io.threads"] == ["4", "DEFAULT_CONFIG", "true"]
    assert everything["log.retention.ms"][1:] == ["DEFAULT_CONFIG", "false"]

    result = run("configs", "alter", "--broker-defaults", "--config", "log.retention.ms=86400000",
                 *bootstrap)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "broker defaults: set log.retention.ms=86400000"
    try:
        assert rows(run("configs", "describe", "--broker-defaults", *bootstrap).stdout) == {
            "log.retention.ms": ["86400000", "DYNAMIC_DEFAULT_BROKER_CONFIG", "false"]}
        assert rows(run("configs", "describe", "--broker", "0", *bootstrap).stdout)[
            "log.retention.ms"] == ["86400000", "DYNAMIC_DEFAULT_BROKER_CONFIG", "false"]
        result = run("configs", "alter", "--broker", "0", "--config", "num.io.threads=8", *bootstrap)
        assert result.returncode == 1
        assert "Cannot change broker config num.io.threads at runtime" in result.stderr
    finally:
        run("configs", "alter", "--broker-defaults", "--delete-config", "log.retention.ms", *bootstrap)
