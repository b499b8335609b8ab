"""What the process that plans a streaming query imports.

Spark starts a fresh Python process for every streaming query it starts, to call the
reader's ``initialOffset``, ``latestOffset``, ``partitions`` and ``commit``; the query's
first micro-batch waits for that process's imports. Its ``sys.path`` holds Spark's jars
and zips, so anything that scans installed distributions (``importlib.metadata``) there
walks them all. Each check runs in a fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import google_crc32c

ROOT = Path(__file__).resolve().parents[2]


def modules_after(statement: str) -> set[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=120)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_planning_imports_neither_the_read_path_nor_the_producer():
    loaded = modules_after("import connector.source.spark_readers")
    assert "connector.source.driver" in loaded
    assert "connector.client.admin" in loaded
    unwanted = {"connector.client.columnar", "connector.client.fetcher", "connector.client.consumer",
                "connector.client.producer", "pyarrow.compute", "importlib.metadata"}
    assert unwanted & loaded == set()


def test_the_record_layer_loads_its_crc_without_a_distribution_scan():
    loaded = modules_after("import broker_sim.protocol.records")
    # the crc32c package's __init__ asks importlib.metadata for its version
    assert "crc32c" not in loaded
    assert "importlib.metadata" not in loaded


def test_the_record_layers_crc_is_crc32c():
    from broker_sim.protocol.records.batch_header import crc32c

    data = bytes(range(256)) * 300
    assert crc32c(data) == google_crc32c.value(data)
    assert crc32c(memoryview(bytearray(data))[7:]) == google_crc32c.value(data[7:])
    assert crc32c(data[100:], crc32c(data[:100])) == google_crc32c.value(data)


def test_the_client_package_still_offers_every_name():
    import connector.client as client

    for name in client.__all__:
        assert getattr(client, name) is not None, name
    assert set(client.__all__) <= set(dir(client))
