"""Protobuf and JSON Schema in Confluent's wire format through the pyq source and sink
(valueFormat=protobuf / json-schema) and the from_/to_confluent_* functions, against the
embedded cluster's schema registry.

Judges: confluent-kafka's ``ProtobufSerializer`` (with a message class protoc generates
here into tmp) and ``JSONSerializer`` write what the source reads; its
``ProtobufDeserializer`` / ``JSONDeserializer`` read back what the sink writes.
"""

from __future__ import annotations

import datetime
import decimal
import importlib
import json
import os
import sys
from collections.abc import Iterator

import grpc_tools
import pytest
from chispa import assert_df_equality
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from grpc_tools import protoc

from connector.client import Admin, Fetcher, Producer
from connector.cluster import EmbeddedCluster
from connector.functions import (
    from_confluent_json,
    from_confluent_protobuf,
    to_confluent_json,
    to_confluent_protobuf,
)

pytestmark = pytest.mark.integration

UTC = datetime.timezone.utc
PROTO = """syntax = "proto3";
package pyq.test;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Note { string text = 1; }

message Order {
  enum Status { NEW = 0; PAID = 1; }
  message Address { string city = 1; int32 zip = 2; }
  int64 id = 1;
  string item = 2;
  google.protobuf.Timestamp at = 3;
  google.protobuf.Int32Value discount = 4;
  Status status = 5;
  repeated string tags = 6;
  map<string, int64> counts = 7;
  Address ship_to = 8;
  oneof payment { string card = 9; string voucher = 10; }
  uint64 big = 11;
  bytes raw = 12;
}
"""
ORDER_COLUMNS = ("id", "item", "at", "discount", "status", "tags", "counts", "ship_to", "card",
                 "voucher", "big", "raw")
JSON_SCHEMA = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "pyq.test.Reading",
    "type": "object", "required": ["sensor", "value"],
    "properties": {"sensor": {"type": "string"}, "value": {"type": "number"},
                   "count": {"type": "integer"}, "ok": {"type": ["boolean", "null"]},
                   "tags": {"type": "array", "items": {"type": "string"}},
                   "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                   "where": {"$ref": "#/definitions/Place"}},
    "definitions": {"Place": {"type": "object", "properties": {"lat": {"type": "number"},
                                                               "lon": {"type": "number"}}}}})


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(brokers=1, schema_registry=True) as c:
        yield c


@pytest.fixture(scope="module")
def registry(cluster: EmbeddedCluster) -> SchemaRegistryClient:
    return SchemaRegistryClient(cluster.schema_registry_options())


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    """The generated module of PROTO (protoc of grpcio-tools, as a user would)."""
    out = tmp_path_factory.mktemp("proto")
    (out / "pyq_h_order.proto").write_text(PROTO)
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    assert protoc.main(["protoc", f"-I{out}", f"-I{include}", f"--python_out={out}",
                        str(out / "pyq_h_order.proto")]) == 0
    sys.path.insert(0, str(out))
    try:
        yield importlib.import_module("pyq_h_order_pb2")
    finally:
        sys.path.remove(str(out))


def send(cluster: EmbeddedCluster, topic: str, values: list[bytes]) -> None:
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        if topic not in admin.list_topics():
            admin.create_topic(topic, 1, 1)
    with Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"}) as producer:
        for v in values:
            producer.send(topic, v, partition=0)
        producer.flush()


def fetch(cluster: EmbeddedCluster, topic: str, n: int) -> list[bytes]:
    with Fetcher({"bootstrap.servers": cluster.bootstrap_servers}) as fetcher:
        return [r.value for r in fetcher.iter_records(topic, 0, 0, n) if r.value is not None]


def read(spark, cluster: EmbeddedCluster, topic: str, fmt: str, **options: str):
    reader = (spark.read.format("pyq").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("subscribe", topic).option("valueFormat", fmt)
              .option("schemaRegistry.url", cluster.schema_registry_url))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def order(pb, i: int):
    o = pb.Order(id=i, item=f"item-{i}", status=pb.Order.PAID if i % 2 else pb.Order.NEW,
                 tags=[f"t{i}"] * i, big=2**64 - 1 - i, raw=bytes([i]))
    o.at.FromDatetime(datetime.datetime(2026, 1, 1, 0, 0, i))
    if i % 2:
        o.discount.value = i * 10
        o.card = f"card-{i}"
    else:
        o.ship_to.city, o.ship_to.zip = "Oslo", 150 + i
    o.counts["n"] = i
    return o


def order_row(i: int) -> tuple:
    return (i, f"item-{i}", datetime.datetime(2026, 1, 1, 0, 0, i), i * 10 if i % 2 else None,
            "PAID" if i % 2 else "NEW", [f"t{i}"] * i, {"n": i},
            None if i % 2 else ("Oslo", 150 + i), f"card-{i}" if i % 2 else None, None,
            decimal.Decimal(2**64 - 1 - i), bytearray([i]))


def test_protobuf_from_the_serializer_read_by_the_source_and_the_function(spark, cluster, registry,
                                                                          pb):
    topic = "orders-pb"
    ctx = SerializationContext(topic, MessageField.VALUE)
    write_order = ProtobufSerializer(pb.Order, registry, {"use.deprecated.format": False})
    write_note = ProtobufSerializer(pb.Note, registry, {"use.deprecated.format": False})
    values = [write_order(order(pb, i), ctx) for i in range(3)]
    send(cluster, topic, [*values, write_note(pb.Note(text="hi"), ctx), b"plain"])

    df = read(spark, cluster, topic, "protobuf", valueProtobufMessage="Order", mode="PERMISSIVE")
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,item:string,at:timestamp,discount:int,status:string,tags:array<string>,"
        "counts:map<string,bigint>,ship_to:struct<city:string,zip:int>,card:string,"
        "voucher:string,big:decimal(20,0),raw:binary>")
    got = df.select("offset", "value.*", "_corrupt_record").orderBy("offset")
    expected = spark.createDataFrame(
        [(o, *order_row(o), None) for o in range(3)]
        + [(3, *[None] * len(ORDER_COLUMNS), "value: message pyq.test.Note (schema "
            f"{int.from_bytes(values[0][1:5], 'big')}, indexes [0]), not the column's "
            "pyq.test.Order"),
           (4, *[None] * len(ORDER_COLUMNS), "value: no magic byte 0 (first bytes 706c61696e)")],
        got.schema)
    assert_df_equality(got, expected, ignore_nullable=True)

    binary = (spark.read.format("pyq").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("subscribe", topic).load().where("offset < 3"))
    decoded = binary.select("offset", from_confluent_protobuf(
        "value", schemaRegistryUrl=cluster.schema_registry_url, subject=f"{topic}-value",
        message="pyq.test.Order").alias("o")).select("offset", "o.*")
    assert_df_equality(decoded.orderBy("offset"), got.where("offset < 3").drop("_corrupt_record"),
                       ignore_nullable=True)

    # the sink and to_confluent_protobuf write what ProtobufDeserializer reads back
    target, target2 = "orders-pb-out", "orders-pb-out2"
    send(cluster, target, [])
    send(cluster, target2, [])
    orders = df.where("offset < 3").select("value")
    (orders.write.format("pyq").mode("append")
     .option("kafka.bootstrap.servers", cluster.bootstrap_servers).option("topic", target)
     .option("valueFormat", "protobuf").option("schemaRegistry.url", cluster.schema_registry_url)
     .option("valueSchema", PROTO).option("valueProtobufMessage", "pyq.test.Order")
     .option("valueSubjectNameStrategy", "RecordNameStrategy").save())
    (orders.select(to_confluent_protobuf("value", schemaRegistryUrl=cluster.schema_registry_url,
                                         subject=f"{target2}-value", schema=PROTO,
                                         message="Order").alias("value"))
     .write.format("pyq").mode("append").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
     .option("topic", target2).save())
    deserialize = ProtobufDeserializer(pb.Order, {"use.deprecated.format": False})
    for t in (target, target2):
        written = fetch(cluster, t, 3)
        got_back = sorted((deserialize(v, SerializationContext(t, MessageField.VALUE))
                           for v in written), key=lambda m: m.id)
        assert got_back == [order(pb, i) for i in range(3)]
        assert written[0][5] == 2  # message indexes [1]: Order is the file's second message
    assert registry.get_latest_version("pyq.test.Order").schema_id == \
        int.from_bytes(fetch(cluster, target, 1)[0][1:5], "big")
    with pytest.raises(Exception) as refused:
        (df.select(df["value.item"].alias("value")).write.format("pyq").mode("append")
         .option("kafka.bootstrap.servers", cluster.bootstrap_servers).option("topic", target2)
         .option("valueFormat", "protobuf").option("schemaRegistry.url", cluster.schema_registry_url)
         .save())
    assert "column 'value' has type string; with valueFormat=protobuf it must be a struct" in \
        str(refused.value)


def reading(i: int) -> dict:
    return {"sensor": f"s{i}", "value": i + 0.5, "count": i, "ok": None if i == 1 else i % 2 == 0,
            "tags": ["a"] * i, "labels": {"room": f"r{i}"}, "where": {"lat": 59.9, "lon": 10.7}}


def reading_row(i: int) -> tuple:
    d = reading(i)
    return (d["sensor"], d["value"], d["count"], d["ok"], d["tags"], d["labels"], (59.9, 10.7))


def test_json_schema_from_the_serializer_read_validated_and_written_back(spark, cluster, registry):
    topic, target = "readings", "readings-out"
    ctx = SerializationContext(topic, MessageField.VALUE)
    values = [JSONSerializer(JSON_SCHEMA, registry)(reading(i), ctx) for i in range(3)]
    invalid = values[0][:5] + json.dumps({"value": 1}).encode()  # "sensor" is required
    send(cluster, topic, [*values, invalid])

    df = read(spark, cluster, topic, "json-schema", valueValidate="true", mode="PERMISSIVE")
    got = df.select("offset", "value.*", "_corrupt_record").orderBy("offset")
    # the fields follow the schema's properties in the order they were registered
    assert [f.name for f in df.schema["value"].dataType.fields] == \
        ["sensor", "value", "count", "ok", "tags", "labels", "where"]
    expected = spark.createDataFrame(
        [(o, *reading_row(o), None) for o in range(3)]
        + [(3, *[None] * 7, "value: not valid under writer schema "
            f"{int.from_bytes(values[0][1:5], 'big')}: at the value: 'sensor' is a required "
            "property")], got.schema)
    assert_df_equality(got, expected, ignore_nullable=True)

    unvalidated = read(spark, cluster, topic, "json-schema").where("offset = 3").select("value.*")
    assert unvalidated.collect()[0].asDict()["value"] == 1.0  # read as it is without valueValidate

    functions = (spark.read.format("pyq").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
                 .option("subscribe", topic).load().where("offset < 3")
                 .select("offset", from_confluent_json("value", schemaRegistryUrl=cluster.schema_registry_url,
                                                       subject=f"{topic}-value").alias("r"))
                 .select("offset", "r.*"))
    assert_df_equality(functions.orderBy("offset"), got.where("offset < 3").drop("_corrupt_record"),
                       ignore_nullable=True)

    send(cluster, target, [])
    rows = df.where("offset < 3").select("value")
    (rows.write.format("pyq").mode("append").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
     .option("topic", target).option("valueFormat", "json-schema")
     .option("schemaRegistry.url", cluster.schema_registry_url).option("valueSchema", JSON_SCHEMA)
     .option("valueSubjectNameStrategy", "TopicRecordNameStrategy").save())
    (rows.select(to_confluent_json("value", schemaRegistryUrl=cluster.schema_registry_url,
                                   subject=f"{target}-value", schema=JSON_SCHEMA).alias("value"))
     .write.format("pyq").mode("append").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
     .option("topic", target).save())
    deserialize = JSONDeserializer(JSON_SCHEMA, schema_registry_client=registry)
    back = [deserialize(v, SerializationContext(target, MessageField.VALUE))
            for v in fetch(cluster, target, 6)]
    assert sorted(back, key=lambda d: d["count"]) == [reading(i) for i in (0, 0, 1, 1, 2, 2)]
    assert registry.get_latest_version(f"{target}-pyq.test.Reading").schema_id > 0

    with pytest.raises(Exception) as refused:  # a row the schema refuses fails its task
        (spark.createDataFrame([({"value": 1.0},)], "value struct<value:double>")
         .write.format("pyq").mode("append").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
         .option("topic", target).option("valueFormat", "json-schema")
         .option("schemaRegistry.url", cluster.schema_registry_url).option("valueSchema", JSON_SCHEMA)
         .save())
    assert "'sensor' is a required property" in str(refused.value)


SHIPMENT_JSON = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "pyq.test.Shipment",
    "definitions": {"Base": {"type": "object", "required": ["id"],
                             "properties": {"zone": {"type": "string"}, "id": {"type": "integer"}}}},
    "allOf": [{"$ref": "#/definitions/Base"},
              {"type": "object", "properties": {"weight": {"type": "number"},
                                                "city": {"type": "string"},
                                                "id": {"type": "integer"}}},
              {"required": ["city"]}]}


def test_json_schema_all_of_read_as_one_struct_in_registration_order(spark, cluster, registry):
    """allOf of a $ref and an inline object, properties not in alphabetical order: written by
    JSONSerializer, served back as registered, read as one struct whose fields follow the
    order of appearance (a property in two parts once)."""
    topic = "shipments"
    ctx = SerializationContext(topic, MessageField.VALUE)
    rows = [{"zone": f"z{i}", "id": i, "weight": i + 0.25, "city": "Oslo"} for i in range(2)]
    values = [JSONSerializer(json.dumps(SHIPMENT_JSON), registry)(r, ctx) for r in rows]
    send(cluster, topic, values)
    schema_id = int.from_bytes(values[0][1:5], "big")
    assert registry.get_schema(schema_id).schema_str == json.dumps(SHIPMENT_JSON,
                                                                   separators=(",", ":"))

    got = read(spark, cluster, topic, "json-schema").select("value.*")
    expected = spark.createDataFrame([tuple(r.values()) for r in rows],
                                     "zone string, id bigint, weight double, city string")
    assert_df_equality(got, expected, ignore_nullable=True, ignore_row_order=True)
    function = (spark.read.format("pyq").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
                .option("subscribe", topic).load()
                .select(from_confluent_json("value", schemaRegistryUrl=cluster.schema_registry_url,
                                            subject=f"{topic}-value").alias("r")))
    assert function.schema["r"].dataType.simpleString() == \
        "struct<zone:string,id:bigint,weight:double,city:string>"


@pytest.mark.parametrize(("options", "message"), [
    ({"valueFormat": "xml"}, "valueFormat='xml' is not allowed: binary, avro, protobuf, json-schema"),
    ({"valueFormat": "protobuf", "valueValidate": "true"},
     "valueValidate='true' is not allowed: only with valueFormat=json-schema"),
    ({"valueFormat": "json-schema", "valueProtobufMessage": "X"},
     "valueProtobufMessage='X' is not allowed: only with valueFormat=protobuf"),
    ({"valueFormat": "protobuf", "valueProtobufMessage": "Nope"},
     "valueProtobufMessage='Nope' is not allowed: a message of the schema"),
    ({"valueFormat": "json-schema", "subscribe": "odd"},
     "valueFormat='json-schema' is not allowed: a JSON Schema with a Spark type: value.v: oneOf "
     "of 2 non-null schemas has no single Spark type"),
    ({"valueFormat": "json-schema", "subscribe": "clash"},
     "value: allOf: property 'id' is bigint in one part and string in another"),
])
def test_refused_options(spark, cluster, registry, options, message):
    client = cluster_client(cluster)
    client.register("orders-pb-value", {"schema": PROTO, "schemaType": "PROTOBUF"})
    client.register("odd-value", {"schemaType": "JSON", "schema": json.dumps(
        {"type": "object", "properties": {"v": {"oneOf": [{"type": "string"},
                                                          {"type": "integer"}]}}})})
    client.register("clash-value", {"schemaType": "JSON", "schema": json.dumps({"allOf": [
        {"properties": {"id": {"type": "integer"}}}, {"properties": {"id": {"type": "string"}}}]})})
    opts = {"subscribe": "orders-pb", **options}
    reader = (spark.read.format("pyq").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("schemaRegistry.url", cluster.schema_registry_url))
    for k, v in opts.items():
        reader = reader.option(k, v)
    with pytest.raises(Exception) as refused:
        reader.load()
    assert message in str(refused.value)


def cluster_client(cluster: EmbeddedCluster):
    from connector.registry.client import RegistryClient

    return RegistryClient(cluster.schema_registry_url)


def test_wire_format_doctests():
    """Confluent's header and Protobuf message indexes (connector.registry.framing)."""
    import doctest

    from connector.registry import framing

    assert doctest.testmod(framing).failed == 0


def test_protobuf_with_a_reference_resolved_across_schema_versions(cluster):
    """A message importing another registered schema (a reference), written with version
    2 of its subject and read with version 1 pinned: the added field dropped by Protobuf's
    field-number rules (the decoders alone, no Spark)."""
    from connector.registry.protobuf_codec import protobuf_writer, resolve_protobuf_reader
    from connector.registry.settings import RegistrySettings

    client = cluster_client(cluster)
    client.register("pyq-place", {"schemaType": "PROTOBUF", "schema":
                                  'syntax = "proto3"; package pyq.ref; '
                                  "message Place { string city = 1; }"})
    visit = ('syntax = "proto3"; package pyq.ev; import "place.proto"; '
             "message Visit { int64 id = 1; pyq.ref.Place at = 2; %s}")
    refs = [{"name": "place.proto", "subject": "pyq-place", "version": 1}]
    for extra in ("", "string note = 3; "):
        client.register("visits-value", {"schemaType": "PROTOBUF", "schema": visit % extra,
                                         "references": refs})
    settings = RegistrySettings(cluster.schema_registry_url)
    writer = protobuf_writer(settings, "visits-value", None, None, False, None, "message")
    assert writer.description.startswith("subject visits-value version 2")
    data = writer.encode({"id": 7, "at": {"city": "Oslo"}, "note": "late"})

    reader = resolve_protobuf_reader("value", settings, "visits-value", "1", None, None, "m")
    assert reader.ddl == "struct<`id`: bigint, `at`: struct<`city`: string>>"
    column, reasons = reader.decoder().decode([data, data[:5] + b"\x02\x04"])  # [2]
    assert column.to_pylist()[0] == {"id": 7, "at": {"city": "Oslo"}}
    assert reasons[0] is None
    assert reasons[1] is not None and "name no message" in reasons[1]


def test_json_schema_with_a_reference(cluster):
    """A JSON Schema whose property is a ``$ref`` to another registered schema (a
    reference, by its name): typed and validated through it (the decoders alone)."""
    from connector.registry.framing import header
    from connector.registry.json_schema_codec import json_writer, resolve_json_reader
    from connector.registry.settings import RegistrySettings

    client = cluster_client(cluster)
    client.register("pyq-address", {"schemaType": "JSON", "schema": json.dumps(
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})})
    sid = client.register("people-value", {"schemaType": "JSON", "schema": json.dumps(
        {"type": "object", "properties": {"name": {"type": "string"},
                                          "home": {"$ref": "address.json"}}}),
        "references": [{"name": "address.json", "subject": "pyq-address", "version": 1}]})
    settings = RegistrySettings(cluster.schema_registry_url)
    data = json_writer(settings, "people-value", None, None, False).encode(
        {"name": "Ada", "home": {"city": "London"}})
    reader = resolve_json_reader("value", settings, "people-value", None, None, validate=True)
    assert reader.ddl == "struct<`name`: string, `home`: struct<`city`: string>>"  # as registered
    homeless = header(sid) + json.dumps({"name": "Bo", "home": {}}).encode()
    column, reasons = reader.decoder().decode([data, homeless])
    assert column.to_pylist()[0] == {"name": "Ada", "home": {"city": "London"}}
    assert reasons == [None, f"value: not valid under writer schema {sid}: at home: 'city' is a "
                             "required property"]
