"""The benchmarks' SparkSession: local[2], UI and progress bars off, 2 shuffle partitions."""

from __future__ import annotations

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
