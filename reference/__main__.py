"""``python -m reference kafka``: fetch Apache Kafka's jars into the cache (``make kafka``).

``python -m reference spark-kafka`` fetches Spark's Kafka connector likewise, and
``python -m reference spark-kafka-requirements`` prints what the virtualenv of
``benchmarks/vs_spark_kafka.py`` installs (``make bench-vs``): this project's runtime
dependencies and its ``spark`` extra, with the pyspark of the connector's version in place
of the pinned one.
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - tomli is a dependency on 3.10
    import tomli as tomllib

from reference.jars import MissingRequirement, kafka_jars, spark_kafka_jars, spark_kafka_version

ROOT = Path(__file__).resolve().parents[1]
USAGE = "usage: python -m reference kafka | spark-kafka | spark-kafka-requirements"


def spark_kafka_requirements() -> list[str]:
    """pyq's runtime requirements and its ``spark`` extra, as ``pyproject.toml`` has them
    (not the installed metadata, which lags behind an edit until the next install), with
    pyspark pinned to the version of Spark's Kafka connector in
    ``reference/spark-kafka/pom.xml``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["spark"]]
    pyspark = [r for r in wanted if r.replace("_", "-").lower().startswith("pyspark")]
    if len(pyspark) != 1:
        raise RuntimeError(f"expected one pyspark requirement among {wanted}")
    return [r for r in wanted if r not in pyspark] + [f"pyspark=={spark_kafka_version()}"]


def main(argv: list[str]) -> int:
    if argv == ["spark-kafka-requirements"]:
        print("\n".join(spark_kafka_requirements()))
        return 0
    if argv not in (["kafka"], ["spark-kafka"]):
        print(USAGE, file=sys.stderr)
        return 2
    try:
        if argv == ["kafka"]:
            jars = kafka_jars()
            print(f"Apache Kafka {jars.version}: {jars.directory}")
        else:
            jars = spark_kafka_jars()
            print(f"Spark's Kafka connector {jars.version}: {jars.directory}")
    except MissingRequirement as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
