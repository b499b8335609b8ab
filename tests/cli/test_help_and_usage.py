"""``--help`` works for every command, and bad usage is one line naming the option (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.support import PYQ, pyq, pyq_here

COMMANDS = [[], ["cluster"], ["cluster", "start"], ["topics"], ["topics", "create"],
            ["topics", "list"], ["topics", "describe"], ["topics", "alter"], ["topics", "delete"], ["produce"],
            ["consume"], ["lag"], ["schemas"], ["schemas", "register"], ["schemas", "config"],
            ["offsets"], ["groups", "delete-offsets"], ["completion"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "pyq")
def test_every_command_has_help(command):
    out = pyq(*command, "--help")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"usage: {' '.join(['pyq', *command])}")
    assert out.stderr == ""


def test_the_console_script_is_installed():
    script = Path(sys.executable).parent / "pyq"
    assert script.exists(), "pyq is not installed: pip install -e '.[dev]' in the venv"
    out = subprocess.run([str(script), "consume", "--help"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and "--from-beginning" in out.stdout


@pytest.mark.parametrize("args, message", [
    (["topics", "create", "t", "--partitions", "0"],
     "argument --partitions: 0 is not allowed: must be at least 1"),
    (["topics", "create", "t", "--replication-factor", "x"],
     "argument --replication-factor: 'x' is not an integer"),
    (["topics", "create", "t", "--config", "retention.ms"],
     "argument --config: 'retention.ms' is not NAME=VALUE"),
    (["topics", "list", "--bootstrap-server", "host:port"],
     "argument --bootstrap-server: 'host:port' is not allowed: must be a comma-separated "
     "list of host:port"),
    (["consume", "t", "--max", "0"], "argument --max: 0 is not allowed: must be at least 1"),
    (["consume", "t", "--timeout-ms", "-1"],
     "argument --timeout-ms: -1 is not allowed: must be at least 0"),
    (["produce", "t", "--acks", "2"], "argument --acks: invalid choice: '2'"),
    (["produce", "t", "--key-separator", ""], "argument --key-separator: '' is not allowed"),
    (["lag"], "the following arguments are required: --group"),
    (["cluster", "start", "--brokers", "0"],
     "argument --brokers: 0 is not allowed: must be at least 1"),
    (["topics"], "the following arguments are required: ACTION"),
    (["nosuch"], "argument COMMAND: invalid choice: 'nosuch'"),
])
def test_bad_usage_is_one_line_naming_the_option(monkeypatch, args, message):
    out = pyq_here(monkeypatch, *args)
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert message in lines[0]
    assert "Traceback" not in out.stderr


def test_bad_usage_exits_2_from_a_real_process():
    out = pyq("topics", "create", "t", "--partitions", "0")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == ("pyq topics create: error: argument --partitions: 0 is not allowed: "
                          "must be at least 1 (see 'pyq topics create --help')\n")


def test_an_option_the_client_refuses_is_bad_usage(monkeypatch):
    out = pyq_here(monkeypatch, "produce", "t", "--producer-property", "linger.ms=-4",
                   input="x\n")
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        "pyq produce: error: ConfigError: Invalid value '-4' for configuration linger.ms: "
        "must be an integer in [0, 2147483647]"]


def test_an_unreachable_cluster_fails_with_one_line_within_the_timeout():
    out = subprocess.run([*PYQ, "topics", "list", "--bootstrap-server", "127.0.0.1:1",
                          "--api-timeout-ms", "500"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 1
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("pyq topics list: error: KafkaTimeoutError: ")
    assert lines[0].endswith("(bootstrap server 127.0.0.1:1)")
