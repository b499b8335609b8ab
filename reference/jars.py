"""Apache Kafka's jars, fetched from Maven Central into an ignored cache on first use.

The committed ``reference/kafka/pom.xml`` pins the version (its ``kafka.version``
property, the one place it is written) and lists the broker and the tools; Maven copies
them with their runtime dependencies into ``.cache/kafka-<version>/lib``, and a
``complete`` file beside it marks a copy that finished. Later calls find that marker and
do nothing, so the cost (about 55 MB, seconds from a warm ``~/.m2``) is paid once per
clone.

Two processes may ask at once (the suite's two pytest-xdist workers): an exclusive
``flock`` on ``.cache/kafka.lock`` lets one fetch while the other waits for it.

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
CACHE = ROOT / ".cache"


class MissingRequirement(RuntimeError):
    """Something Apache Kafka needs on this machine is not installed."""


@dataclass(frozen=True)
class KafkaJars:
    version: str
    directory: Path

    @property
    def classpath(self) -> str:
        """A Java class path naming every jar (Java expands ``dir/*``)."""
        return str(self.directory / "*")


def pinned_version() -> str:
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    if match is None:
        raise RuntimeError(f"{POM} has no <kafka.version> property")
    return match.group(1)


def java() -> str:
    """The ``java`` to run Kafka with (Kafka 4 needs Java 17 or newer)."""
    found = shutil.which("java")
    if found is None:
        raise MissingRequirement(
            "Apache Kafka needs Java 17 or newer and no 'java' is on PATH: install a JDK "
            "(Debian: apt-get install openjdk-17-jdk-headless)")
    return found


def kafka_jars() -> KafkaJars:
    """Kafka's jars, fetched first if this clone has not got them yet."""
    version = pinned_version()
    home = CACHE / f"kafka-{version}"
    jars = KafkaJars(version, home / "lib")
    marker = home / "complete"
    if marker.exists():
        return jars
    java()
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MissingRequirement(
            "fetching Apache Kafka's jars needs Maven and no 'mvn' is on PATH: install it "
            "(Debian: apt-get install maven)")
    CACHE.mkdir(exist_ok=True)
    with open(CACHE / "kafka.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():  # another process fetched them while this one waited
            return jars
        shutil.rmtree(jars.directory, ignore_errors=True)
        done = subprocess.run(
            [mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
             "-DincludeScope=runtime", f"-DoutputDirectory={jars.directory}"],
            capture_output=True, text=True)
        if done.returncode != 0:
            raise MissingRequirement(
                f"Maven could not fetch Apache Kafka {version} (exit {done.returncode}):\n"
                + (done.stdout + done.stderr)[-4000:])
        marker.write_text(version + "\n")
    return jars
