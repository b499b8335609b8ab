"""The registry's compatibility verdicts against Apache Avro's Java ``SchemaCompatibility``.

A corpus of (reader, writer) schema pairs -- fields added and removed with and without
defaults, the promotions int -> long -> float -> double, string <-> bytes, enums gaining
and losing symbols (with and without an enum default), unions widening and narrowing,
nested records, arrays and maps, field and record aliases, fixed sizes, namespaces,
recursive types -- is judged by Avro's Java library (``reference/avro/pom.xml``, run as a
single-file Java program) and by the registry: the reader/writer check it uses, and the
``/compatibility`` endpoint under BACKWARD (the new schema reads data of the registered
one) and FORWARD (the other way round). Every verdict must equal Java's.

Marked ``kafka`` as the other JVM references are (deselected by ``make test-fast``): it
runs ``java`` and fetches a jar with Maven on first use.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from broker_sim.registry.avro_schema import AvroSchema, reader_incompatibilities
from broker_sim.registry.http_api import CONTENT_TYPE, RegistryApp
from broker_sim.registry.registry import SchemaRegistry
from broker_sim.registry.store import MemoryLog, SchemaStore
from reference.jars import avro_jars, java
from tests.avro_schemas import record_schema

pytestmark = [pytest.mark.integration, pytest.mark.kafka]  # a JVM reference (see the docstring)

JAVA_PROGRAM = Path(__file__).with_name("AvroCompatibilityReference.java")


def rec(*fields: Any, name: str = "R", ns: str | None = "pyq", **extra: Any) -> dict[str, Any]:
    return record_schema(name, *fields, namespace=ns, **extra)


def f(name: str, type_: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **extra}


def enum(*symbols: str, **extra: Any) -> dict[str, Any]:
    return {"type": "enum", "name": "E", "symbols": list(symbols), **extra}


def inner(*fields: Any) -> dict[str, Any]:
    return rec(*fields, name="Inner")


LINKED = rec(f("value", "int"), f("next", ["null", "pyq.Node"], default=None), name="Node")

#: (case, reader, writer)
PAIRS: list[tuple[str, Any, Any]] = [
    ("field added with default", rec(f("a", "int"), f("b", "int", default=0)), rec(f("a", "int"))),
    ("field added without default", rec(f("a", "int"), f("b", "int")), rec(f("a", "int"))),
    ("field removed", rec(f("a", "int")), rec(f("a", "int"), f("b", "string"))),
    ("int to long", "long", "int"),
    ("long to int", "int", "long"),
    ("int to float", "float", "int"),
    ("int to double", "double", "int"),
    ("long to float", "float", "long"),
    ("long to double", "double", "long"),
    ("float to double", "double", "float"),
    ("double to float", "float", "double"),
    ("bytes read as string", "string", "bytes"),
    ("string read as bytes", "bytes", "string"),
    ("int read as string", "string", "int"),
    ("enum symbol added", enum("A", "B", "C"), enum("A", "B")),
    ("enum symbol removed", enum("A", "B"), enum("A", "B", "C")),
    ("enum symbol removed, reader default", enum("A", "B", default="A"), enum("A", "B", "C")),
    ("enum symbols replaced", enum("A", "B"), enum("A", "C")),
    ("union widened", ["null", "string", "int"], ["null", "string"]),
    ("union narrowed", ["null", "string"], ["null", "string", "int"]),
    ("int into a union with long", ["null", "long"], "int"),
    ("union read as its branch", "string", ["null", "string"]),
    ("nested field added with default",
     rec(f("i", inner(f("x", "int"), f("y", "int", default=1)))), rec(f("i", inner(f("x", "int"))))),
    ("nested field added without default",
     rec(f("i", inner(f("x", "int"), f("y", "int")))), rec(f("i", inner(f("x", "int"))))),
    ("nested field type changed",
     rec(f("i", inner(f("x", "string")))), rec(f("i", inner(f("x", "int"))))),
    ("array items int to long", {"type": "array", "items": "long"}, {"type": "array", "items": "int"}),
    ("array items long to int", {"type": "array", "items": "int"}, {"type": "array", "items": "long"}),
    ("map values string to bytes", {"type": "map", "values": "bytes"}, {"type": "map", "values": "string"}),
    ("map read as array", {"type": "array", "items": "string"}, {"type": "map", "values": "string"}),
    ("field renamed with an alias", rec(f("b", "int", aliases=["a"])), rec(f("a", "int"))),
    ("field renamed without an alias", rec(f("b", "int")), rec(f("a", "int"))),
    ("record renamed with an alias", rec(f("a", "int"), name="New", aliases=["pyq.Old"]),
     rec(f("a", "int"), name="Old")),
    ("record renamed without an alias", rec(f("a", "int"), name="New"), rec(f("a", "int"), name="Old")),
    ("namespace changed", rec(f("a", "int"), ns="one"), rec(f("a", "int"), ns="two")),
    ("fixed size changed", {"type": "fixed", "name": "F", "size": 8}, {"type": "fixed", "name": "F", "size": 4}),
    ("fixed size kept", {"type": "fixed", "name": "F", "size": 4}, {"type": "fixed", "name": "F", "size": 4}),
    ("recursive record unchanged", LINKED, LINKED),
    ("null", "null", "null"),
]


@pytest.fixture(scope="module")
def java_verdicts() -> dict[str, bool]:
    jars = avro_jars()
    lines = []
    for _case, reader, writer in PAIRS:
        lines += [json.dumps(reader), json.dumps(writer)]
    done = subprocess.run([java(), "-cp", jars.classpath, str(JAVA_PROGRAM)],
                          input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout.split()
    assert len(out) == len(PAIRS), done.stdout
    return {case: verdict == "COMPATIBLE" for (case, _r, _w), verdict in zip(PAIRS, out, strict=True)}


def test_the_corpus_has_both_verdicts(java_verdicts: dict[str, bool]) -> None:
    assert len(PAIRS) >= 30
    assert 10 <= sum(java_verdicts.values()) <= len(PAIRS) - 10


@pytest.mark.parametrize("case,reader,writer", PAIRS, ids=[p[0] for p in PAIRS])
def test_reader_writer_verdict_equals_javas(java_verdicts: dict[str, bool], case: str,
                                            reader: Any, writer: Any) -> None:
    ours = not reader_incompatibilities(AvroSchema.parse(json.dumps(reader)),
                                        AvroSchema.parse(json.dumps(writer)))
    assert ours == java_verdicts[case]


@pytest.mark.parametrize("case,reader,writer", PAIRS, ids=[p[0] for p in PAIRS])
def test_the_registry_endpoint_agrees(java_verdicts: dict[str, bool], case: str,
                                      reader: Any, writer: Any) -> None:
    client = Client(RegistryApp(SchemaRegistry(SchemaStore(MemoryLog()))))

    def call(method: str, path: str, body: Any) -> Any:
        resp = client.open(path, method=method, data=json.dumps(body), content_type=CONTENT_TYPE)
        assert resp.status_code == 200, resp.get_data()
        return json.loads(resp.get_data())

    # BACKWARD: the new schema (reader) must read data of the registered one (writer).
    call("POST", "/subjects/back/versions", {"schema": json.dumps(writer)})
    assert call("POST", "/compatibility/subjects/back/versions/latest",
                {"schema": json.dumps(reader)})["is_compatible"] == java_verdicts[case]
    # FORWARD: the registered schema (reader) must read data of the new one (writer).
    call("PUT", "/config/fwd", {"compatibility": "FORWARD"})
    call("POST", "/subjects/fwd/versions", {"schema": json.dumps(reader)})
    assert call("POST", "/compatibility/subjects/fwd/versions/latest",
                {"schema": json.dumps(writer)})["is_compatible"] == java_verdicts[case]
