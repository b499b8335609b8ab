"""JSON Schema and Protobuf in the registry: parsing, identity and Confluent's compatibility
rules, one pair of schemas per rule (no broker: the formats are pure functions).

Each case says which way data flows: ``reader_incompatibilities(reader, writer)`` is empty
exactly when data written with ``writer`` is read by ``reader`` (BACKWARD checks the new
schema as the reader, FORWARD as the writer); a refused pair must name Confluent's rule.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from broker_sim.registry import formats
from broker_sim.registry.errors import RegistryError


def js(schema: Any, refs: tuple[tuple[str, Any], ...] = ()) -> Any:
    return formats.parse("JSON", json.dumps(schema), refs)


def proto(body: str, refs: tuple[tuple[str, Any], ...] = (), syntax: str = "proto3",
          package: str = "pyq.test") -> Any:
    return formats.parse("PROTOBUF", f'syntax = "{syntax}";\npackage {package};\n{body}', refs)


def verdict(reader: Any, writer: Any) -> list[str]:
    return formats.reader_incompatibilities(reader, writer)


def obj(props: dict[str, Any], additional: Any = None, required: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if additional is not None:
        out["additionalProperties"] = additional
    if required:
        out["required"] = required
    return out


INT, NUM, STR = {"type": "integer"}, {"type": "number"}, {"type": "string"}

# (case, reader, writer, the rule named or None when compatible)
JSON_CASES = [
    ("same schema", obj({"a": INT}), obj({"a": INT}), None),
    ("property added to an open model", obj({"a": INT, "b": STR}), obj({"a": INT}),
     "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"),
    ("property added to a closed model", obj({"a": INT, "b": STR}), obj({"a": INT}, False), None),
    ("property added, covered by a partially open model", obj({"a": INT, "b": STR}),
     obj({"a": INT}, STR), None),
    ("property added, not covered by a partially open model", obj({"a": INT, "b": INT}),
     obj({"a": INT}, STR), "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"),
    ("property removed from an open model", obj({"a": INT}), obj({"a": INT, "b": STR}), None),
    ("property removed from a closed model", obj({"a": INT}, False), obj({"a": INT, "b": STR}, False),
     "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"),
    ("property removed, not covered by a partially open model", obj({"a": INT}, INT),
     obj({"a": INT, "b": STR}, INT), "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"),
    ("additionalProperties closed", obj({"a": INT}, False), obj({"a": INT}),
     "ADDITIONAL_PROPERTIES_REMOVED"),
    ("additionalProperties narrowed", obj({"a": INT}, STR), obj({"a": INT}),
     "ADDITIONAL_PROPERTIES_NARROWED"),
    ("additionalProperties opened", obj({"a": INT}), obj({"a": INT}, False), None),
    ("type widened integer -> number", NUM, INT, None),
    ("type narrowed number -> integer", INT, NUM, "TYPE_NARROWED"),
    ("type changed", STR, INT, "TYPE_CHANGED"),
    ("type union narrowed", STR, {"type": ["string", "null"]}, "TYPE_NARROWED"),
    ("type union widened", {"type": ["string", "null"]}, STR, None),
    ("required added", obj({"a": INT}, required=["a"]), obj({"a": INT}), "REQUIRED_ATTRIBUTE_ADDED"),
    ("required added with a default", obj({"a": {"type": "integer", "default": 0}}, required=["a"]),
     obj({"a": INT}), None),
    ("required removed", obj({"a": INT}), obj({"a": INT}, required=["a"]), None),
    ("enum narrowed", {"enum": ["a", "b"]}, {"enum": ["a", "b", "c"]}, "ENUM_ARRAY_NARROWED"),
    ("enum extended", {"enum": ["a", "b", "c"]}, {"enum": ["a", "b"]}, None),
    ("maximum added", {"type": "integer", "maximum": 10}, INT, "MAXIMUM_ADDED"),
    ("maximum decreased", {"type": "integer", "maximum": 5}, {"type": "integer", "maximum": 10},
     "MAXIMUM_DECREASED"),
    ("maximum increased", {"type": "integer", "maximum": 10}, {"type": "integer", "maximum": 5}, None),
    ("minimum increased", {"type": "integer", "minimum": 5}, {"type": "integer", "minimum": 0},
     "MINIMUM_INCREASED"),
    ("maxLength decreased", {"type": "string", "maxLength": 5}, {"type": "string", "maxLength": 9},
     "MAX_LENGTH_DECREASED"),
    ("minLength removed", STR, {"type": "string", "minLength": 2}, None),
    ("pattern added", {"type": "string", "pattern": "^a"}, STR, "PATTERN_ADDED"),
    ("multipleOf changed", {"type": "integer", "multipleOf": 4}, {"type": "integer", "multipleOf": 6},
     "MULTIPLE_OF_CHANGED"),
    ("multipleOf relaxed", {"type": "integer", "multipleOf": 2}, {"type": "integer", "multipleOf": 4},
     None),
    ("items narrowed", {"type": "array", "items": INT}, {"type": "array", "items": NUM},
     "TYPE_NARROWED"),
    ("items widened", {"type": "array", "items": NUM}, {"type": "array", "items": INT}, None),
    ("maxItems added", {"type": "array", "maxItems": 3}, {"type": "array"}, "MAX_ITEMS_ADDED"),
    ("uniqueItems added", {"type": "array", "uniqueItems": True}, {"type": "array"},
     "UNIQUE_ITEMS_ADDED"),
    ("oneOf extended", {"oneOf": [INT, STR, {"type": "null"}]}, {"oneOf": [INT, STR]}, None),
    ("oneOf narrowed", {"oneOf": [INT]}, {"oneOf": [INT, STR]}, "SUM_TYPE_NARROWED"),
    ("a type into anyOf", {"anyOf": [INT, STR]}, INT, None),
    ("anyOf into one of its types", INT, {"anyOf": [INT, STR]}, "COMBINED_TYPE_CHANGED"),
    ("allOf extended", {"allOf": [obj({"a": INT}), obj({"b": STR})]}, {"allOf": [obj({"a": INT})]},
     "PRODUCT_TYPE_EXTENDED"),
    ("same allOf", {"allOf": [obj({"a": INT}), obj({"b": STR})]},
     {"allOf": [obj({"a": INT}), obj({"b": STR})]}, None),
    ("allOf part type changed", {"allOf": [obj({"a": INT}), obj({"b": INT})]},
     {"allOf": [obj({"a": INT}), obj({"b": STR})]}, "COMBINED_TYPE_SUBSCHEMAS_CHANGED"),
    # Confluent: a product type against a plain schema is a type change, whatever the parts
    ("allOf into its merged object", obj({"a": INT, "b": STR}),
     {"allOf": [obj({"a": INT}), obj({"b": STR})]}, "TYPE_CHANGED"),
    ("an object into allOf", {"allOf": [obj({"a": INT}), obj({"b": STR})]}, obj({"a": INT, "b": STR}),
     "TYPE_CHANGED"),
    ("a singleton allOf is its part", {"allOf": [obj({"a": INT})]}, obj({"a": INT}), None),
    ("dependency array added", {"type": "object", "dependencies": {"a": ["b"]}}, {"type": "object"},
     "DEPENDENCY_ARRAY_ADDED"),
    ("dependentRequired extended", {"dependentRequired": {"a": ["b", "c"]}},
     {"dependentRequired": {"a": ["b"]}}, "DEPENDENCY_ARRAY_EXTENDED"),
    ("dependency removed", {"type": "object"}, {"type": "object", "dependencies": {"a": ["b"]}}, None),
    ("dependency schema added", {"dependentSchemas": {"a": obj({"b": INT})}}, {}, "DEPENDENCY_SCHEMA_ADDED"),
    ("item added to an open tuple", {"type": "array", "items": [INT, STR]}, {"type": "array", "items": [INT]},
     "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"),
    ("item added to a closed tuple", {"type": "array", "items": [INT, STR]},
     {"type": "array", "items": [INT], "additionalItems": False}, None),
    ("item removed from a closed tuple", {"type": "array", "items": [INT], "additionalItems": False},
     {"type": "array", "items": [INT, STR], "additionalItems": False}, "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"),
    ("item added, not covered (prefixItems)", {"prefixItems": [INT, INT]}, {"prefixItems": [INT], "items": STR},
     "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"),
    ("additional items removed", {"type": "array", "items": [INT], "additionalItems": False},
     {"type": "array", "items": [INT]}, "ADDITIONAL_ITEMS_REMOVED"),
    ("tuple item type changed", {"prefixItems": [STR]}, {"prefixItems": [INT]}, "TYPE_CHANGED"),
    ("nested property type changed", obj({"o": obj({"x": INT})}), obj({"o": obj({"x": STR})}),
     "TYPE_CHANGED"),
]


@pytest.mark.parametrize("case,reader,writer,rule", JSON_CASES, ids=[c[0] for c in JSON_CASES])
def test_json_schema_rules(case: str, reader: Any, writer: Any, rule: str | None) -> None:
    problems = verdict(js(reader), js(writer))
    if rule is None:
        assert problems == []
    else:
        assert problems and any(p.startswith(rule) for p in problems), problems


def test_json_schema_refs_are_followed_in_checks() -> None:
    address = js(obj({"city": STR, "zip": INT}))
    address2 = js(obj({"city": STR, "zip": STR}))
    user = {"type": "object", "properties": {"home": {"$ref": "address.json"}}}
    assert verdict(js(user, (("address.json", address),)), js(user, (("address.json", address),))) == []
    problems = verdict(js(user, (("address.json", address2),)), js(user, (("address.json", address),)))
    assert problems and problems[0].startswith("TYPE_CHANGED at #/properties/home/properties/zip")
    under_id = {"$id": "https://example.com/schemas/user.json", "type": "object",
                "properties": {"home": {"$ref": "address.json"}}}
    refs = (("address.json", address),)
    assert verdict(js(under_id, refs), js(under_id, refs)) == []
    local = {"definitions": {"n": INT}, "type": "object", "properties": {"a": {"$ref": "#/definitions/n"}}}
    assert verdict(js(local), js(local)) == []


def test_json_schema_drafts_meta_schemas_and_identity() -> None:
    for draft in ("http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
                  "http://json-schema.org/draft-07/schema#",
                  "https://json-schema.org/draft/2019-09/schema",
                  "https://json-schema.org/draft/2020-12/schema"):
        assert js({"$schema": draft, "type": "string"}).schema_type == "JSON"
    # draft 4's exclusiveMaximum is a boolean, draft 6's a number: each by its own meta-schema
    js({"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 3, "exclusiveMaximum": True})
    with pytest.raises(RegistryError, match="meta-schema at /exclusiveMaximum"):
        js({"$schema": "http://json-schema.org/draft-06/schema#", "exclusiveMaximum": True})
    with pytest.raises(RegistryError, match="unknown \\$schema"):
        js({"$schema": "http://example.com/my-draft", "type": "string"})
    with pytest.raises(RegistryError, match="does not resolve"):
        js({"properties": {"a": {"$ref": "missing.json"}}})
    with pytest.raises(RegistryError, match="not JSON"):
        formats.parse("JSON", "{nope")
    # Whitespace is not part of a schema; key order is (Confluent's canonical string keeps
    # it), and what is stored and served keeps the order registered.
    a = formats.parse("JSON", '{"type": "object", "properties": {"b": {"type": "string"}, "a": {}}}')
    b = formats.parse("JSON", '{"type":"object","properties":{"b":{"type":"string"},"a":{}}}')
    c = formats.parse("JSON", '{"properties":{"b":{"type":"string"},"a":{}},"type":"object"}')
    assert a.canonical == b.canonical == a.text == b.text == \
        '{"type":"object","properties":{"b":{"type":"string"},"a":{}}}'
    assert c.canonical != a.canonical


# ---- Protobuf --------------------------------------------------------------------------
PROTO_CASES = [
    ("same schema", "message M { int32 a = 1; }", "message M { int32 a = 1; }", None),
    ("field added", "message M { int32 a = 1; string b = 2; }", "message M { int32 a = 1; }", None),
    ("field removed", "message M { int32 a = 1; }", "message M { int32 a = 1; string b = 2; }", None),
    ("field renamed", "message M { int32 renamed = 1; }", "message M { int32 a = 1; }", None),
    ("message added", "message M { int32 a = 1; } message N { int32 b = 1; }",
     "message M { int32 a = 1; }", None),
    ("message removed", "message M { int32 a = 1; }",
     "message M { int32 a = 1; } message N { int32 b = 1; }", "MESSAGE_REMOVED"),
    ("int32 -> int64 (one wire group)", "message M { int64 a = 1; }", "message M { int32 a = 1; }", None),
    ("uint64 -> bool (one wire group)", "message M { bool a = 1; }", "message M { uint64 a = 1; }", None),
    ("sint32 -> sint64", "message M { sint64 a = 1; }", "message M { sint32 a = 1; }", None),
    ("fixed32 -> sfixed32", "message M { sfixed32 a = 1; }", "message M { fixed32 a = 1; }", None),
    ("string -> bytes", "message M { bytes a = 1; }", "message M { string a = 1; }", None),
    ("int32 -> sint32 (zigzag)", "message M { sint32 a = 1; }", "message M { int32 a = 1; }",
     "FIELD_SCALAR_KIND_CHANGED"),
    ("int64 -> double", "message M { double a = 1; }", "message M { int64 a = 1; }",
     "FIELD_SCALAR_KIND_CHANGED"),
    ("scalar -> message", "message M { N a = 1; } message N { int32 x = 1; }",
     "message M { int32 a = 1; } message N { int32 x = 1; }", "FIELD_KIND_CHANGED"),
    ("message type changed", "message M { O a = 1; } message N { int32 x = 1; } message O { int32 x = 1; }",
     "message M { N a = 1; } message N { int32 x = 1; } message O { int32 x = 1; }",
     "FIELD_NAMED_TYPE_CHANGED"),
    ("singular -> repeated", "message M { repeated string a = 1; }", "message M { string a = 1; }",
     "FIELD_LABEL_CHANGED"),
    ("oneof added around a new field", "message M { int32 a = 1; oneof o { string b = 2; } }",
     "message M { int32 a = 1; }", None),
    ("one field moved into a new oneof", "message M { oneof o { int32 a = 1; } }",
     "message M { int32 a = 1; }", None),
    ("two fields moved into a new oneof", "message M { oneof o { int32 a = 1; string b = 2; } }",
     "message M { int32 a = 1; string b = 2; }", "MULTIPLE_FIELDS_MOVED_TO_ONEOF"),
    ("field moved into an existing oneof", "message M { oneof o { int32 a = 1; string b = 2; } }",
     "message M { oneof o { int32 a = 1; } string b = 2; }", "FIELD_MOVED_TO_EXISTING_ONEOF"),
    ("oneof field removed", "message M { oneof o { int32 a = 1; } }",
     "message M { oneof o { int32 a = 1; string b = 2; } }", "ONEOF_FIELD_REMOVED"),
    ("enum value added", "enum E { A = 0; B = 1; C = 2; } message M { E e = 1; }",
     "enum E { A = 0; B = 1; } message M { E e = 1; }", None),
    ("enum value removed", "enum E { A = 0; } message M { E e = 1; }",
     "enum E { A = 0; B = 1; } message M { E e = 1; }", None),
    ("nested message removed", "message M { int32 a = 1; }",
     "message M { int32 a = 1; message Inner { int32 x = 1; } }", "MESSAGE_REMOVED"),
]


@pytest.mark.parametrize("case,reader,writer,rule", PROTO_CASES, ids=[c[0] for c in PROTO_CASES])
def test_protobuf_rules(case: str, reader: str, writer: str, rule: str | None) -> None:
    problems = verdict(proto(reader), proto(writer))
    if rule is None:
        assert problems == []
    else:
        assert problems and any(p.startswith(rule) for p in problems), problems


def test_protobuf_proto2_required_and_package() -> None:
    v1 = proto("message M { optional int32 a = 1; }", syntax="proto2")
    v2 = proto("message M { optional int32 a = 1; required string b = 2; }", syntax="proto2")
    assert verdict(v2, v1)[0].startswith("REQUIRED_FIELD_ADDED")
    assert verdict(v1, v2)[0].startswith("REQUIRED_FIELD_REMOVED")
    assert verdict(proto("message M { int32 a = 1; }", package="other"),
                   proto("message M { int32 a = 1; }"))[0].startswith("PACKAGE_CHANGED")


def test_protobuf_text_and_descriptor_are_one_schema() -> None:
    """The .proto text and the base64 FileDescriptorProto protoc makes of it (what
    confluent-kafka's serializer sends) have one identity; the text is served as given."""
    address = proto("message Address { string city = 1; }")
    text = ('syntax = "proto3";\npackage pyq.test;\nimport "address.proto";\n'
            'import "google/protobuf/timestamp.proto";\n'
            "message User { Address home = 1; google.protobuf.Timestamp at = 2; }\n")
    refs = (("address.proto", address),)
    parsed = formats.parse("PROTOBUF", text, refs)
    assert parsed.text == text
    assert list(parsed.file.dependency) == ["address.proto", "google/protobuf/timestamp.proto"]
    again = formats.parse("PROTOBUF", parsed.serialized(), refs)
    assert again.canonical == parsed.canonical and again.text == parsed.serialized()
    spaced = formats.parse("PROTOBUF", text.replace(" = ", "   =   ") + "// a comment\n", refs)
    assert spaced.canonical == parsed.canonical


@pytest.mark.parametrize("text,reason", [
    ('syntax = "proto3";\nmessage M { strin a = 1; }', '"strin" is not defined'),
    ('syntax = "proto3";\nmessage M { int32 a = 1; int32 b = 1; }', "has already been used"),
    ('syntax = "proto3";\nimport "nowhere.proto";\nmessage M { int32 a = 1; }', "nowhere.proto"),
    ("message {", "schema.proto:1"),
    (base64.b64encode(b"\xff\xff\xff").decode(), "FileDescriptorProto"),
])
def test_protobuf_refusals_carry_protocs_reason(text: str, reason: str) -> None:
    with pytest.raises(RegistryError) as info:
        formats.parse("PROTOBUF", text)
    assert info.value.error_code == 42201 and reason in info.value.message, info.value.message


def test_unknown_schema_type_and_mixed_types() -> None:
    with pytest.raises(RegistryError, match="^Invalid schema type XML$") as info:
        formats.parse("XML", "{}")
    assert (info.value.status, info.value.error_code) == (422, 42201)
    assert formats.schema_format(None).schema_type == "AVRO"
    with pytest.raises(RegistryError, match="is a PROTOBUF schema, not JSON"):
        formats.parse("JSON", "{}", (("x.proto", proto("message M { int32 a = 1; }")),))
    assert verdict(js(INT), proto("message M { int32 a = 1; }"))[0].startswith("schema type changed")
