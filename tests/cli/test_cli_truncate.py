"""``pyq topics truncate TOPIC --before OFFSET [--partition N]``: the installed ``pyq``
command run as a separate process against a broker (DeleteRecords) — pyq's broker process,
then Apache Kafka (``broker_under_test``), the same tests on both — and its usage errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.support import pyq_here

PYQ = str(Path(sys.executable).parent / "pyq")  # the console script pip installed


def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYQ, *args], input=input, capture_output=True, text=True, timeout=60)


def table(stdout: str) -> list[list[str]]:
    return [line.split() for line in stdout.strip().splitlines()]


@pytest.fixture(scope="module")
def broker(broker_under_test):
    return broker_under_test


@pytest.mark.parametrize(("args", "message"), [
    (["topics", "truncate", "t"], "the following arguments are required: --before"),
    (["topics", "truncate", "t", "--before", "-3"], "must be at least 0"),
    (["topics", "truncate", "t", "--before", "soon"], "'soon' is not an integer"),
    (["topics", "truncate", "t", "--before", "1", "--partition", "-1"], "must be at least 0"),
])
def test_usage_errors_exit_2(monkeypatch: pytest.MonkeyPatch, args: list[str], message: str) -> None:
    result = pyq_here(monkeypatch, *args, "--bootstrap-server", "127.0.0.1:1")
    assert result.returncode == 2, result
    assert message in result.stderr


def test_truncate_every_partition_or_one(broker) -> None:
    bootstrap = ["--bootstrap-server", broker.bootstrap_servers]
    topic = "cli-truncate"
    assert run("topics", "create", topic, "--partitions", "2", *bootstrap).returncode == 0
    lines = "".join(f"k{i}\tv{i}\n" for i in range(40))  # keyed: both partitions get some
    assert run("produce", topic, *bootstrap, input=lines).returncode == 0
    described = table(run("topics", "describe", topic, *bootstrap).stdout)
    latest = {int(row[1]): int(row[6]) for row in described[1:]}
    assert sum(latest.values()) == 40 and min(latest.values()) >= 3

    def consume_partition_1() -> list[str]:
        printed = run("consume", topic, "--from-beginning", "--partition", "1", "--print-key",
                      "--timeout-ms", "1000", *bootstrap)
        assert printed.returncode == 0, printed.stderr
        return printed.stdout.splitlines()

    before = consume_partition_1()
    assert len(before) == latest[1]

    result = run("topics", "truncate", topic, "--before", "2", *bootstrap)
    assert result.returncode == 0, result.stderr
    assert table(result.stdout) == [["TOPIC", "PARTITION", "EARLIEST"],
                                    [topic, "0", "2"], [topic, "1", "2"]]

    result = run("topics", "truncate", topic, "--before", "3", "--partition", "1", *bootstrap)
    assert result.returncode == 0, result.stderr
    assert table(result.stdout) == [["TOPIC", "PARTITION", "EARLIEST"], [topic, "1", "3"]]
    described = table(run("topics", "describe", topic, *bootstrap).stdout)
    assert {int(row[1]): int(row[5]) for row in described[1:]} == {0: 2, 1: 3}

    # a consumer from the beginning starts at the new log start offset
    after = consume_partition_1()
    assert after == before[3:]

    result = run("topics", "truncate", topic, "--before", "latest", "--partition", "0", *bootstrap)
    assert result.returncode == 0, result.stderr
    assert table(result.stdout)[1] == [topic, "0", str(latest[0])]


def test_truncate_refuses_an_offset_past_the_end_and_deletes_nothing(broker) -> None:
    bootstrap = ["--bootstrap-server", broker.bootstrap_servers]
    topic = "cli-truncate-past-end"
    assert run("topics", "create", topic, "--partitions", "2", *bootstrap).returncode == 0
    assert run("produce", topic, *bootstrap, input="".join(f"k{i}\tv\n" for i in range(20))).returncode == 0
    result = run("topics", "truncate", topic, "--before", "1000", *bootstrap)
    assert result.returncode == 1
    assert "nothing deleted: offset 1000 is past the latest offset of" in result.stderr
    described = table(run("topics", "describe", topic, *bootstrap).stdout)
    assert [row[5] for row in described[1:]] == ["0", "0"]

    result = run("topics", "truncate", topic, "--before", "1", "--partition", "7", *bootstrap)
    assert result.returncode == 1
    assert f"topic '{topic}' has no partition 7 (it has 2)" in result.stderr
    result = run("topics", "truncate", "cli-no-such-topic", "--before", "1", *bootstrap)
    assert result.returncode == 1
    assert "topic 'cli-no-such-topic' does not exist" in result.stderr
