"""The benchmarks' SparkSession: local[2], UI and progress bars off, 2 shuffle partitions."""

from __future__ import annotations

import os
import sys
from typing import Any


def bench_session(app_name: str) -> tuple[Any, int]:
    """(SparkSession, pid of its JVM): the pid lets a benchmark read Spark's CPU time."""
    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers run this venv's interpreter
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName(app_name)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark, int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
