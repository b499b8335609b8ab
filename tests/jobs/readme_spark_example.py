"""The README's Spark example ("Using it from Spark"), run as written, for spark-submit.

Used by ``test_readme_quiet.py``: ``spark-submit tests/jobs/readme_spark_example.py
README BOOTSTRAP CHECKPOINT``. The first ``python`` block of the README's "Using it from
Spark" section is executed with its ``127.0.0.1:9092`` replaced by BOOTSTRAP and its
``/tmp/ck`` by CHECKPOINT, and ``spark`` a session; then the query it started runs until
every record available is processed and stops. Prints ``DONE`` at the end.
"""

from __future__ import annotations

import logging
import re
import sys

from pyspark.sql import SparkSession


def readme_example(readme: str) -> str:
    section = readme.split("## Using it from Spark", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    if match is None:
        raise SystemExit("no python block in the README's 'Using it from Spark'")
    return match.group(1)


def main(readme_path: str, bootstrap: str, checkpoint: str) -> None:
    with open(readme_path, encoding="utf-8") as f:
        code = readme_example(f.read())
    code = code.replace("127.0.0.1:9092", bootstrap).replace("/tmp/ck", checkpoint)
    spark = SparkSession.builder.appName("readme-example").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    logging.getLogger("readme").warning("running the README's example")  # shows the format
    exec(compile(code, "README.md", "exec"), {"spark": spark})
    [query] = spark.streams.active
    query.processAllAvailable()
    query.stop()
    if query.exception() is not None:
        raise SystemExit(f"query failed: {query.exception()}")
    print("DONE")


if __name__ == "__main__":
    main(*sys.argv[1:4])
