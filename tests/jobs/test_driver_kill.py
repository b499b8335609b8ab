"""kill -9 the spark-submit driver during sessionize, rerun it from the same checkpoint.

The job reads 1,500 clicks in micro-batches of at most 750 (two); its windows query writes each
batch's updated per-(user, window) running totals to an output topic. The driver JVM is
killed with SIGKILL the moment the output topic grows (a batch's sink write has just been
acknowledged, most likely before Spark committed that batch), then the same command runs
to the end from the same checkpoints:

* with ``--exactly-once true`` a read_committed reader of the output topic sees every
  update exactly once: no (batch, user, window) twice, and the latest total of every
  (user, window) adds up to the events produced;
* with ``--exactly-once false`` nothing is missing: the latest totals add up the same,
  a replayed batch having written the same updates again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from connector.client import Admin, Fetcher
from tests.wire import wait_for

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "jobs"))

import generate_events  # noqa: E402
import sessionize  # noqa: E402

pytestmark = pytest.mark.integration

EVENTS = 1500


def _output(bootstrap: str, topic: str, isolation: str = "read_uncommitted") -> list[dict]:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        if topic not in admin.list_topics():
            return []
        parts = [p.partition for p in admin.describe_topics([topic])[topic].partitions]
        ends = admin.list_offsets({(topic, p): "latest" for p in parts},
                                  read_committed=isolation == "read_committed")
    with Fetcher({"bootstrap.servers": bootstrap, "isolation.level": isolation}) as fetcher:
        return [json.loads(r.value or b"null") for tp, end in ends.items()
                for r in fetcher.iter_records(topic, tp.partition, 0, end.offset)]


def _end(bootstrap: str, topic: str) -> int:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        if topic not in admin.list_topics():
            return 0
        parts = [p.partition for p in admin.describe_topics([topic])[topic].partitions]
        return sum(o.offset for o in admin.list_offsets({(topic, p): "latest" for p in parts}).values())


def _stable(bootstrap: str, topic: str) -> bool:
    """No transaction open on the topic any more (last stable offset = high watermark)."""
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        parts = [(topic, p.partition) for p in admin.describe_topics([topic])[topic].partitions]
        stable = admin.list_offsets({tp: "latest" for tp in parts}, read_committed=True)
        return stable == admin.list_offsets({tp: "latest" for tp in parts})


def _batches(checkpoint: Path, kind: str) -> set[int]:
    folder = checkpoint / kind
    return {int(f.name) for f in folder.iterdir() if f.name.isdigit()} if folder.exists() else set()


@pytest.mark.parametrize("exactly_once", ["true", "false"])
def test_driver_killed_mid_run_then_rerun_from_checkpoint(shared_broker, tmp_path, capsys, exactly_once):
    bootstrap = shared_broker.bootstrap_servers
    topic, output, group = f"kill-clicks-{exactly_once}", f"kill-counts-{exactly_once}", f"kill-{exactly_once}"
    assert generate_events.main(["--bootstrap-servers", bootstrap, "--topic", topic,
                                 "--count", str(EVENTS), "--malformed-fraction", "0",
                                 "--partitions", "2", "--seed", "3", "--no-progress"]) == 0
    capsys.readouterr()
    checkpoint = tmp_path / "ck"
    spark_submit = str(Path(sys.executable).parent / "spark-submit")
    command = [spark_submit, "--master", "local[2]", "--conf", "spark.ui.enabled=false",
               "--conf", "spark.sql.shuffle.partitions=2", "jobs/sessionize.py",
               "--bootstrap-servers", bootstrap, "--input-topic", topic, "--output-topic", output,
               "--dead-letter-topic", f"{group}-dlq", "--group-id", group,
               "--max-offsets-per-trigger", "750", "--exactly-once", exactly_once,
               "--parquet-dir", str(tmp_path / "events"), "--checkpoint-dir", str(checkpoint),
               "--trigger", "available-now"]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)

    driver = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: _end(bootstrap, output) > 0 or driver.poll() is not None, timeout=240,
                 interval=0.01, what="the first results written")
        os.kill(driver.pid, signal.SIGKILL)  # the spark-submit process: the driver's JVM
        assert driver.wait(30) == -signal.SIGKILL, "the job ended before it could be killed"
    finally:
        try:
            os.killpg(driver.pid, signal.SIGKILL)  # its Python processes
        except ProcessLookupError:
            pass
    time.sleep(1)
    planned = _batches(checkpoint / "windows", "offsets")
    committed = _batches(checkpoint / "windows", "commits")
    written_before = _end(bootstrap, output)
    print(f"\nkilled with batches {sorted(planned)} planned, {sorted(committed)} committed, "
          f"{written_before} result(s) written")
    assert planned and written_before > 0

    rerun = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    summary = json.loads(rerun.stdout.split("SUMMARY ", 1)[1].splitlines()[0])
    assert summary["results_written"] > 0

    wait_for(lambda: _stable(bootstrap, output), timeout=30, what="the last commit markers")
    # exactly once: what read_committed readers see (a killed run's aborted rows are left out)
    results = _output(bootstrap, output,
                      "read_committed" if exactly_once == "true" else "read_uncommitted")
    keys = Counter((r["batch_id"], r["user_id"], r["window_start"]) for r in results)
    latest = sessionize.latest_totals(results)
    assert sum(latest.values()) == EVENTS  # none missing: every event in its window's total
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        lag = admin.fetch_offsets(group, [(topic, 0), (topic, 1)])
    assert sum(om.offset for om in lag.values()) == EVENTS
    if exactly_once == "true":
        assert max(keys.values()) == 1, [k for k, n in keys.items() if n > 1][:5]

