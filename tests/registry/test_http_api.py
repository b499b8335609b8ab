"""The registry's REST API called in process (werkzeug's test client) over an in-memory log.

No broker and no sockets: every endpoint's answers and refusals, the error model, and the
rules of ids, versions, soft and hard deletes, modes and references.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest
from werkzeug.test import Client

from broker_sim.registry.http_api import CONTENT_TYPE, RegistryApp
from broker_sim.registry.registry import MAX_SCHEMA_BYTES, SchemaRegistry
from broker_sim.registry.store import MemoryLog, SchemaStore
from tests import avro_schemas

record = partial(avro_schemas.record, namespace="t")


V1 = record("User", {"name": "id", "type": "long"})
V2 = record("User", {"name": "id", "type": "long"},
            {"name": "email", "type": "string", "default": ""})
V3_NO_DEFAULT = record("User", {"name": "id", "type": "long"}, {"name": "age", "type": "int"})


class Api:
    def __init__(self, store: SchemaStore | None = None) -> None:
        self.store = store or SchemaStore(MemoryLog())
        self.client = Client(RegistryApp(SchemaRegistry(self.store)))

    def call(self, method: str, path: str, body: Any = None, raw: bytes | None = None,
             status: int = 200) -> Any:
        data = raw if raw is not None else (None if body is None else json.dumps(body))
        resp = self.client.open(path, method=method, data=data, content_type=CONTENT_TYPE)
        assert resp.content_type == CONTENT_TYPE
        payload = json.loads(resp.get_data())
        assert resp.status_code == status, payload
        return payload

    def register(self, subject: str, schema: str, **extra: Any) -> int:
        return int(self.call("POST", f"/subjects/{subject}/versions", {"schema": schema, **extra})["id"])

    def error(self, method: str, path: str, body: Any = None, raw: bytes | None = None,
              status: int = 404) -> int:
        return int(self.call(method, path, body, raw, status=status)["error_code"])


@pytest.fixture
def api() -> Api:
    return Api()


def test_register_get_versions_and_ids(api: Api) -> None:
    assert api.call("GET", "/") == {}
    assert api.call("GET", "/schemas/types") == ["AVRO", "JSON", "PROTOBUF"]
    assert api.call("GET", "/subjects") == []
    first = api.register("users-value", V1)
    assert api.register("users-value", V1) == first  # the same schema again: the same id
    assert api.register("other-value", V1) == first  # under another subject: the same id
    assert api.call("GET", "/subjects/other-value/versions") == [1]
    second = api.register("users-value", V2)
    assert second == first + 1
    assert api.call("GET", "/subjects") == ["other-value", "users-value"]
    assert api.call("GET", "/subjects/users-value/versions") == [1, 2]
    got = api.call("GET", "/subjects/users-value/versions/latest")
    assert (got["subject"], got["version"], got["id"]) == ("users-value", 2, second)
    assert json.loads(got["schema"]) == json.loads(V2) | {"fields": json.loads(got["schema"])["fields"]}
    assert api.call("GET", "/subjects/users-value/versions/1/schema")["name"] == "User"
    assert json.loads(api.call("GET", f"/schemas/ids/{first}")["schema"])["name"] == "User"
    assert api.call("GET", f"/schemas/ids/{first}/schema")["type"] == "record"
    assert api.call("GET", f"/schemas/ids/{first}/subjects") == ["other-value", "users-value"]
    assert api.call("GET", f"/schemas/ids/{first}/versions") == [
        {"subject": "other-value", "version": 1}, {"subject": "users-value", "version": 1}]
    # Whitespace and key order do not make another schema; a default does.
    spaced = json.dumps(json.loads(V1), indent=4, sort_keys=True)
    assert api.register("users-value", spaced) == first  # version 1 already is this schema
    assert api.call("GET", "/subjects/users-value/versions") == [1, 2]


def test_lookup(api: Api) -> None:
    sid = api.register("s", V1)
    found = api.call("POST", "/subjects/s", {"schema": json.dumps(json.loads(V1), indent=2)})
    assert (found["id"], found["version"], found["subject"]) == (sid, 1, "s")
    assert api.error("POST", "/subjects/s", {"schema": V2}) == 40403
    assert api.error("POST", "/subjects/nope", {"schema": V1}) == 40401


def test_backward_evolution_and_incompatible_409(api: Api) -> None:
    api.register("s", V1)
    api.register("s", V2)  # a field with a default: BACKWARD passes
    payload = api.call("POST", "/subjects/s/versions", {"schema": V3_NO_DEFAULT}, status=409)
    assert payload["error_code"] == 409 and "READER_FIELD_MISSING_DEFAULT_VALUE" in payload["message"]
    check = api.call("POST", "/compatibility/subjects/s/versions/latest?verbose=true",
                     {"schema": V3_NO_DEFAULT})
    assert check["is_compatible"] is False and check["messages"]
    assert api.call("POST", "/compatibility/subjects/s/versions/1", {"schema": V2}) == {"is_compatible": True}
    assert api.call("GET", "/subjects/s/versions") == [1, 2]  # nothing registered by the refusal
    api.call("PUT", "/config/s", {"compatibility": "NONE"})
    assert api.call("GET", "/config/s") == {"compatibilityLevel": "NONE"}
    assert api.call("GET", "/config") == {"compatibilityLevel": "BACKWARD"}
    api.register("s", V3_NO_DEFAULT)
    assert api.call("DELETE", "/config/s") == {"compatibilityLevel": "NONE"}
    assert api.error("GET", "/config/s") == 40408
    assert api.call("GET", "/config/s?defaultToGlobal=true") == {"compatibilityLevel": "BACKWARD"}


@pytest.mark.parametrize("level,ok", [
    ("BACKWARD", True), ("FORWARD", False), ("FULL", False), ("NONE", True),
])
def test_levels_on_removing_a_field_without_default(api: Api, level: str, ok: bool) -> None:
    # The new schema drops "name", which has no default in the old one: the new schema
    # reads old data (BACKWARD passes), the old one cannot read new data (FORWARD refuses).
    old = record("R", {"name": "id", "type": "long"}, {"name": "name", "type": "string"})
    new = record("R", {"name": "id", "type": "long"})
    api.call("PUT", "/config", {"compatibility": level})
    api.register("s", old)
    api.call("POST", "/subjects/s/versions", {"schema": new}, status=200 if ok else 409)


def test_transitive_levels_check_every_version(api: Api) -> None:
    v1 = record("R", {"name": "f", "type": "int"})
    v2 = record("R", {"name": "g", "type": "int", "default": 0})  # drops f
    v3 = record("R", {"name": "g", "type": "int", "default": 0},
                {"name": "f", "type": "string", "default": ""})  # f again, as a string
    api.register("s", v1)
    api.register("s", v2)
    api.call("PUT", "/config/s", {"compatibility": "BACKWARD_TRANSITIVE"})
    refused = api.call("POST", "/subjects/s/versions", {"schema": v3}, status=409)
    assert "version 1" in refused["message"]
    api.call("PUT", "/config/s", {"compatibility": "BACKWARD"})  # the latest (v2) only
    api.register("s", v3)
    assert api.call("GET", "/subjects/s/versions") == [1, 2, 3]


def test_soft_and_hard_delete_rules(api: Api) -> None:
    sid = api.register("s", V1)
    api.register("s", V2)
    assert api.error("DELETE", "/subjects/s/versions/1?permanent=true") == 40407
    assert api.call("DELETE", "/subjects/s/versions/1") == 1
    assert api.error("DELETE", "/subjects/s/versions/1") == 40406
    assert api.call("GET", "/subjects/s/versions") == [2]
    assert api.call("GET", "/subjects/s/versions?deleted=true") == [1, 2]
    assert api.error("GET", "/subjects/s/versions/1") == 40402
    assert api.call("GET", "/subjects/s/versions/1?deleted=true")["id"] == sid
    assert api.call("GET", f"/schemas/ids/{sid}")["schema"]  # a soft-deleted schema's id still serves
    assert api.error("DELETE", "/subjects/s?permanent=true") == 40405
    assert api.call("DELETE", "/subjects/s") == [2]
    assert api.error("DELETE", "/subjects/s") == 40404
    assert api.call("GET", "/subjects") == []
    assert api.call("GET", "/subjects?deleted=true") == ["s"]
    assert api.error("GET", "/subjects/s/versions") == 40401
    assert api.call("DELETE", "/subjects/s?permanent=true") == [1, 2]
    assert api.call("GET", "/subjects?deleted=true") == []
    assert api.error("GET", f"/schemas/ids/{sid}") == 40403
    assert api.error("DELETE", "/subjects/s") == 40401
    # The same schema registered again gets its old id back (ids are stable).
    assert api.register("s", V1) == sid
    assert api.call("GET", "/subjects/s/versions") == [1]


def test_modes(api: Api) -> None:
    api.register("s", V1)
    assert api.call("GET", "/mode") == {"mode": "READWRITE"}
    assert api.error("PUT", "/mode", {"mode": "IMPORT"}, status=422) == 42205  # subjects exist
    assert api.error("PUT", "/mode", {"mode": "SIDEWAYS"}, status=422) == 42204
    api.call("PUT", "/mode/s", {"mode": "READONLY"})
    assert api.call("GET", "/mode/s") == {"mode": "READONLY"}
    assert api.error("POST", "/subjects/s/versions", {"schema": V2}, status=422) == 42205
    assert api.error("DELETE", "/subjects/s", status=422) == 42205
    assert api.call("DELETE", "/mode/s") == {"mode": "READONLY"}
    assert api.error("GET", "/mode/s") == 40409
    # An id is given in IMPORT mode only.
    assert api.error("POST", "/subjects/imp/versions", {"schema": V2, "id": 100, "version": 7},
                     status=422) == 42205
    api.call("PUT", "/mode/imp", {"mode": "IMPORT"})
    assert api.register("imp", V2, id=100, version=7) == 100
    assert api.call("GET", "/subjects/imp/versions") == [7]
    assert api.call("GET", "/schemas/ids/100")["schema"]
    other = record("Other", {"name": "z", "type": "int"})
    assert api.error("POST", "/subjects/imp/versions", {"schema": other, "id": 100},
                     status=422) == 42205  # id 100 holds another schema
    api.call("PUT", "/mode/imp", {"mode": "READWRITE"})
    assert api.register("new", other) == 101  # ids go on after the largest imported


def test_references(api: Api) -> None:
    addr = record("Address", {"name": "street", "type": "string"})
    api.register("address", addr)
    person = record("Person", {"name": "home", "type": "t.Address"})
    refs = [{"name": "t.Address", "subject": "address", "version": 1}]
    pid = api.register("person", person, references=refs)
    got = api.call("GET", "/subjects/person/versions/1")
    assert got["references"] == refs
    assert "street" not in got["schema"]  # the referenced type is named, not inlined
    assert api.call("GET", f"/schemas/ids/{pid}")["references"] == refs
    assert api.call("GET", "/subjects/address/versions/1/referencedby") == [pid]
    assert api.error("DELETE", "/subjects/address/versions/1", status=422) == 42206
    assert api.error("POST", "/subjects/p2/versions", {"schema": person}, status=422) == 42201
    bad = [{"name": "t.Address", "subject": "address", "version": 9}]
    assert api.error("POST", "/subjects/p2/versions", {"schema": person, "references": bad},
                     status=422) == 42201


def test_bad_input_is_refused_and_the_registry_keeps_serving(api: Api) -> None:
    sid = api.register("s", V1)
    assert api.error("POST", "/subjects/s/versions", raw=b"{not json", status=400) == 400
    assert api.error("POST", "/subjects/s/versions", {"schema": '{"type": "record"'},
                     status=422) == 42201
    assert api.error("POST", "/subjects/s/versions", {"schema": '{"type": "nope"}'},
                     status=422) == 42201
    assert api.error("POST", "/subjects/s/versions", {"nothing": 1}, status=422) == 42201
    assert api.error("POST", "/subjects/s/versions", {"schema": V1, "schemaType": "PROTOBUF"},
                     status=422) == 42201
    assert api.error("POST", "/subjects/s/versions", {"schema": V1, "schemaType": "XML"},
                     status=422) == 42201
    huge = record("Big", {"name": "f", "type": "string", "doc": "x" * MAX_SCHEMA_BYTES})
    assert api.error("POST", "/subjects/s/versions", {"schema": huge}, status=422) == 42209
    assert api.error("POST", "/subjects/s/versions", raw=b"[" * (5 * MAX_SCHEMA_BYTES),
                     status=413) == 413
    assert api.error("GET", "/schemas/ids/999") == 40403
    assert api.error("GET", "/schemas/ids/abc") == 40403
    assert api.error("GET", "/subjects/s/versions/0", status=422) == 42202
    assert api.error("GET", "/subjects/s/versions/x", status=422) == 42202
    assert api.error("GET", "/subjects/s/versions/5") == 40402
    assert api.error("PUT", "/config", {"compatibility": "SOMETIMES"}, status=422) == 42203
    assert api.error("PUT", "/subjects", status=405) == 405
    assert api.error("DELETE", "/schemas/ids/1", status=405) == 405
    assert api.error("GET", "/no/such/path") == 404
    assert api.call("GET", f"/schemas/ids/{sid}")["schema"]  # still serving
    assert api.call("GET", "/subjects/s/versions") == [1]


def test_normalize_true_is_refused_not_ignored(api: Api) -> None:
    """Avro has no normal form here: normalize=true fails naming it, and registers
    nothing; normalize=false (what clients send by default) is served as before."""
    body = {"schema": V1}
    for method, path in (("POST", "/subjects/s/versions"), ("POST", "/subjects/s"),
                         ("POST", "/compatibility/subjects/s/versions/latest")):
        refused = api.call(method, path + "?normalize=true", body, status=400)
        assert refused["error_code"] == 400 and "normalize=true" in refused["message"] and \
            "AVRO" in refused["message"]
    assert api.call("GET", "/subjects") == []
    assert api.call("POST", "/subjects/s/versions?normalize=false", body)["id"] >= 1
    assert api.call("GET", "/subjects") == ["s"]


def test_json_schema_key_order_and_normalize(api: Api) -> None:
    """A JSON Schema is kept as registered (compact, keys in their order, as Confluent's
    canonical string); the same keys in another order are another schema, unless
    normalize=true sorts them (Confluent's normal form) on both sides."""
    def body(text: str) -> dict[str, Any]:
        return {"schemaType": "JSON", "schema": text}

    given = '{"type": "object", "properties": {"zone": {"type": "string"}, "id": {"type": "integer"}}}'
    reordered = '{"properties": {"id": {"type": "integer"}, "zone": {"type": "string"}}, "type": "object"}'
    sid = api.register("j", given, schemaType="JSON")
    assert api.call("GET", f"/schemas/ids/{sid}")["schema"] == \
        '{"type":"object","properties":{"zone":{"type":"string"},"id":{"type":"integer"}}}'
    assert api.register("j", given.replace(" ", ""), schemaType="JSON") == sid  # spaces: same
    assert api.error("POST", "/subjects/j", body(reordered)) == 40403
    other = api.register("j", reordered, schemaType="JSON")  # key order: a new version
    assert other != sid and api.call("GET", "/subjects/j/versions") == [1, 2]
    normal = int(api.call("POST", "/subjects/n/versions?normalize=true", body(given))["id"])
    assert api.call("GET", f"/schemas/ids/{normal}")["schema"] == \
        '{"properties":{"id":{"type":"integer"},"zone":{"type":"string"}},"type":"object"}'
    assert api.call("POST", "/subjects/n?normalize=true", body(reordered))["id"] == normal
    assert api.call("POST", "/subjects/n/versions?normalize=true", body(reordered))["id"] == normal
    assert api.call("POST", "/compatibility/subjects/n/versions/latest?normalize=true",
                    body(reordered)) == {"is_compatible": True}


def test_state_is_rebuilt_from_the_log() -> None:
    log = MemoryLog()
    first = Api(SchemaStore(log))
    a = first.register("a", V1)
    first.register("a", V2)
    first.call("DELETE", "/subjects/a/versions/1")
    first.call("PUT", "/config/a", {"compatibility": "FULL"})
    again = Api(SchemaStore(log))  # another broker reading the same records
    assert again.call("GET", "/subjects/a/versions?deleted=true") == [1, 2]
    assert again.call("GET", "/subjects/a/versions") == [2]
    assert again.call("GET", "/config/a") == {"compatibilityLevel": "FULL"}
    assert again.register("b", V1) == a
    # Two writers on the same log: ids stay unique and agree.
    x = first.register("x", record("X", {"name": "f", "type": "int"}))
    y = again.register("y", record("Y", {"name": "f", "type": "int"}))
    assert x != y
    assert first.call("GET", "/subjects") == again.call("GET", "/subjects") == ["a", "b", "x", "y"]
    assert first.call("GET", f"/schemas/ids/{y}") == again.call("GET", f"/schemas/ids/{y}")
