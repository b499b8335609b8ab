"""Avro in Confluent's wire format through the pyq source (valueFormat=avro) and
from_confluent_avro, against the embedded cluster's schema registry.

The judge writing the data is confluent-kafka's ``AvroSerializer`` with its
``SchemaRegistryClient`` pointed at our registry; what our source reads is compared with
chispa to the DataFrame the test expects.
"""

from __future__ import annotations

import datetime
import decimal
import json
import struct
from collections.abc import Iterator

import pytest
from chispa import assert_df_equality
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from connector.client import Admin, Fetcher, Producer
from connector.cluster import EmbeddedCluster
from connector.functions import from_confluent_avro, to_confluent_avro
from tests.wire import wait_for

pytestmark = pytest.mark.integration

UTC = datetime.timezone.utc


def click(*extra: dict) -> str:
    return json.dumps({"type": "record", "name": "Click", "namespace": "pyq.test", "fields": [
        {"name": "id", "type": "long"},
        {"name": "page", "type": "string"},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                                    "scale": 2}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["VIEW", "BUY"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "device", "type": {"type": "record", "name": "Device", "fields": [
            {"name": "os", "type": "string"}, {"name": "raw", "type": "bytes"}]}},
        {"name": "note", "type": ["null", "string"], "default": None},
        *extra]})


CLICK_V1 = click()
CLICK_V2 = click({"name": "referrer", "type": ["null", "string"], "default": None})


def datum(i: int, **extra: object) -> dict:
    return {"id": i, "page": f"/p/{i}", "at": datetime.datetime(2026, 1, 1, 0, 0, i, tzinfo=UTC),
            "day": datetime.date(2026, 1, 1 + i), "amount": decimal.Decimal(f"{i}.25"),
            "kind": "BUY" if i % 2 else "VIEW", "tags": [f"t{i}"] * (i % 3),
            "attrs": {"n": i}, "device": {"os": "linux", "raw": bytes([i])},
            "note": None if i % 2 else f"note {i}", **extra}


def expected_row(i: int, **extra: object) -> tuple:
    d = datum(i)
    return (i, d["page"], d["at"].replace(tzinfo=None), d["day"], d["amount"], d["kind"],
            d["tags"], d["attrs"], (d["device"]["os"], bytearray(d["device"]["raw"])), d["note"],
            *extra.values())


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(brokers=1, schema_registry=True) as c:
        yield c


@pytest.fixture(scope="module")
def registry(cluster: EmbeddedCluster) -> SchemaRegistryClient:
    return SchemaRegistryClient(cluster.schema_registry_options())


def send(cluster: EmbeddedCluster, topic: str, values: list[bytes | None]) -> None:
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        if topic not in admin.list_topics():
            admin.create_topic(topic, 1, 1)
    with Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"}) as producer:
        for v in values:
            producer.send(topic, v, partition=0)
        producer.flush()


def serialize(registry: SchemaRegistryClient, schema: str, topic: str, data: list[dict]
              ) -> list[bytes]:
    serializer = AvroSerializer(registry, schema, conf={"auto.register.schemas": True})
    ctx = SerializationContext(topic, MessageField.VALUE)
    return [serializer(d, ctx) for d in data]


def read(spark, cluster: EmbeddedCluster, topic: str, **options: str):
    reader = (spark.read.format("pyq").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("subscribe", topic).option("valueFormat", "avro")
              .option("schemaRegistry.url", cluster.schema_registry_url))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_records_of_two_schema_versions_read_with_latest_and_pinned(spark, cluster, registry):
    topic = "clicks"
    send(cluster, topic, serialize(registry, CLICK_V1, topic, [datum(i) for i in range(3)])
         + serialize(registry, CLICK_V2, topic, [datum(i, referrer=f"r{i}") for i in (3, 4)]))

    latest = read(spark, cluster, topic)
    v2_fields = [f.name for f in latest.schema["value"].dataType.fields]
    assert v2_fields[-1] == "referrer" and len(v2_fields) == 11
    got = latest.select("offset", "value.*")
    expected = spark.createDataFrame(
        [(o, *expected_row(i, referrer=None if i < 3 else f"r{i}")) for o, i in enumerate(range(5))],
        got.schema)
    assert_df_equality(got.orderBy("offset"), expected.orderBy("offset"), ignore_nullable=True)

    pinned = read(spark, cluster, topic, valueSchemaVersion="1").select("offset", "value.*")
    assert "referrer" not in pinned.columns  # v2 records resolved into v1: the field dropped
    expected_v1 = spark.createDataFrame([(o, *expected_row(o)) for o in range(5)], pinned.schema)
    assert_df_equality(pinned.orderBy("offset"), expected_v1.orderBy("offset"), ignore_nullable=True)


def bad_values(registry: SchemaRegistryClient, topic: str) -> list[bytes]:
    good = serialize(registry, CLICK_V1, topic, [datum(0), datum(1)])
    return [good[0],
            b"plain text",                                  # no magic byte
            struct.pack(">bI", 0, 987654) + good[1][5:],    # an id the registry never gave
            good[1][:12],                                   # truncated payload
            good[1]]


def test_bad_records_failfast_and_permissive(spark, cluster, registry):
    topic = "mixed"
    send(cluster, topic, bad_values(registry, topic))

    with pytest.raises(Exception) as failed:
        read(spark, cluster, topic).collect()
    assert "the record at mixed-0 offset 1 does not decode: value: no magic byte 0" in str(failed.value)

    df = read(spark, cluster, topic, mode="PERMISSIVE").select("offset", "value.id", "_corrupt_record")
    rows = {r.offset: r for r in df.collect()}
    assert [rows[o].id for o in range(5)] == [0, None, None, None, 1]
    assert rows[0]._corrupt_record is None and rows[4]._corrupt_record is None
    assert rows[1]._corrupt_record.startswith("value: no magic byte 0 (first bytes 706c61696e)")
    assert "unknown schema id 987654" in rows[2]._corrupt_record and "40403" in rows[2]._corrupt_record
    assert rows[3]._corrupt_record.startswith("value: does not decode with writer schema")

    named = read(spark, cluster, topic, mode="PERMISSIVE", columnNameOfCorruptRecord="why")
    assert named.columns[-1] == "why"


def test_bad_records_go_to_the_dead_letter_topic(spark, cluster, registry, tmp_path):
    topic, dlq = "mixed-dlq", "mixed-dlq-letters"
    send(cluster, topic, bad_values(registry, topic))
    seen: list[int] = []

    def process(batch, _batch_id):
        seen.extend(r.value.id for r in batch.select("value").collect())

    query = (spark.readStream.format("pyq").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("valueFormat", "avro").option("schemaRegistry.url", cluster.schema_registry_url)
             .option("groupId", "avro-dlq").option("maxRetries", "0").option("retryBackoffMs", "0")
             .option("deadLetterTopic", dlq).load()
             .writeStream.foreachBatch(process).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="300 milliseconds").start())
    servers = {"bootstrap.servers": cluster.bootstrap_servers}
    try:
        def letters() -> int:
            with Admin(servers) as admin:
                if dlq not in admin.list_topics():
                    return 0
                return list(admin.list_offsets({(dlq, 0): "latest"}).values())[0].offset
        wait_for(lambda: letters() == 3, timeout=120, what="3 dead letters")
    finally:
        query.stop()
    assert sorted(seen) == [0, 1]  # the good records only, once
    with Fetcher(servers) as fetcher:
        dead = list(fetcher.iter_records(dlq, 0, 0, 3))
    by_offset = {int(dict(r.headers)["pyq.offset"]): dict(r.headers)["pyq.reason"].decode() for r in dead}
    assert sorted(by_offset) == [1, 2, 3]
    assert "no magic byte 0" in by_offset[1]
    assert "unknown schema id 987654" in by_offset[2]
    assert "does not decode" in by_offset[3]
    assert [r.value for r in sorted(dead, key=lambda r: dict(r.headers)["pyq.offset"])][0] == b"plain text"


EVENT = json.dumps({"type": "record", "name": "Event", "namespace": "pyq.test", "fields": [
    {"name": "id", "type": "long"},
    {"name": "page", "type": "string"},
    {"name": "kind", "type": {"type": "enum", "name": "EventKind", "symbols": ["VIEW", "BUY"]}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "price", "type": {"type": "fixed", "name": "Price", "size": 8, "logicalType": "decimal",
                               "precision": 12, "scale": 2}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "device", "type": ["null", {"type": "record", "name": "EventDevice", "fields": [
        {"name": "os", "type": "string"}, {"name": "raw", "type": "bytes"}]}], "default": None},
    {"name": "note", "type": ["null", "string"], "default": None}]})


def event(i: int) -> dict:
    return {"id": i, "page": f"/p/{i}", "kind": "BUY" if i % 2 else "VIEW",
            "at": datetime.datetime(2026, 1, 1, 0, 0, i, tzinfo=UTC), "day": datetime.date(2026, 1, 1 + i),
            "price": decimal.Decimal(f"{i}.25"), "tags": [f"t{i}"] * (i % 3),
            "device": None if i % 3 == 0 else {"os": "linux", "raw": bytes([i])},
            "note": None if i % 2 else f"note {i}"}


def test_a_corrupt_value_among_values_of_the_readers_schema_is_kept_with_its_reason(spark, cluster, registry):
    """Values of the reader's own schema take the fast path (polars); a corrupt one among
    them sends the batch the per-record way, so PERMISSIVE names it as before."""
    topic = "events-mixed"
    good = serialize(registry, EVENT, topic, [event(i) for i in range(6)])
    send(cluster, topic, [good[0], good[1] + b"\x00", good[2], good[3][:12], good[4], good[5]])
    df = read(spark, cluster, topic, mode="PERMISSIVE").select("offset", "value.*", "_corrupt_record")
    rows = {r.offset: r for r in df.collect()}
    schema_id = struct.unpack(">I", good[0][1:5])[0]
    assert rows[1]._corrupt_record == f"value: 1 byte(s) left after the datum of writer schema {schema_id}"
    assert rows[3]._corrupt_record.startswith(f"value: does not decode with writer schema {schema_id}")
    assert rows[1].id is None and rows[3].id is None
    kept = df.where("offset not in (1, 3)").drop("_corrupt_record")
    expected = spark.createDataFrame([
        (i, i, f"/p/{i}", "BUY" if i % 2 else "VIEW", datetime.datetime(2026, 1, 1, 0, 0, i),
         datetime.date(2026, 1, 1 + i), decimal.Decimal(f"{i}.25"), [f"t{i}"] * (i % 3),
         None if i % 3 == 0 else ("linux", bytearray([i])), None if i % 2 else f"note {i}")
        for i in (0, 2, 4, 5)], kept.schema)
    assert_df_equality(kept.orderBy("offset"), expected.orderBy("offset"), ignore_nullable=True)
    clean = read(spark, cluster, topic, startingOffsets='{"events-mixed": {"0": 4}}').select("value.*")
    assert_df_equality(clean.orderBy("id"), expected.drop("offset").where("id >= 4").orderBy("id"),
                       ignore_nullable=True)


def test_from_confluent_avro_over_a_binary_read(spark, cluster, registry):
    topic = "clicks-binary"
    send(cluster, topic, serialize(registry, CLICK_V1, topic, [datum(i) for i in range(3)]))
    binary = (spark.read.format("pyq").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("subscribe", topic).load())
    decoded = binary.select("offset", from_confluent_avro(
        "value", schemaRegistryUrl=cluster.schema_registry_url, subject=f"{topic}-value")
        .alias("click")).select("offset", "click.*")
    expected = spark.createDataFrame([(o, *expected_row(o)) for o in range(3)], decoded.schema)
    assert_df_equality(decoded.orderBy("offset"), expected.orderBy("offset"), ignore_nullable=True)

    with pytest.raises(ValueError, match="exactly one of subject and schemaId"):
        from_confluent_avro("value", schemaRegistryUrl=cluster.schema_registry_url)


@pytest.mark.parametrize(("options", "message"), [
    ({"valueFormat": "xml"}, "valueFormat='xml' is not allowed: binary, avro, protobuf, "
                             "json-schema"),
    ({"valueFormat": "avro", "schemaRegistry.url": None}, "schemaRegistry.url=None is not allowed"),
    ({"mode": "DROPMALFORMED"}, "mode='DROPMALFORMED' is not allowed: FAILFAST or PERMISSIVE"),
    ({"subscribe": "clicks,mixed"}, "clicks, mixed has no single subject: pin the reader schema "
                                    "with valueSchemaId"),
    ({"valueSchemaVersion": "1", "valueSchemaId": "1"}, "valueSchemaVersion='1' is not allowed: "
                                                         "not with valueSchemaId"),
    ({"keySchemaId": "1"}, "keySchemaId='1' is not allowed: only with keyFormat=avro"),
    ({"subscribe": "no-such-topic"}, "subject no-such-topic-value version latest"),
    ({"columnNameOfCorruptRecord": "why"}, "columnNameOfCorruptRecord='why' is not allowed: only "
                                           "with mode=PERMISSIVE"),
    ({"mode": "PERMISSIVE", "groupId": "g", "deadLetterTopic": "d"},
     "mode='PERMISSIVE' is not allowed: unset when groupId and deadLetterTopic are set"),
    ({"valueFormat": "binary", "schemaRegistry.url": "http://127.0.0.1:1"},
     "schemaRegistry.url='http://127.0.0.1:1' is not allowed: only with valueFormat or keyFormat "
     "avro, protobuf or json-schema"),
])
def test_refused_options(spark, cluster, registry, options, message):
    registry.register_schema("clicks-value", Schema(CLICK_V1, "AVRO"))  # as the first test did
    reader = (spark.read.format("pyq").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("subscribe", "clicks").option("valueFormat", "avro")
              .option("schemaRegistry.url", cluster.schema_registry_url))
    for k, v in options.items():
        if v is not None:
            reader = reader.option(k, v)
    if options.get("schemaRegistry.url", "") is None:
        reader = (spark.read.format("pyq").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
                  .option("subscribe", "clicks").option("valueFormat", "avro"))
    with pytest.raises(Exception) as refused:
        reader.load()
    assert message in str(refused.value)


def test_to_confluent_avro_written_by_the_sink_read_by_avro_deserializer(spark, cluster, registry):
    source, target = "clicks-in", "clicks-out"
    send(cluster, source, serialize(registry, CLICK_V1, source, [datum(i) for i in range(3)]))
    send(cluster, target, [])
    decoded = read(spark, cluster, source).select("value")
    encoded = decoded.select(to_confluent_avro(
        "value", schemaRegistryUrl=cluster.schema_registry_url, subject=f"{target}-value",
        schema=CLICK_V1).alias("value"))
    (encoded.write.format("pyq").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
     .option("topic", target).mode("append").save())
    with Fetcher({"bootstrap.servers": cluster.bootstrap_servers}) as fetcher:
        written = list(fetcher.iter_records(target, 0, 0, 3))
    deserializer = AvroDeserializer(registry)
    ctx = SerializationContext(target, MessageField.VALUE)
    got = sorted((deserializer(r.value, ctx) for r in written), key=lambda d: d["id"])
    assert got == [datum(i) for i in range(3)]
    assert registry.get_latest_version(f"{target}-value").schema_id == \
        int.from_bytes(written[0].value[1:5], "big")

    incompatible = click({"name": "score", "type": "int"})  # no default: old data unreadable
    with pytest.raises(Exception) as refused:
        to_confluent_avro("value", schemaRegistryUrl=cluster.schema_registry_url,
                          subject=f"{target}-value", schema=incompatible)
    assert "409" in str(refused.value) and f"{target}-value" in str(refused.value)


def test_sink_writes_a_struct_column_as_avro(spark, cluster, registry):
    source, target = "clicks-for-sink", "clicks-sunk"
    send(cluster, source, serialize(registry, CLICK_V1, source, [datum(i) for i in range(3)]))
    send(cluster, target, [])
    decoded = read(spark, cluster, source).select("value")

    def write(**options: str) -> None:
        writer = (decoded.write.format("pyq").mode("append")
                  .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
                  .option("topic", target).option("valueFormat", "avro")
                  .option("schemaRegistry.url", cluster.schema_registry_url))
        for k, v in options.items():
            writer = writer.option(k, v)
        writer.save()

    write(valueSchema=CLICK_V1, valueSubjectNameStrategy="RecordNameStrategy")
    with Fetcher({"bootstrap.servers": cluster.bootstrap_servers}) as fetcher:
        written = list(fetcher.iter_records(target, 0, 0, 3))
    deserializer = AvroDeserializer(registry)
    ctx = SerializationContext(target, MessageField.VALUE)
    assert sorted((deserializer(r.value, ctx) for r in written), key=lambda d: d["id"]) == \
        [datum(i) for i in range(3)]
    assert registry.get_latest_version("pyq.test.Click").schema_id == \
        int.from_bytes(written[0].value[1:5], "big")  # RecordNameStrategy's subject

    incompatible = click({"name": "score", "type": "int"})  # no default: old data unreadable
    with pytest.raises(Exception) as refused:
        write(valueSchema=incompatible, valueSubjectNameStrategy="RecordNameStrategy")
    assert "subject pyq.test.Click" in str(refused.value) and "409" in str(refused.value)
    with pytest.raises(Exception) as unknown:
        write(valueSubjectNameStrategy="FancyStrategy")
    assert ("valueSubjectNameStrategy='FancyStrategy' is not allowed: TopicNameStrategy, "
            "RecordNameStrategy, TopicRecordNameStrategy") in str(unknown.value)


def test_key_format_avro_with_a_binary_value(spark, cluster, registry):
    topic = "keyed"
    key_schema = json.dumps({"type": "record", "name": "Key", "fields": [
        {"name": "user", "type": "string"}, {"name": "shard", "type": ["null", "int"]}]})
    serializer = AvroSerializer(registry, key_schema)
    ctx = SerializationContext(topic, MessageField.KEY)
    send(cluster, topic, [])
    with Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"}) as producer:
        for i in range(2):
            producer.send(topic, b"v%d" % i, key=serializer({"user": f"u{i}", "shard": i or None},
                                                           ctx), partition=0)
        producer.flush()
    df = (spark.read.format("pyq").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
          .option("subscribe", topic).option("keyFormat", "avro")
          .option("schemaRegistry.url", cluster.schema_registry_url).load())
    got = df.select("offset", "key.user", "key.shard", "value").orderBy("offset")
    expected = spark.createDataFrame([(0, "u0", None, bytearray(b"v0")), (1, "u1", 1, bytearray(b"v1"))],
                                     got.schema)
    assert_df_equality(got, expected, ignore_nullable=True)


def test_registry_over_https_with_basic_auth(spark):
    """schemaRegistry.basic.auth.user.info and schemaRegistry.ssl.ca.location against the
    registry of a SASL_SSL cluster (https, basic auth against its SCRAM users)."""
    with EmbeddedCluster(brokers=1, security="SASL_SSL", users={"alice": "alice-secret"},
                         schema_registry=True) as secured:
        conf = secured.schema_registry_options()
        options = {"schemaRegistry.ssl.ca.location": conf["ssl.ca.location"],
                   "schemaRegistry.basic.auth.user.info": conf["basic.auth.user.info"]}
        data = serialize(SchemaRegistryClient(conf), CLICK_V1, "secret", [datum(i) for i in range(2)])
        df = spark.createDataFrame([(i, v) for i, v in enumerate(data)], "offset long, value binary")
        decoded = df.select("offset", from_confluent_avro(
            "value", schemaRegistryUrl=conf["url"], subject="secret-value", options=options)
            .alias("click")).select("offset", "click.*")
        expected = spark.createDataFrame([(o, *expected_row(o)) for o in range(2)], decoded.schema)
        assert_df_equality(decoded.orderBy("offset"), expected.orderBy("offset"), ignore_nullable=True)
        with pytest.raises(Exception) as refused:
            from_confluent_avro("value", schemaRegistryUrl=conf["url"], subject="secret-value",
                                options={**options, "schemaRegistry.basic.auth.user.info": "alice:wrong"})
        assert "401" in str(refused.value)
        with pytest.raises(Exception) as untrusted:
            from_confluent_avro("value", schemaRegistryUrl=conf["url"], subject="secret-value")
        assert "cannot reach the schema registry" in str(untrusted.value)
