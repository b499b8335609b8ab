"""Report on a dead-letter topic: how many records, why, and a few samples.

Batch-reads the topic with ``spark.read.format("pyq")`` and ``includeHeaders=true``; the
source copied each given-up record there with ``pyq.reason``, ``pyq.topic``,
``pyq.partition``, ``pyq.offset`` and ``pyq.failures`` headers::

    spark-submit jobs/replay_dead_letters.py --bootstrap-server 127.0.0.1:9092 --topic clicks-dlq

A secured cluster: ``--command-config FILE`` and ``-X NAME=VALUE`` (:mod:`connection_options`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from connection_options import add_connection_options, client_options, spark_options


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="replay_dead_letters",
                                description="Count and sample the records of a dead-letter topic.")
    add_connection_options(p)
    p.add_argument("--topic", default="clicks-dlq", help="the dead-letter topic")
    p.add_argument("--samples", type=int, default=5, help="how many records to show")
    p.add_argument("--master", default=None, help="Spark master when not set by spark-submit")
    return p


def report(spark: Any, client: str | dict[str, Any], topic: str, samples: int = 5) -> dict[str, Any]:
    """{"count": n, "by_reason": {reason: n}, "samples": [dict, ...]}; ``client``: the
    client options (:func:`connection_options.client_options`) or just bootstrap servers."""
    from pyspark.sql import functions as F

    from connector.client import Admin

    if isinstance(client, str):
        client = {"bootstrap.servers": client}
    with Admin(client) as admin:
        if topic not in admin.list_topics():
            return {"count": 0, "by_reason": {}, "samples": []}
    df = (spark.read.format("pyq").options(**spark_options(client))
          .option("subscribe", topic).option("includeHeaders", "true").load())

    def header(name: str) -> Any:
        return F.filter("headers", lambda h: h["key"] == name)[0]["value"].cast("string")

    letters = df.select(F.col("key").cast("string").alias("key"),
                        F.col("value").cast("string").alias("value"),
                        header("pyq.reason").alias("reason"),
                        header("pyq.topic").alias("source_topic"),
                        header("pyq.partition").cast("int").alias("source_partition"),
                        header("pyq.offset").cast("long").alias("source_offset"),
                        header("pyq.failures").cast("int").alias("failures")).cache()
    count = letters.count()
    by_reason = {r.reason: r["count"] for r in letters.groupBy("reason").count().collect()}
    rows = letters.orderBy("source_partition", "source_offset").limit(samples).collect()
    letters.unpersist()
    return {"count": count, "by_reason": by_reason, "samples": [r.asDict() for r in rows]}


def main(argv: list[str] | None = None, spark: Any = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    client = client_options(parser, args)
    own = spark is None
    if own:
        from connector.spark_session import build_session

        spark = build_session("pyq-replay-dead-letters", args.master)
    try:
        result = report(spark, client, args.topic, args.samples)
    finally:
        if own:
            spark.stop()
    print(f"dead letters in {args.topic}: {result['count']}")
    for reason, n in sorted(result["by_reason"].items(), key=lambda kv: -kv[1]):
        print(f"  {n:>6}  {reason}")
    if result["samples"]:
        print("samples:")
    for s in result["samples"]:
        print(f"  {s['source_topic']}-{s['source_partition']}@{s['source_offset']} "
              f"failures={s['failures']} key={s['key']!r} value={s['value']!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
