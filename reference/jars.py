"""Jars from Maven Central, fetched into an ignored cache on first use.

Two committed Maven files each pin a version (a property in the file, the one place it is
written) and list what to fetch:

- ``reference/kafka/pom.xml``: Apache Kafka, the broker and the tools
  (:func:`kafka_jars`, ``kafka.version``);
- ``reference/spark-kafka/pom.xml``: Spark's own Kafka connector, ``spark-sql-kafka-0-10``
  with the dependencies pyspark does not ship (:func:`spark_kafka_jars`, ``spark.version``;
  for ``benchmarks/vs_spark_kafka.py``);
- ``reference/avro/pom.xml``: Apache Avro's Java library, the judge of the schema
  registry's compatibility verdicts (:func:`avro_jars`, ``avro.version``).

Maven copies each with its runtime dependencies into ``.cache/<name>-<version>/lib``, and a
``complete`` file beside it marks a copy that finished. Later calls find that marker and
do nothing, so the cost (about 55 MB for Kafka, seconds from a warm ``~/.m2``) is paid once
per clone.

Two processes may ask at once (the suite's two pytest-xdist workers): an exclusive
``flock`` on ``.cache/<name>.lock`` lets one fetch while the other waits for it.

A machine without Java or Maven gets :class:`MissingRequirement`, whose message names
what to install; nothing is half-fetched.
"""

from __future__ import annotations

import fcntl
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POM = ROOT / "reference" / "kafka" / "pom.xml"
SPARK_KAFKA_POM = ROOT / "reference" / "spark-kafka" / "pom.xml"
AVRO_POM = ROOT / "reference" / "avro" / "pom.xml"
CACHE = ROOT / ".cache"


class MissingRequirement(RuntimeError):
    """Something fetching or running these jars needs (Java, Maven) is not installed."""


@dataclass(frozen=True)
class KafkaJars:
    """A directory of fetched jars (Kafka's, or Spark's Kafka connector's) and their version."""

    version: str
    directory: Path

    @property
    def classpath(self) -> str:
        """A Java class path naming every jar (Java expands ``dir/*``)."""
        return str(self.directory / "*")

    @property
    def files(self) -> list[Path]:
        """Every jar, by name (what ``spark.jars`` takes, comma-separated)."""
        return sorted(self.directory.glob("*.jar"))


def pom_property(pom: Path, name: str) -> str:
    """The value of ``<name>`` in a Maven file's properties."""
    match = re.search(rf"<{re.escape(name)}>([^<]+)</{re.escape(name)}>", pom.read_text())
    if match is None:
        raise RuntimeError(f"{pom} has no <{name}> property")
    return match.group(1)


def pinned_version() -> str:
    return pom_property(POM, "kafka.version")


def spark_kafka_version() -> str:
    """The version of Spark's Kafka connector the benchmark uses (and of its pyspark)."""
    return pom_property(SPARK_KAFKA_POM, "spark.version")


def java() -> str:
    """The ``java`` to run Kafka with (Kafka 4 needs Java 17 or newer)."""
    found = shutil.which("java")
    if found is None:
        raise MissingRequirement(
            "Apache Kafka needs Java 17 or newer and no 'java' is on PATH: install a JDK "
            "(Debian: apt-get install openjdk-17-jdk-headless)")
    return found


def _fetched(pom: Path, name: str, what: str, version: str) -> KafkaJars:
    """The runtime dependencies of ``pom`` in ``.cache/<name>-<version>/lib``, copied there by
    Maven first if no earlier call finished doing so."""
    home = CACHE / f"{name}-{version}"
    jars = KafkaJars(version, home / "lib")
    marker = home / "complete"
    if marker.exists():
        return jars
    java()
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MissingRequirement(
            f"fetching {what}'s jars needs Maven and no 'mvn' is on PATH: install it "
            "(Debian: apt-get install maven)")
    CACHE.mkdir(exist_ok=True)
    with open(CACHE / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():  # another process fetched them while this one waited
            return jars
        shutil.rmtree(jars.directory, ignore_errors=True)
        done = subprocess.run(
            [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
             "-DincludeScope=runtime", f"-DoutputDirectory={jars.directory}"],
            capture_output=True, text=True)
        if done.returncode != 0:
            raise MissingRequirement(
                f"Maven could not fetch {what} {version} (exit {done.returncode}):\n"
                + (done.stdout + done.stderr)[-4000:])
        marker.write_text(version + "\n")
    return jars


def kafka_jars() -> KafkaJars:
    """Kafka's jars, fetched first if this clone has not got them yet."""
    return _fetched(POM, "kafka", "Apache Kafka", pinned_version())


def spark_kafka_jars() -> KafkaJars:
    """Spark's Kafka connector and the dependencies pyspark lacks, fetched first if this clone
    has not got them yet (``reference/spark-kafka/pom.xml``)."""
    return _fetched(SPARK_KAFKA_POM, "spark-kafka", "Spark's Kafka connector",
                    spark_kafka_version())


def avro_jars() -> KafkaJars:
    """Apache Avro's Java library (``reference/avro/pom.xml``), fetched first if this clone
    has not got it yet."""
    return _fetched(AVRO_POM, "avro", "Apache Avro", pom_property(AVRO_POM, "avro.version"))
