"""The benchmarks' SparkSession (local[2], UI and progress bars off, 2 shuffle partitions),
and the checks every timed AvailableNow query ends with."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Any

from connector.spark_session import build_session


def bench_session(app_name: str, conf: Mapping[str, str] | None = None) -> tuple[Any, int]:
    """(SparkSession, pid of its JVM): the pid lets a benchmark read Spark's CPU time.
    ``conf`` adds settings (``spark.jars``, say) to these."""
    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers run this venv's interpreter,
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable  # whatever the shell had set
    spark = build_session(app_name, "local[2]", shuffle_partitions=2, conf=conf)
    return spark, int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())


def finished_progress(query: Any, label: str, rows: int | None = None) -> list[dict[str, Any]]:
    """The progress reports of an AvailableNow ``query`` the caller has awaited (and timed):
    raises if it is still running (then stops it), failed, or read other than ``rows`` rows
    (None: not checked)."""
    if query.isActive:
        query.stop()
        raise RuntimeError(f"{label}: still running after its time limit")
    if query.exception() is not None:
        raise RuntimeError(f"{label} failed: {query.exception()}")
    progress = [json.loads(p.json) for p in query.recentProgress]
    seen = sum(p.get("numInputRows", 0) for p in progress)
    if rows is not None and seen != rows:
        raise RuntimeError(f"{label} read {seen} rows, expected {rows}")
    return progress
