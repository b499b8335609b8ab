"""The console's schemas page and the message browser decoding Confluent-framed keys and
values, in Chromium, on ``EmbeddedCluster(schema_registry=True, console_port=0)`` (the
console given the registry by the cluster): records written by confluent-kafka's own
AvroSerializer, JSONSerializer and ProtobufSerializer (the judges of the wire format) are
shown decoded with their schema id and subject; plain text, and a magic byte with an id
the registry does not know, are shown as bytes."""

from __future__ import annotations

import importlib
import os
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from grpc_tools import protoc

from connector.client import Admin, NewTopic, Producer
from connector.cluster import EmbeddedCluster

pytestmark = [pytest.mark.browser, pytest.mark.cluster]

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).parent / "screenshots"
TOPIC = "framed"
CLICK_AVRO = ('{"type": "record", "name": "Click", "namespace": "pyq.console", "fields": ['
              '{"name": "user", "type": "string"}, {"name": "n", "type": "long"}]}')
PAGE_JSON = ('{"$schema": "http://json-schema.org/draft-07/schema#", "title": "Page", '
             '"type": "object", "properties": {"url": {"type": "string"}}}')
VIEW_PROTO = ('syntax = "proto3";\npackage pyq.console;\nmessage Other { string x = 1; }\n'
              "message View {\n  string url = 1;\n  int64 millis = 2;\n}\n")


@pytest.fixture(scope="module")
def view_pb2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    out = tmp_path_factory.mktemp("pb2")
    (out / "view.proto").write_text(VIEW_PROTO)
    assert protoc.main(["protoc", f"-I{out}", f"--python_out={out}", "view.proto"]) == 0
    sys.path.insert(0, str(out))
    try:
        yield importlib.import_module("view_pb2")
    finally:
        sys.path.remove(str(out))
        sys.modules.pop("view_pb2", None)


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(brokers=1, schema_registry=True, console_port=0) as c:
        yield c


@pytest.fixture(scope="module")
def page(cluster: EmbeddedCluster):
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: 'make chromium' installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        context = browser.new_context(base_url=cluster.console_url,
                                      viewport={"width": 1280, "height": 900})
        context.set_default_timeout(30_000)
        yield context.new_page()
        browser.close()


def cell(page, selector: str) -> str:
    return str(page.locator(selector).inner_text()).strip()


def test_framed_records_are_decoded_with_their_schema_and_the_rest_shown_as_bytes(
        cluster, page, view_pb2):
    registry = SchemaRegistryClient(cluster.schema_registry_options())
    registry.set_compatibility(f"{TOPIC}-value", "NONE")  # three types under one subject
    ctx = SerializationContext(TOPIC, MessageField.VALUE)
    key_ctx = SerializationContext(TOPIC, MessageField.KEY)
    avro = AvroSerializer(registry, CLICK_AVRO)(
        {"user": "ada", "n": 7}, ctx)
    avro_key = AvroSerializer(registry, '"string"')("k-ada", key_ctx)
    json_value = JSONSerializer(PAGE_JSON, registry)({"url": "/home"}, ctx)
    proto = ProtobufSerializer(view_pb2.View, registry, {"use.deprecated.format": False})(
        view_pb2.View(url="/cart", millis=42), ctx)
    unknown = struct.pack(">bI", 0, 999_999) + b"opaque"
    with Admin(cluster.client_options()) as admin:
        admin.create_topics([NewTopic(TOPIC, 1)])
    with Producer(cluster.client_options()) as producer:
        for key, value in ((avro_key, avro), (None, json_value), (None, proto),
                           (b"plain-key", b"plain text"), (None, unknown)):
            producer.send(TOPIC, value, key, partition=0)
        producer.flush()
    ids = {s: registry.get_latest_version(s).schema_id
           for s in (f"{TOPIC}-value", f"{TOPIC}-key")}

    page.goto(f"/topics/{TOPIC}/messages?seek=latest&limit=10&format=hex")
    rows = {i: f'#records tr[data-offset="{i}"]' for i in range(5)}
    assert '"user": "ada"' in cell(page, f"{rows[0]} .value pre")
    assert '"n": 7' in cell(page, f"{rows[0]} .value pre")
    assert cell(page, f"{rows[0]} .key pre") == '"k-ada"'
    assert cell(page, f"{rows[0]} .key .schema") == \
        f"AVRO · schema {ids[f'{TOPIC}-key']} · {TOPIC}-key v1"
    assert cell(page, f"{rows[1]} .value .schema").startswith("JSON · schema ")
    assert '"url": "/home"' in cell(page, f"{rows[1]} .value pre")
    assert cell(page, f"{rows[2]} .value .schema") == \
        f"PROTOBUF · schema {ids[f'{TOPIC}-value']} · {TOPIC}-value v3"
    assert '"url": "/cart"' in cell(page, f"{rows[2]} .value pre")
    assert '"millis": "42"' in cell(page, f"{rows[2]} .value pre")  # int64 as JSON text
    assert cell(page, f"{rows[3]} .value pre") == b"plain text".hex(" ")  # as chosen: hex
    assert page.locator(f"{rows[3]} .schema").count() == 0
    assert cell(page, f"{rows[4]} .value pre") == unknown.hex(" ")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "messages-decoded-pyq.png"), full_page=True)

    page.goto("/schemas")
    assert cell(page, f'#subjects tr[data-subject="{TOPIC}-value"] .versions') == "1, 2, 3"
    assert cell(page, f'#subjects tr[data-subject="{TOPIC}-value"] .compatibility') == "NONE"
    assert cell(page, f'#subjects tr[data-subject="{TOPIC}-key"] .compatibility') == \
        cell(page, "#global-compatibility") == "BACKWARD"
    page.click(f'#subjects tr[data-subject="{TOPIC}-value"] .versions a >> text="1"')
    assert cell(page, "#schema-type") == "AVRO"
    assert cell(page, "#schema-text").startswith('{\n  "type": "record"')  # pretty-printed
    page.goto(f"/schemas/{TOPIC}-value")
    assert cell(page, "#version") == "3" and cell(page, "#schema-type") == "PROTOBUF"
    assert 'name: "View"' in cell(page, "#schema-text")  # the serializer's descriptor, as text
    page.screenshot(path=str(SHOTS / "schema-pyq.png"), full_page=True)
    page.goto("/schemas/missing-subject")
    assert "40401" in cell(page, ".error")
