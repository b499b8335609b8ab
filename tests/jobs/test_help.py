"""Every job's --help works: plain python for the generator, spark-submit for the Spark jobs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"
ENV = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)


def _help(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_generate_events_help_with_python():
    out = _help([sys.executable, "jobs/generate_events.py", "--help"])
    assert "--malformed-fraction" in out and "--bootstrap-servers" in out


@pytest.mark.integration
@pytest.mark.parametrize("job, option", [("generate_events", "--rate"),
                                         ("sessionize", "--parquet-dir"),
                                         ("replay_dead_letters", "--topic")])
def test_help_with_spark_submit(job, option):
    out = _help([str(SPARK_SUBMIT), f"jobs/{job}.py", "--help"])
    assert option in out and "usage:" in out
