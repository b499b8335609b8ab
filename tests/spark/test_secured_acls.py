"""A secured pipeline under ACLs set by Kafka's own ``kafka-acls``, on pyq and on Apache Kafka.

Alice's query reads ``acl-in`` with a ``groupId`` and writes ``acl-out`` exactly once, over
SASL_SSL (SCRAM-SHA-512, a CA made here). The admin grants her exactly the ACLs the README
lists — Read on the input topic and on the ``groupId``; Write on the output topic and Read
on it (the sink commits its decision there); Write on the transactional ids
``pyq-sink-<queryName>-*`` (prefixed); Read on the group ``pyq-sink-<queryName>`` — with
``kafka-acls --add``, and the query copies every row exactly once. Without one of them the
query fails with an error that names the missing resource. Both brokers check ACLs with
nothing allowed unless an ACL says so (``allow.everyone.if.no.acl.found=false``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import Row

from connector.client import Admin, Fetcher
from reference.kafka_tools import java_client_properties, run_tool
from tests.secured import Secured, secured_broker_under_test
from tests.wire import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", params=["pyq", "kafka"])
def broker_under_test(request: pytest.FixtureRequest,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    """A secured pyq broker with its authorizer, then the session's secured Apache Kafka."""
    yield from secured_broker_under_test(request, tmp_path_factory)


def acls(broker: Secured, tmp_path: Path, *args: str) -> str:
    """``kafka-acls`` as the admin, over SASL_SSL."""
    admin = broker.options("admin")
    config = tmp_path / "admin.properties"
    config.write_text(java_client_properties(admin))
    return run_tool("kafka-acls", "--bootstrap-server", admin["bootstrap.servers"],
                    "--command-config", str(config), *args).stdout


def grants(query: str, group: str, source: str, sink: str) -> list[list[str]]:
    """The README's ACLs for alice's exactly-once query, as ``kafka-acls --add`` arguments."""
    alice = ["--allow-principal", "User:alice"]
    return [[*alice, "--operation", "Read", "--topic", source],
            [*alice, "--operation", "Read", "--group", group],
            [*alice, "--operation", "Write", "--operation", "Read", "--topic", sink],
            [*alice, "--operation", "Write", "--transactional-id", f"pyq-sink-{query}-",
             "--resource-pattern-type", "prefixed"],
            [*alice, "--operation", "Read", "--group", f"pyq-sink-{query}"]]


def spark_options(options: dict[str, Any]) -> dict[str, str]:
    return {f"kafka.{k}": str(v) for k, v in options.items()}


def run_query(spark, broker: Secured, tmp_path: Path, query: str, source: str, sink: str,
              group: str) -> Exception | None:
    """Alice's exactly-once copy, run to its end: the error it failed with (at start, or
    while running), None if it succeeded."""
    alice = spark_options(broker.options("alice"))
    try:
        q = (spark.readStream.format("pyq").options(**alice).option("subscribe", source)
             .option("startingOffsets", "earliest").option("groupId", group).load()
             .selectExpr("key", "upper(cast(value as string)) as value")
             .writeStream.format("pyq").options(**alice).option("topic", sink)
             .option("exactlyOnce", "true").option("queryName", query)
             .option("checkpointLocation", str(tmp_path / f"ck-{query}"))
             .trigger(availableNow=True).start())
        q.awaitTermination(300)
    except Exception as e:  # the error is what the test looks at
        return e
    return q.exception()


def setup_topics(broker: Secured, spark, source: str, sink: str, rows: int) -> None:
    with Admin(broker.options("admin")) as admin:
        admin.create_topic(source, 2, 1)
        admin.create_topic(sink, 2, 1)
    df = spark.createDataFrame([Row(key=f"k{i}", value=f"v{i}") for i in range(rows)])
    df.write.format("pyq").options(**spark_options(broker.options("admin"))) \
        .option("topic", source).mode("append").save()


def read_committed(broker: Secured, topic: str, user: str, at_least: int) -> list[bytes]:
    options = {**broker.options(user), "isolation.level": "read_committed"}
    with Fetcher(options) as fetcher:
        wait_for(lambda: sum(fetcher.offset_bounds(topic, p)[1] for p in (0, 1)) > at_least,
                 timeout=30, what="the commit markers")
        return sorted(r.value or b"" for p in (0, 1)
                      for r in fetcher.iter_records(topic, p, 0, fetcher.offset_bounds(topic, p)[1]))


def test_the_readme_acls_set_by_kafka_acls_suffice(spark, broker_under_test: Secured,
                                                    tmp_path: Path) -> None:
    for args in grants("acl-q", "acl-etl", "acl-in", "acl-out"):
        acls(broker_under_test, tmp_path, "--add", *args)
    listed = acls(broker_under_test, tmp_path, "--list", "--principal", "User:alice")
    assert "pyq-sink-acl-q-" in listed and "PREFIXED" in listed
    setup_topics(broker_under_test, spark, "acl-in", "acl-out", 300)

    assert run_query(spark, broker_under_test, tmp_path, "acl-q", "acl-in", "acl-out", "acl-etl") is None
    assert read_committed(broker_under_test, "acl-out", "alice", 300) == \
        sorted(b"V%d" % i for i in range(300))


@pytest.mark.parametrize(("missing", "named"), [
    (1, "{group}"),               # Read on the query's groupId
    (2, "{sink}"),                # Write/Read on the output topic
    (3, "pyq-sink-{query}-"),     # Write on the transactional ids
    (4, "pyq-sink-{query}"),      # Read on the sink's group
])
def test_one_missing_acl_fails_the_query_naming_it(spark, broker_under_test: Secured, tmp_path: Path,
                                                   missing: int, named: str) -> None:
    query, group = f"acl-q{missing}", f"acl-etl{missing}"
    source, sink = f"acl-q{missing}-in", f"acl-q{missing}-out"
    for i, args in enumerate(grants(query, group, source, sink)):
        if i != missing:
            acls(broker_under_test, tmp_path, "--add", *args)
    setup_topics(broker_under_test, spark, source, sink, 20)
    error = run_query(spark, broker_under_test, tmp_path, query, source, sink, group)
    assert error is not None
    assert named.format(group=group, sink=sink, query=query) in str(error), str(error)[:3000]
