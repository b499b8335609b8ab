"""The benchmarks' SparkSession: local[2], UI and progress bars off, 2 shuffle partitions."""

from __future__ import annotations

import os
import sys
from typing import Any

from connector.spark_session import build_session


def bench_session(app_name: str) -> tuple[Any, int]:
    """(SparkSession, pid of its JVM): the pid lets a benchmark read Spark's CPU time."""
    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers run this venv's interpreter,
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable  # whatever the shell had set
    spark = build_session(app_name, "local[2]", shuffle_partitions=2)
    return spark, int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
