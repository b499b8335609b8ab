"""The source's schema: Spark's Kafka source columns, plus headers and attempt on request."""

from __future__ import annotations

from typing import Any

BASE_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, "
               "timestamp timestamp, timestampType int")
HEADERS_COLUMN = "headers array<struct<key:string,value:binary>>"
ATTEMPT_COLUMN = "attempt int"


def spark_schema(include_headers: bool, include_attempt: bool, formats: Any = None) -> str:
    """DDL of the rows ``read()`` yields; ``attempt`` is 0 on first delivery, k on the k-th
    retry. ``formats`` (a :class:`~connector.source.formats.Formats`): key and value decoded,
    and under mode=PERMISSIVE the corrupt-record column last."""
    base = BASE_SCHEMA
    if formats is not None:
        base = base.replace("key binary, value binary",
                            f"key {formats.ddl('key')}, value {formats.ddl('value')}")
    parts = [base]
    if include_headers:
        parts.append(HEADERS_COLUMN)
    if include_attempt:
        parts.append(ATTEMPT_COLUMN)
    if formats is not None and formats.mode == "PERMISSIVE" and formats.report_to is None:
        parts.append(f"`{formats.corrupt_column}` string")
    return ", ".join(parts)
