"""``--log-level`` and ``--log-format json`` on ``pyq-broker`` and ``pyq-broker cluster``:
the processes' real output, parsed line by line."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from broker_sim.process import BrokerProcess
from tests.wire import create_topic, wait_for

pytestmark = pytest.mark.integration

#: What a launcher prints for its parent (see broker_sim/process.py), not log records.
STATUS = re.compile(r"^(listening on |listener |metrics on |schema registry on |controller pid |"
                    r"controller metrics on |broker \d+ |bootstrap servers: |cluster stopped)")


def records(text: str) -> list[dict]:
    """Every log record of a JSON-format output; fails on a line that is neither a JSON
    object nor a launcher's status line."""
    out = []
    for line in text.splitlines():
        if STATUS.match(line):
            continue
        record = json.loads(line)
        assert isinstance(record, dict), line
        out.append(record)
    return out


def test_a_broker_logs_json_objects_with_its_id(tmp_path):
    broker = BrokerProcess(tmp_path / "b", broker_id=7,
                           log_args=["--log-format", "json", "--log-level", "debug"]).start()
    try:
        assert broker.port is not None
        create_topic(broker.port, "json-logged", partitions=1)
    finally:
        broker.stop()
    logged = records(broker.output())
    assert len(logged) >= 3
    for r in logged:
        assert {"time", "level", "logger", "message", "broker_id"} <= r.keys()
        assert r["broker_id"] == 7
        assert r["time"].endswith("+00:00") and "T" in r["time"]
    assert {r["level"] for r in logged} >= {"INFO"}
    assert any(r["logger"].startswith("broker_sim.") for r in logged)


def test_log_level_warning_leaves_out_info_records(tmp_path):
    broker = BrokerProcess(tmp_path / "b", log_args=["--log-format", "json",
                                                     "--log-level", "WARNING"]).start()
    broker.stop()
    assert all(r["level"] in ("WARNING", "ERROR", "CRITICAL") for r in records(broker.output()))
    assert "listening on" in broker.output()


@pytest.mark.parametrize("command", [["broker_sim", "cluster"], ["connector.cli.main", "cluster", "start"]],
                         ids=["pyq-broker cluster", "pyq cluster start"])
def test_cluster_passes_level_and_format_to_every_process(tmp_path, command):
    data = tmp_path / "cluster"
    proc = subprocess.Popen([sys.executable, "-m", *command, "--brokers", "2",
                             "--data-dir", str(data), "--log-format", "json", "--log-level", "info"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines: list[str] = []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("bootstrap servers:"):
                break
        else:
            pytest.fail("pyq-broker cluster ended before printing its bootstrap servers:\n"
                        + "\n".join(lines))
        brokers = [data / f"broker-{i}" / f"broker-{i}.out" for i in range(2)]
        wait_for(lambda: all(records(b.read_text()) for b in brokers), what="broker log records")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0
    for i, path in enumerate(brokers):
        logged = records(path.read_text())
        assert logged and all(r["broker_id"] == i for r in logged)
    controller = records((data / "controller" / "controller.out").read_text())
    assert controller and all(r["role"] == "controller" and {"time", "level", "logger", "message"}
                              <= r.keys() for r in controller)


@pytest.mark.parametrize("argv", [["--data-dir", "{tmp}"], ["cluster", "--data-dir", "{tmp}"],
                                  ["controller", "--data-dir", "{tmp}"]])
def test_an_unknown_level_or_format_is_refused_naming_the_choices(tmp_path: Path, argv):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    for bad, allowed in ((["--log-level", "loud"], "DEBUG"), (["--log-format", "xml"], "json")):
        out = subprocess.run([sys.executable, "-m", "broker_sim", *argv, *bad],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2
        assert bad[0] in out.stderr and bad[1].upper() in out.stderr.upper()
        assert allowed in out.stderr
