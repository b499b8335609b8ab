"""pyq's Spark source and sink (``valueFormat=avro``) against a schema registry that is not
pyq's: Apicurio Registry's Confluent-compatible API.

``python -m reference.foreign_registry`` builds Apicurio Registry (the first time; Maven,
Java 17, ``reference/apicurio/pom.xml``, into ``.cache/apicurio/``), starts it on a free
loopback port with its default in-memory storage, starts an :class:`EmbeddedCluster` of
one broker without pyq's registry, and checks, printing each step:

1. confluent-kafka's ``AvroSerializer`` registers a schema with Apicurio and writes records;
2. pyq's source (``schemaRegistry.url=<apicurio>/apis/ccompat/v7``) reads them as the
   rows expected (chispa);
3. pyq's sink (``valueFormat=avro``, ``valueSchema``) registers its subject with Apicurio
   and writes those rows to another topic;
4. confluent-kafka's ``AvroDeserializer``, asking Apicurio, reads the sink's records as
   the data written in step 1, and pyq's source reads them back as the same rows.

It exits 0 when all hold, 1 with the failed check otherwise. Apicurio and the cluster are
stopped on the way out (Apicurio by its own pid).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reference.jars import MissingRequirement

ROOT = Path(__file__).resolve().parent.parent
POM_DIR = ROOT / "reference" / "apicurio"
BUILD_DIR = ROOT / ".cache" / "apicurio"
RUNNER = BUILD_DIR / "target" / "apicurio-runner-1-runner.jar"
CCOMPAT = "/apis/ccompat/v7"
LISTENING = re.compile(r"Listening on: (http://127\.0\.0\.1:\d+)")

SCHEMA = json.dumps({"type": "record", "name": "Click", "namespace": "pyq.foreign", "fields": [
    {"name": "id", "type": "long"},
    {"name": "page", "type": "string"},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "note", "type": ["null", "string"], "default": None}]})


def datum(i: int) -> dict:
    return {"id": i, "page": f"/p/{i}", "tags": [f"t{i}"] * (i % 3),
            "note": None if i % 2 else f"note {i}"}


def apicurio_jar() -> Path:
    """The runnable jar, built from the committed pom on first use (a ``flock`` lets one
    process build while another waits)."""
    if RUNNER.exists():
        return RUNNER
    if shutil.which("mvn") is None or shutil.which("java") is None:
        raise MissingRequirement("building Apicurio Registry needs Maven and Java 17: install them")
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with open(BUILD_DIR.parent / "apicurio.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not RUNNER.exists():
            shutil.copy(POM_DIR / "pom.xml", BUILD_DIR / "pom.xml")
            shutil.rmtree(BUILD_DIR / "src", ignore_errors=True)
            shutil.copytree(POM_DIR / "src", BUILD_DIR / "src")
            subprocess.run(["mvn", "-B", "-q", "-DskipTests", "package"], cwd=BUILD_DIR,
                           check=True)
    return RUNNER


@contextmanager
def apicurio(timeout_s: float = 120.0) -> Iterator[str]:
    """Apicurio Registry on a free loopback port; yields its base URL."""
    jar = apicurio_jar()
    with tempfile.TemporaryDirectory(prefix="apicurio-") as tmp:
        log_path = Path(tmp) / "apicurio.log"
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                ["java", "-Dquarkus.http.host=127.0.0.1", "-Dquarkus.http.port=0", "-jar",
                 str(jar)], stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
        try:
            deadline = time.monotonic() + timeout_s
            while not (found := LISTENING.search(log_path.read_text())):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"Apicurio did not start:\n{log_path.read_text()[-3000:]}")
                time.sleep(0.2)
            yield found.group(1)
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def check(spark: Any, bootstrap: str, registry_url: str) -> None:
    from chispa import assert_df_equality
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from connector.client import Admin, Fetcher, Producer

    client = SchemaRegistryClient({"url": registry_url})
    source, target, n = "clicks", "clicks-sunk", 5
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topic(source, 1, 1)
        admin.create_topic(target, 1, 1)
    serializer = AvroSerializer(client, SCHEMA, conf={"auto.register.schemas": True})
    ctx = SerializationContext(source, MessageField.VALUE)
    with Producer({"bootstrap.servers": bootstrap, "acks": "all"}) as producer:
        for i in range(n):
            producer.send(source, serializer(datum(i), ctx), partition=0)
        producer.flush()
    print(f"1. AvroSerializer wrote {n} records; Apicurio's subjects: {client.get_subjects()}")

    def read(topic: str) -> Any:
        return (spark.read.format("pyq").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic).option("valueFormat", "avro")
                .option("schemaRegistry.url", registry_url).load())

    decoded = read(source).select("value")
    rows = decoded.select("value.*")
    expected = spark.createDataFrame(
        [(d["id"], d["page"], d["tags"], d["note"]) for d in map(datum, range(n))], rows.schema)
    assert_df_equality(rows.orderBy("id"), expected.orderBy("id"), ignore_nullable=True)
    print(f"2. pyq's source read {rows.count()} rows equal to those expected (chispa)")

    (decoded.write.format("pyq").mode("append").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", target).option("valueFormat", "avro")
     .option("schemaRegistry.url", registry_url).option("valueSchema", SCHEMA).save())
    latest = client.get_latest_version(f"{target}-value")
    print(f"3. pyq's sink wrote; Apicurio has {target}-value version {latest.version}, "
          f"id {latest.schema_id}")

    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        written = list(fetcher.iter_records(target, 0, 0, n))
    deserializer = AvroDeserializer(client)
    tctx = SerializationContext(target, MessageField.VALUE)
    got = sorted((deserializer(r.value, tctx) for r in written), key=lambda d: d["id"])
    assert got == [datum(i) for i in range(n)], got
    ids = {int.from_bytes((r.value or b"")[1:5], "big") for r in written}
    assert ids == {latest.schema_id}, ids
    back = read(target).select("value.*")
    assert_df_equality(back.orderBy("id"), expected.orderBy("id"), ignore_nullable=True)
    print(f"4. AvroDeserializer read the sink's {len(got)} records as written (schema id "
          f"{ids}); pyq's source read them back equal (chispa)")


def main() -> int:
    from connector.cluster import EmbeddedCluster
    from connector.spark_session import build_session

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    started = time.monotonic()
    with apicurio() as base, EmbeddedCluster(brokers=1) as cluster:
        print(f"Apicurio Registry at {base} (up in {time.monotonic() - started:.1f} s); "
              f"pyq cluster at {cluster.bootstrap_servers}")
        spark = build_session("pyq-foreign-registry", "local[2]", shuffle_partitions=2,
                              workers_use_this_python=True)
        try:
            check(spark, cluster.bootstrap_servers, base + CCOMPAT)
        except AssertionError as e:
            print(f"FAILED: {e}", file=sys.stderr)
            return 1
        finally:
            spark.stop()
    print(f"all checks held ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
