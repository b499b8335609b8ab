"""The source's schema: Spark's Kafka source columns, plus headers and attempt on request."""

from __future__ import annotations

BASE_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, "
               "timestamp timestamp, timestampType int")
HEADERS_COLUMN = "headers array<struct<key:string,value:binary>>"
ATTEMPT_COLUMN = "attempt int"


def spark_schema(include_headers: bool, include_attempt: bool) -> str:
    """DDL of the rows ``read()`` yields; ``attempt`` is 0 on first delivery, k on the k-th retry."""
    parts = [BASE_SCHEMA]
    if include_headers:
        parts.append(HEADERS_COLUMN)
    if include_attempt:
        parts.append(ATTEMPT_COLUMN)
    return ", ".join(parts)
