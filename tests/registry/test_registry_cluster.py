"""The schema registry on a 3-broker cluster, judged by confluent-kafka's own clients.

``SchemaRegistryClient``, ``AvroSerializer`` and ``AvroDeserializer`` (the reference
clients of the Confluent Schema Registry API) against the registry every broker serves:
registrations through one broker are read through another (each request reads
``_schemas`` to its end first), ids are global and stable, evolution follows the subject's
compatibility level, soft and hard deletes, modes and references behave as the API says,
and records serialized by one broker's registry deserialize through another's. Concurrent
registrations through two brokers get distinct ids that every broker agrees on.
``_schemas`` is created on first use as a compacted topic replicated 3 times.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import (
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    SchemaRegistryError,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from connector.client import Admin
from connector.cluster import EmbeddedCluster
from tests import avro_schemas

pytestmark = [pytest.mark.integration, pytest.mark.cluster]  # starts controller + broker processes


record = partial(avro_schemas.record, namespace="pyq.test")


USER_V1 = record("User", {"name": "id", "type": "long"}, {"name": "name", "type": "string"})
USER_V2 = record("User", {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
                 {"name": "email", "type": ["null", "string"], "default": None})
USER_BAD = record("User", {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
                  {"name": "age", "type": "int"})  # no default: cannot read v1/v2 data


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(brokers=3, schema_registry=True) as c:
        yield c


def registry(cluster: EmbeddedCluster, broker: int) -> SchemaRegistryClient:
    """A client of one broker's registry only (no failover to the others)."""
    url = cluster.broker(broker).schema_registry_url
    assert url is not None and url.startswith("http://127.0.0.1:")
    return SchemaRegistryClient({"url": url})


def http(url: str, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
    req = urllib.request.Request(url + path, data=body, method=method,
                                 headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def error_of(call: Any) -> tuple[int, int]:
    with pytest.raises(SchemaRegistryError) as info:
        call()
    return info.value.http_status_code, info.value.error_code


def test_every_broker_serves_one_registry(cluster: EmbeddedCluster) -> None:
    urls = cluster.schema_registry_url.split(",")
    assert len(urls) == 3 and len(set(urls)) == 3
    r0, r1, r2 = (registry(cluster, i) for i in range(3))
    sid = r0.register_schema("users-value", Schema(USER_V1, "AVRO"))
    # Written through broker 0, read at once through 1 and 2 (fresh clients: no cache).
    assert json.loads(r1.get_schema(sid).schema_str or "")["name"] == "User"
    latest = r2.get_latest_version("users-value")
    assert (latest.schema_id, latest.version, latest.subject) == (sid, 1, "users-value")
    # The same schema again, or under another subject, through another broker: same id.
    assert r1.register_schema("users-value", Schema(USER_V1, "AVRO")) == sid
    assert r2.register_schema("users-copy", Schema(USER_V1, "AVRO")) == sid
    assert sorted(r0.get_subjects_by_schema_id(sid)) == ["users-copy", "users-value"]
    found = r1.lookup_schema("users-value", Schema(json.dumps(json.loads(USER_V1), indent=2), "AVRO"))
    assert (found.schema_id, found.version) == (sid, 1)
    assert r0.get_schema_types() == ["AVRO", "JSON", "PROTOBUF"]
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        topic = admin.describe_topics(["_schemas"])["_schemas"]
        configs = admin.describe_configs({("topic", "_schemas"): None})
    assert len(topic.partitions) == 1 and len(topic.partitions[0].replicas) == 3
    assert "compact" in str(configs)


def test_evolution_under_backward_and_per_subject_config(cluster: EmbeddedCluster) -> None:
    r0, r1 = registry(cluster, 0), registry(cluster, 1)
    v1 = r0.register_schema("evolve-value", Schema(USER_V1, "AVRO"))
    assert r0.get_compatibility() == "BACKWARD"
    v2 = r1.register_schema("evolve-value", Schema(USER_V2, "AVRO"))  # a field with a default
    assert v2 != v1
    assert r0.test_compatibility("evolve-value", Schema(USER_BAD, "AVRO")) is False
    assert error_of(lambda: r1.register_schema("evolve-value", Schema(USER_BAD, "AVRO"))) == (409, 409)
    assert r0.get_versions("evolve-value") == [1, 2]
    r1.set_compatibility("evolve-value", "NONE")
    assert r0.get_compatibility("evolve-value") == "NONE"
    assert r0.register_schema("evolve-value", Schema(USER_BAD, "AVRO")) > v2
    assert r1.get_versions("evolve-value") == [1, 2, 3]
    assert r1.get_compatibility() == "BACKWARD"  # the global level did not change


def test_soft_and_hard_deletes(cluster: EmbeddedCluster) -> None:
    r0, r2 = registry(cluster, 0), registry(cluster, 2)
    sid = r0.register_schema("gone-value", Schema(record("Gone", {"name": "x", "type": "int"}), "AVRO"))
    assert error_of(lambda: r2.delete_version("gone-value", 1, permanent=True)) == (404, 40407)
    assert r2.delete_subject("gone-value") == [1]
    assert "gone-value" not in r0.get_subjects()
    assert error_of(lambda: r0.get_versions("gone-value")) == (404, 40401)
    assert error_of(lambda: r0.delete_subject("gone-value")) == (404, 40404)
    assert r0.delete_subject("gone-value", permanent=True) == [1]
    assert error_of(lambda: registry(cluster, 1).get_schema(sid)) == (404, 40403)


def test_modes_and_import(cluster: EmbeddedCluster) -> None:
    r1 = registry(cluster, 1)
    url = cluster.broker(2).schema_registry_url
    assert url is not None
    r1.register_schema("locked-value", Schema(record("L", {"name": "x", "type": "int"}), "AVRO"))
    assert r1.update_mode("locked-value", "READONLY") == "READONLY"
    assert error_of(lambda: r1.register_schema(
        "locked-value", Schema(record("L", {"name": "x", "type": "int"},
                                      {"name": "y", "type": "int", "default": 1}), "AVRO"))) == (422, 42205)
    assert r1.get_mode("locked-value") == "READONLY"
    r1.delete_mode("locked-value")
    assert http(url, "PUT", "/mode/imported", json.dumps({"mode": "IMPORT"}).encode()) == (200, {"mode": "IMPORT"})
    body = {"schema": record("Imp", {"name": "x", "type": "int"}), "id": 5000, "version": 3}
    assert http(url, "POST", "/subjects/imported/versions", json.dumps(body).encode()) == (200, {"id": 5000})
    assert json.loads(r1.get_schema(5000).schema_str or "")["name"] == "Imp"
    assert r1.get_versions("imported") == [3]


def test_references(cluster: EmbeddedCluster) -> None:
    r0, r1 = registry(cluster, 0), registry(cluster, 1)
    r0.register_schema("address", Schema(record("Address", {"name": "city", "type": "string"}), "AVRO"))
    person = record("Person", {"name": "name", "type": "string"},
                    {"name": "home", "type": "pyq.test.Address"})
    refs = [SchemaReference("pyq.test.Address", "address", 1)]
    pid = r1.register_schema("person-value", Schema(person, "AVRO", refs))
    got = r0.get_version("person-value", 1)
    assert got.schema_id == pid
    assert [(r.name, r.subject, r.version) for r in got.schema.references or []] == [("pyq.test.Address", "address", 1)]
    assert r0.get_referenced_by("address", 1) == [pid]
    assert error_of(lambda: r1.delete_version("address", 1)) == (422, 42206)
    # Serialize with the referencing schema, deserialize through another broker.
    ser = AvroSerializer(r0, Schema(person, "AVRO", refs), conf={"auto.register.schemas": False})
    ctx = SerializationContext("person", MessageField.VALUE)
    data = ser({"name": "ada", "home": {"city": "London"}}, ctx)
    assert AvroDeserializer(registry(cluster, 2))(data, ctx) == {"name": "ada", "home": {"city": "London"}}


def test_serialize_produce_consume_deserialize(cluster: EmbeddedCluster) -> None:
    topic = "avro-users"
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topic(topic, num_partitions=1, replication_factor=3)
    ser = AvroSerializer(registry(cluster, 0), USER_V1)
    de = AvroDeserializer(registry(cluster, 2))
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    rows = [{"id": i, "name": f"user-{i}"} for i in range(20)]
    failed: list[Any] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(err)

    for row in rows:
        producer.produce(topic, value=ser(row, SerializationContext(topic, MessageField.VALUE)),
                         on_delivery=delivered)
    assert producer.flush(30) == 0 and not failed
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "avro-readers",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[dict[str, Any]] = []
    try:
        deadline = time.monotonic() + 30
        while len(got) < len(rows) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            value = msg.value()
            assert value is not None and value[0] == 0  # Confluent's wire format: magic 0, id
            got.append(de(value, SerializationContext(topic, MessageField.VALUE)))
    finally:
        consumer.close()
    assert got == rows
    assert registry(cluster, 1).get_latest_version(f"{topic}-value").schema_id == \
        int.from_bytes(ser(rows[0], SerializationContext(topic, MessageField.VALUE))[1:5], "big")


def test_concurrent_registrations_through_two_brokers_get_unique_ids(cluster: EmbeddedCluster) -> None:
    results: dict[str, int] = {}
    errors: list[BaseException] = []

    def register(broker: int) -> None:
        client = registry(cluster, broker)
        try:
            for i in range(10):
                subject = f"race-{broker}-{i}"
                schema = record(f"Race{broker}x{i}", {"name": "f", "type": "int"})
                results[subject] = client.register_schema(subject, Schema(schema, "AVRO"))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=register, args=(b,)) for b in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    assert len(results) == 20 and len(set(results.values())) == 20
    for broker in range(3):
        client = registry(cluster, broker)
        for subject, sid in results.items():
            assert client.get_latest_version(subject).schema_id == sid


def test_bad_input_is_refused_and_the_registry_keeps_serving(cluster: EmbeddedCluster) -> None:
    url = cluster.broker(1).schema_registry_url
    assert url is not None
    ok = json.dumps({"schema": record("Fine", {"name": "x", "type": "int"})}).encode()
    status, good = http(url, "POST", "/subjects/fine/versions", ok)
    assert status == 200
    assert http(url, "POST", "/subjects/fine/versions", b"{oops")[1]["error_code"] == 400
    bad = json.dumps({"schema": '{"type": "record", "name": "X", "fields": [{"name": "a", "type": "nope"}]}'})
    assert http(url, "POST", "/subjects/fine/versions", bad.encode())[1]["error_code"] == 42201
    huge = json.dumps({"schema": json.dumps({"type": "enum", "name": "E",
                                             "symbols": [f"S{i}" for i in range(200_000)]})})
    assert http(url, "POST", "/subjects/fine/versions", huge.encode())[1]["error_code"] == 42209
    assert http(url, "GET", "/schemas/ids/987654")[1]["error_code"] == 40403
    assert http(url, "DELETE", "/schemas/types")[0] == 405
    assert http(url, "GET", f"/schemas/ids/{good['id']}")[0] == 200
    assert http(url, "GET", "/subjects/fine/versions") == (200, [1])
