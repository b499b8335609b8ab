"""Quiet when healthy: the README's Spark example (readStream with ``groupId``,
``maxRetries``, ``deadLetterTopic`` -> writeStream ``exactlyOnce``) run as written under
spark-submit against pyq's broker prints no warning or error of pyq's.

Every Python process of the run (the driver, Spark's Python workers) logs through a
``sitecustomize`` on ``PYTHONPATH`` that prefixes each record with ``PYQLOG``, its level
and its logger, so a warning from any ``connector``/``broker_sim`` module, in any process,
is found in the output. The run itself must do its job: 1,000 rows in, 1,000 upper-cased
rows out for a read_committed reader.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from connector.client import Admin, Fetcher, NewTopic, Producer

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
ROWS = 1000
SITECUSTOMIZE = """import logging
logging.basicConfig(level=logging.INFO,
                    format="PYQLOG %(levelname)s %(name)s: %(message)s")
"""
PYQ_WARNING = re.compile(r"^PYQLOG (WARNING|ERROR|CRITICAL) (connector|broker_sim|pyspark_pyq)\b.*$",
                         re.M)


def test_the_readme_spark_example_prints_no_pyq_warning(shared_broker, tmp_path):
    bootstrap = shared_broker.bootstrap_servers
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic("clicks", 2, 1), NewTopic("clicks-upper", 2, 1)])
    with Producer(bootstrap_servers=bootstrap, acks="all") as producer:
        for i in range(ROWS):
            producer.send("clicks", f"click-{i}".encode(), key=f"user-{i % 17}".encode())
        producer.flush()
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH"))
                                          if p))
    command = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[2]",
               "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2",
               "tests/jobs/readme_spark_example.py", str(ROOT / "README.md"), bootstrap,
               str(tmp_path / "ck")]
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    output = run.stdout + run.stderr
    assert run.returncode == 0 and "DONE" in run.stdout, output[-5000:]
    assert "PYQLOG WARNING readme: running the README's example" in output  # logging is seen
    warnings = [m.group(0) for m in PYQ_WARNING.finditer(output)]
    assert warnings == [], "\n".join(warnings)

    with Fetcher({"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}) as fetcher:
        values = []
        for partition in (0, 1):
            start, end = fetcher.offset_bounds("clicks-upper", partition)
            values += [r.value for r in fetcher.iter_records("clicks-upper", partition, start, end)]
    assert sorted(values) == sorted(f"CLICK-{i}".encode() for i in range(ROWS))
