"""A record that always fails is redelivered maxRetries times, then dead-lettered."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from connector.client import Admin, Fetcher, Producer
from connector.console import ConsoleServer
from connector.source.failures import report_failed
from tests.wire import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def bootstrap(broker_under_test):
    """pyq's broker, then Apache Kafka: every test here holds on both."""
    return broker_under_test.bootstrap_servers


def test_poison_records_retry_then_dead_letter_while_the_rest_flows(spark, bootstrap, tmp_path):
    topic, dlq, group = "poisoned", "poisoned-dlq", "poison-job"
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topic(topic, 2, 1)
    with Producer({"bootstrap.servers": bootstrap, "acks": "all"}) as producer:
        for i in range(200):
            value = b"poison-%d" % i if i % 40 == 7 else b"ok-%d" % i
            producer.send(topic, value, partition=i % 2)
        producer.flush()

    seen: list[tuple[bytes, int]] = []

    def process(batch, _batch_id):
        rows = batch.select("value", "attempt", "topic", "partition", "offset").collect()
        seen.extend((r.value, r.attempt) for r in rows)
        bad = [r for r in rows if r.value.startswith(b"poison")]
        if bad:
            report_failed(bad, "cannot parse", bootstrap_servers=bootstrap, group_id=group)

    query = (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("groupId", group).option("maxRetries", "2").option("retryBackoffMs", "0")
             .option("deadLetterTopic", dlq).load()
             .writeStream.foreachBatch(process).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="300 milliseconds").start())
    try:
        def dead_letters():
            with Admin({"bootstrap.servers": bootstrap}) as admin:
                if dlq not in admin.list_topics():
                    return 0
                return list(admin.list_offsets({(dlq, 0): "latest"}).values())[0].offset
        wait_for(lambda: dead_letters() == 5, timeout=180, what="5 dead letters")
        wait_for(lambda: query.lastProgress is not None, timeout=30)
    finally:
        query.stop()

    attempts = Counter()
    for value, attempt in seen:
        attempts[(value, attempt)] += 1
    ok = [v for v, a in seen if v.startswith(b"ok")]
    assert sorted(ok) == sorted({v for v in ok}) and len(ok) == 195  # every good record, once
    for i in (7, 47, 87, 127, 167):
        assert [attempts[(b"poison-%d" % i, a)] for a in (0, 1, 2, 3)] == [1, 1, 1, 0]
    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        letters = list(fetcher.iter_records(dlq, 0, 0, 5))
    assert sorted(r.value for r in letters) == sorted(b"poison-%d" % i for i in (7, 47, 87, 127, 167))
    reason = dict(letters[0].headers)["pyq.reason"].decode()
    assert "maxRetries=2" in reason and "cannot parse" in reason
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        committed = admin.fetch_offsets(group, [(topic, 0), (topic, 1)])
    assert sorted(om.offset for om in committed.values()) == [100, 100]  # past the poison
    assert sum(json.loads(om.metadata)["dead_lettered"] for om in committed.values()) == 5
    assert {json.loads(om.metadata)["dead_letter_topic"] for om in committed.values()} == {dlq}
    console = ConsoleServer({"bootstrap.servers": bootstrap})  # its pipelines page says so
    try:
        page = console.app.test_client().get("/pipelines").get_data(as_text=True)
    finally:
        console.close()
    assert f'data-group="{group}"' in page and f"topic <a href=\"/topics/{dlq}\">" in page
    assert re.search(r'<td class="count">5</td><td>[^<]*maxRetries=2[^<]*cannot parse', page), page


def test_retries_survive_a_restart_from_the_checkpoint(spark, bootstrap, tmp_path):
    """Stop the query between a poison record's first and second retry, start it again from
    its checkpoint: the record still gets its second retry and then the dead-letter topic."""
    import threading

    topic, dlq, group = "poisoned-restart", "poisoned-restart-dlq", "poison-restart-job"
    poison = {b"poison-%d" % i for i in range(120) if i % 40 == 7}
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topic(topic, 2, 1)
    with Producer({"bootstrap.servers": bootstrap, "acks": "all"}) as producer:
        for i in range(120):
            producer.send(topic, b"poison-%d" % i if i % 40 == 7 else b"ok-%d" % i, partition=i % 2)
        producer.flush()

    seen: list[tuple[bytes, int]] = []
    first_retry_failed = threading.Event()

    def process(batch, _batch_id):
        rows = batch.select("value", "attempt", "topic", "partition", "offset").collect()
        seen.extend((r.value, r.attempt) for r in rows)
        bad = [r for r in rows if r.value in poison]
        if bad:
            report_failed(bad, "cannot parse", bootstrap_servers=bootstrap, group_id=group)
        if {v for v, a in seen if a == 1} >= poison:
            first_retry_failed.set()

    def start():
        return (spark.readStream.format("pyq").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic).option("startingOffsets", "earliest")
                .option("groupId", group).option("maxRetries", "2").option("retryBackoffMs", "1500")
                .option("deadLetterTopic", dlq).load()
                .writeStream.foreachBatch(process).option("checkpointLocation", str(tmp_path / "ck"))
                .trigger(processingTime="300 milliseconds").start())

    query = start()
    try:
        assert first_retry_failed.wait(120), "the first retries were not delivered"
    finally:
        query.stop()
    assert not any(a == 2 for _, a in seen), "second retry already delivered: nothing to test"

    def dead_letters():
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            if dlq not in admin.list_topics():
                return 0
            return list(admin.list_offsets({(dlq, 0): "latest"}).values())[0].offset

    query = start()
    try:
        wait_for(lambda: dead_letters() == 3, timeout=120, what="3 dead letters after the restart")
        wait_for(lambda: query.lastProgress is not None, timeout=30)
    finally:
        query.stop()

    attempts: dict[bytes, set[int]] = {}
    for value, attempt in seen:
        attempts.setdefault(value, set()).add(attempt)
    assert {v: attempts[v] for v in poison} == {v: {0, 1, 2} for v in poison}
    assert {v for v in attempts if v not in poison} == {b"ok-%d" % i for i in range(120) if i % 40 != 7}
    assert all(attempts[v] == {0} for v in attempts if v not in poison)
    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        letters = list(fetcher.iter_records(dlq, 0, 0, 3))
    assert sorted(r.value for r in letters) == sorted(poison)
    assert all(dict(r.headers)["pyq.failures"] == b"3" for r in letters)
    assert dead_letters() == 3
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        committed = admin.fetch_offsets(group, [(topic, 0), (topic, 1)])
    assert sorted(om.offset for om in committed.values()) == [60, 60]
    assert sum(json.loads(om.metadata)["dead_lettered"] for om in committed.values()) == 3
