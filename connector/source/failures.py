"""Failed records: how a pipeline reports them, and where they end up.

A pipeline that could not process some rows (say a ``foreachBatch`` function that found
malformed JSON) calls :func:`report_failed` with those rows. The reports are written to the
query's failures topic, ``<groupId>.pyq-failures`` — in the broker, not in any process's
memory — as small JSON records ``{"topic", "partition", "offset", "reason"}``. The source's
driver reads that topic when it plans the next micro-batch (its position in it is part of
the source offsets, so replays are deterministic) and hands each report to the partition's
:class:`~connector.source.partition_manager.PartitionManager`, which schedules the record
for another delivery after a backoff, or, after ``maxRetries``, dead-letters it: the
original record is copied to ``deadLetterTopic`` with the reason in a ``pyq.reason``
header (and ``pyq.topic``/``pyq.partition``/``pyq.offset``/``pyq.failures``).

>>> report_failed(bad_rows_df, "bad json", bootstrap_servers="127.0.0.1:9092",
...               group_id="sessionize")                        # doctest: +SKIP

On a secured cluster pass the same connection settings the query uses, with or without
their ``kafka.`` prefix: ``report_failed(df, "bad json", servers, "sessionize",
client_options={"kafka.security.protocol": "SASL_SSL", ...})``. The other functions take
the client options whole (``bootstrap.servers`` included), as the source's driver has them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

log = logging.getLogger(__name__)


def failures_topic(group_id: str) -> str:
    return f"{group_id}.pyq-failures"


def ensure_topic(client: Mapping[str, Any], topic: str, partitions: int = 1) -> None:
    from broker_sim.protocol.errors import TopicAlreadyExists
    from connector.client import Admin

    with Admin(dict(client)) as admin:
        if topic in admin.list_topics():
            return
        try:
            admin.create_topic(topic, partitions, -1)
        except TopicAlreadyExists:
            pass


def report_failed(rows: Any, reason: str, bootstrap_servers: str, group_id: str,
                  client_options: Mapping[str, Any] | None = None) -> int:
    """Report rows (a DataFrame, or rows/dicts with topic, partition, offset) as failed.

    Returns how many were reported. Every report is acknowledged by the broker (acks=all)
    before this returns, so a report is never lost once this call succeeded.
    ``client_options``: the query's connection settings (security), ``kafka.`` prefix or not.
    """
    from connector.client import Producer
    from connector.kafka_options import connection_options

    client = connection_options(bootstrap_servers, client_options)
    if hasattr(rows, "select"):  # a Spark DataFrame: only three small columns reach the driver
        rows = rows.select("topic", "partition", "offset").collect()
    topic = failures_topic(group_id)
    ensure_topic(client, topic)
    count = 0
    with Producer({**client, "acks": "all"}) as producer:
        futures = []
        for row in rows:
            get = row.__getitem__
            report = {"topic": get("topic"), "partition": int(get("partition")),
                      "offset": int(get("offset")), "reason": str(reason)[:200]}
            futures.append(producer.send(topic, json.dumps(report).encode(), partition=0))
            count += 1
        producer.flush()
        for f in futures:
            f.result(30)
    return count


def read_reports(client: Mapping[str, Any], group_id: str, start: int, end: int
                 ) -> list[dict[str, Any]]:
    """The reports at offsets ``[start, end)`` of the failures topic (partition 0)."""
    from connector.client import Fetcher

    if end <= start:
        return []
    with Fetcher(dict(client)) as fetcher:
        return [json.loads(r.value) for r in fetcher.iter_records(failures_topic(group_id), 0, start, end)
                if r.value is not None]  # a null value (tombstone) holds no failure


def dead_letter(client: Mapping[str, Any], topic: str, letters: Iterable[Any]) -> int:
    """Copy each given-up record to the dead-letter topic, with why, acks=all."""
    from connector.client import Fetcher, Producer

    letters = list(letters)
    if not letters:
        return 0
    ensure_topic(client, topic)
    sent = 0
    with Fetcher(dict(client)) as fetcher, Producer({**client, "acks": "all"}) as producer:
        futures = []
        for d in letters:
            try:
                records = list(fetcher.iter_records(d.topic, d.partition, d.offset, d.offset + 1,
                                                    timeout_ms=10_000))
            except Exception as e:  # the record may be gone; still say so
                log.warning("dead letter %s-%d@%d: original not readable (%s); the dead letter "
                            "carries its pyq.* headers without key and value (if retention "
                            "deleted it, a longer retention.ms on %s keeps records until they "
                            "are dead-lettered)", d.topic, d.partition, d.offset, e, d.topic)
                records = []
            key = records[0].key if records else None
            value = records[0].value if records else None
            headers = list(records[0].headers) if records else []
            headers += [("pyq.reason", d.reason.encode()), ("pyq.topic", d.topic.encode()),
                        ("pyq.partition", str(d.partition).encode()),
                        ("pyq.offset", str(d.offset).encode()),
                        ("pyq.failures", str(d.failures).encode())]
            futures.append(producer.send(topic, value, key=key, headers=headers))
        producer.flush()
        for f in futures:
            f.result(30)
            sent += 1
    log.info("dead-lettered %d record(s) to %s", sent, topic)
    return sent
