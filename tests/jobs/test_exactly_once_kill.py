"""kill -9 an exactly-once streaming query's driver at random points, again and again, on
pyq's broker and on Apache Kafka (``broker_under_test``).

``eo_query.py`` (broker -> ``value + '!'`` -> broker, ``exactlyOnce``, micro-batches of 100
records) runs under ``spark-submit``. Three times the driver is killed with SIGKILL a
random moment after the output topic grew — inside a task's write, between a task's
write and the driver's commit, during the commit, or between micro-batches — and started
again from its checkpoint; the fourth run goes to the end. Then:

* a read_committed reader of the output sees every input record's result exactly once;
* a read_uncommitted reader sees those results and possibly rows of aborted transactions
  (written by a killed run and aborted by the next), never a result missing.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from connector.client import Admin, Fetcher, Producer
from tests.wire import wait_for

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RECORDS = 1500
KILLS = 3


def _read(bootstrap: str, topic: str, isolation: str) -> Counter[bytes | None]:
    out: Counter[bytes | None] = Counter()
    with Fetcher({"bootstrap.servers": bootstrap, "isolation.level": isolation}) as fetcher:
        for p in (0, 1):
            start, end = fetcher.offset_bounds(topic, p)
            out.update(r.value for r in fetcher.iter_records(topic, p, start, end))
    return out


def _end(bootstrap: str, topic: str) -> int:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        return sum(o.offset for o in admin.list_offsets({(topic, p): "latest" for p in (0, 1)}).values())


@pytest.fixture(scope="module")
def bootstrap(broker_under_test):
    """pyq's broker, then Apache Kafka (one node; the topics have one replica): the job's
    ``BOOTSTRAP`` argument, so the same test holds on both."""
    return broker_under_test.bootstrap_servers


def test_exactly_once_across_repeated_driver_kills(bootstrap, tmp_path):
    source, sink = "eo-kill-in", "eo-kill-out"
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topic(source, 2, 1)
        admin.create_topic(sink, 2, 1)
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(RECORDS):
            producer.send(source, b"r%d" % i, key=b"k%d" % (i % 13))
        producer.flush()
    command = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[2]",
               "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2",
               "tests/jobs/eo_query.py", bootstrap, source, sink, str(tmp_path / "ck")]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    rng = random.Random(20261125)
    kills = []
    for run in range(KILLS):
        before = _end(bootstrap, sink)
        driver = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_for(lambda b=before, d=driver: _end(bootstrap, sink) > b or d.poll() is not None,
                     timeout=240, interval=0.01, what=f"run {run} writing")
            delay = rng.uniform(0, 1.5)
            time.sleep(delay)
            os.kill(driver.pid, signal.SIGKILL)  # the spark-submit process: the driver's JVM
            exit_code = driver.wait(30)
        finally:
            try:
                os.killpg(driver.pid, signal.SIGKILL)  # its Python workers
            except ProcessLookupError:
                pass
        assert exit_code == -signal.SIGKILL, f"run {run} ended before it could be killed"
        kills.append((run, round(delay, 2), _end(bootstrap, sink)))
        time.sleep(0.5)
    print(f"\nkills (run, seconds after the output grew, output end offset): {kills}")

    final = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert final.returncode == 0 and "DONE" in final.stdout, final.stderr[-3000:]

    expected = Counter(b"r%d!" % i for i in range(RECORDS))
    committed = wait_for(lambda: (c := _read(bootstrap, sink, "read_committed")) == expected and c,
                         timeout=30, what="every result committed exactly once")
    assert committed == expected
    uncommitted = _read(bootstrap, sink, "read_uncommitted")
    assert set(uncommitted) == set(expected)  # nothing else, nothing missing
    assert all(uncommitted[v] >= 1 for v in expected)
    print(f"read_uncommitted sees {sum(uncommitted.values()) - RECORDS} aborted row(s) besides")
