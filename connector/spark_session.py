"""The one SparkSession builder of pyq's jobs, benchmarks and tests.

Every session pyq starts itself is built here, so they all agree on what matters for a
small local pipeline: the web UI and console progress bars off, Spark's own logging at
``ERROR``, and — when asked — Python workers that run this very interpreter (a virtualenv's
packages must be importable in the workers that run the source and sink).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any


def build_session(app_name: str, master: str | None = None, *,
                  shuffle_partitions: int | None = None,
                  conf: Mapping[str, str] | None = None,
                  workers_use_this_python: bool = False,
                  log_level: str = "ERROR") -> Any:
    """``SparkSession.builder...getOrCreate()`` with pyq's settings.

    ``master`` None leaves it to ``spark-submit`` (or Spark's default); tests and benchmarks
    pass ``"local[2]"``. ``shuffle_partitions`` sets ``spark.sql.shuffle.partitions`` (Spark's
    200 is far too many for a laptop-sized stream). ``workers_use_this_python`` points
    ``PYSPARK_PYTHON``/``PYSPARK_DRIVER_PYTHON`` at ``sys.executable`` unless already set,
    which must happen before the first session starts.
    """
    if workers_use_this_python:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    settings = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}
    if shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(log_level)
    return session
