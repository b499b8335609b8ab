"""A job deployed as the README says, on a real Spark standalone cluster: a master and a
worker process (Spark's own, from the pip-installed PySpark), ``spark-submit --archives
pyq-env.tar.gz#environment`` with ``PYSPARK_PYTHON=./environment/bin/python``, the archive
an environment packed by venv-pack holding the package built from the sources (and no
PySpark: Spark puts its own on the Python workers' path). The executors import the connector
from that archive, not from this checkout, and the job reads a pyq topic and writes another
through ``format("pyq")``, found by PySpark's discovery of ``pyspark_pyq`` without a
``register`` call.

In client mode the driver runs Python too (the job, and the Python workers that discover
and plan the data source), with the same ``PYSPARK_PYTHON`` relative to its working
directory: the archive is unpacked there as well. Seen while writing this test: with
``--conf spark.pyspark.python=./environment/bin/python`` and ``PYSPARK_PYTHON`` naming
another interpreter, ``format("pyq")`` was not found (the driver's discovery did not run the
archive's interpreter); the environment variable is what Spark's guide sets, and it works.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import venv
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest

from connector.client import Admin, Fetcher, Producer
from reference.kafka_cluster import die_with_parent
from tests.cli.support import pid_alive
from tests.sources import copy_tracked_sources
from tests.wire import wait_for

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
SPARK_HOME = Path(pyspark.__path__[0])  # pip-installed PySpark is a Spark distribution

JOB = textwrap.dedent('''
    """Upper-cases a topic into another; reports where its executors found Python and pyq."""
    import json
    import sys

    from pyspark.sql import SparkSession, functions as F

    bootstrap, source, sink = sys.argv[1:4]
    spark = SparkSession.builder.appName("pyq-deploy-check").getOrCreate()

    @F.udf("string")
    def where(_):
        import connector
        return f"{sys.executable}|{connector.__file__}"

    rows = (spark.read.format("pyq").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", source).option("startingOffsets", "earliest").load())
    out = rows.selectExpr("key", "upper(cast(value as string)) as value")
    (out.write.format("pyq").option("kafka.bootstrap.servers", bootstrap)
        .option("topic", sink).mode("append").save())
    print("EXECUTORS", json.dumps(sorted({r[0] for r in rows.select(where(F.col("value"))).collect()})))
    spark.stop()
''')


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert not pid_alive(proc.pid)


@pytest.fixture(scope="module")
def executor_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package built from a copy of the sources, installed with pandas into a fresh
    venv, packed by venv-pack: what the README tells a user to ship with ``--archives``."""
    base = tmp_path_factory.mktemp("deploy")
    source = copy_tracked_sources(base / "source")
    env_dir = base / "executor-env"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", str(source), "pandas<3"],
                   check=True, timeout=900)
    archive = base / "pyq-env.tar.gz"
    subprocess.run([str(BIN / "venv-pack"), "-p", str(env_dir), "-o", str(archive), "-q"],
                   check=True, timeout=600)
    return archive


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Spark standalone master and one worker (2 cores, 1 GiB) on loopback; the master URL.
    Stopped by pid at teardown, and killed by the kernel if this process dies first."""
    base = tmp_path_factory.mktemp("standalone")
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_WORKER_DIR": str(base / "work"), "SPARK_LOG_DIR": str(base)}
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    master_log = base / "master.log"
    with master_log.open("wb") as out:
        master = subprocess.Popen([spark_class, "org.apache.spark.deploy.master.Master",
                                   "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"],
                                  stdout=out, stderr=subprocess.STDOUT, env=env,
                                  preexec_fn=die_with_parent)
    worker: subprocess.Popen[bytes] | None = None
    try:
        url = wait_for(lambda: re.search(r"Starting Spark master at (spark://[\d.]+:\d+)",
                                         master_log.read_text()), 60,
                       what="the master's URL").group(1)
        worker_log = base / "worker.log"
        with worker_log.open("wb") as out:
            worker = subprocess.Popen([spark_class, "org.apache.spark.deploy.worker.Worker",
                                       "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                                       "--cores", "2", "--memory", "1g", url],
                                      stdout=out, stderr=subprocess.STDOUT, env=env,
                                      preexec_fn=die_with_parent)
        wait_for(lambda: "Successfully registered with master" in worker_log.read_text(), 60,
                 what="the worker registered")
        yield url
    finally:
        if worker is not None:
            _stop(worker)
        _stop(master)


def test_a_job_shipped_with_archives_runs_on_a_standalone_cluster(
        executor_archive: Path, standalone: str, shared_broker, tmp_path: Path) -> None:
    bootstrap = shared_broker.bootstrap_servers
    source, sink = "deploy-in", "deploy-out"
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topic(source, 2, 1)
        admin.create_topic(sink, 2, 1)
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(40):
            producer.send(source, b"event-%d" % i, key=b"k%d" % i, partition=i % 2)
        producer.flush()
    job = tmp_path / "deploy_check.py"
    job.write_text(JOB)
    # client mode: the driver plans the source in Python too, with the same ./environment
    (tmp_path / "environment").mkdir()
    subprocess.run(["tar", "-xzf", str(executor_archive), "-C", str(tmp_path / "environment")],
                   check=True)

    done = subprocess.run(
        [str(BIN / "spark-submit"), "--master", standalone,
         "--archives", f"{executor_archive}#environment",
         "--conf", "spark.ui.enabled=false", "--conf", "spark.executor.memory=512m",
         "--conf", "spark.sql.shuffle.partitions=2",
         str(job), bootstrap, source, sink],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")},
             "PYSPARK_PYTHON": "./environment/bin/python",
             "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"})
    failure = done.stderr[done.stderr.find("Traceback"):] if "Traceback" in done.stderr else ""
    assert done.returncode == 0, (failure or done.stderr)[:5000]

    executors = json.loads(done.stdout.split("EXECUTORS ", 1)[1].splitlines()[0])
    assert executors, done.stdout
    for entry in executors:
        python, module = entry.split("|")
        assert "/environment/bin/python" in python, entry  # the archive's interpreter
        assert "/environment/lib/" in module, entry  # pyq from the archive, not this checkout

    got: list[tuple[bytes | None, bytes | None]] = []
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        ends = admin.list_offsets({(sink, 0): "latest", (sink, 1): "latest"})
    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        for (_, partition), end in sorted(ends.items()):
            got += [(r.key, r.value) for r in fetcher.iter_records(sink, partition, 0, end.offset,
                                                                   timeout_ms=5000)]
    assert sorted(got) == sorted((b"k%d" % i, b"EVENT-%d" % i) for i in range(40))
