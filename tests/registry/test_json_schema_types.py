"""Spark types of JSON Schemas (connector.registry.json_schema_codec.json_schema_types):
``allOf`` merged into one struct, fields in the order the properties appear."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from connector.registry.json_schema_codec import (
    JsonDocument,
    UnsupportedJsonSchema,
    json_schema_types,
)

BASE = {"type": "object", "required": ["id"],
        "properties": {"zone": {"type": "string"}, "id": {"type": "integer"}}}


def ddl(schema: Any, *references: tuple[str, Any]) -> str:
    return json_schema_types(JsonDocument(schema, tuple(references)))[0]


def test_all_of_objects_merge_in_order_of_appearance() -> None:
    schema = {"definitions": {"Base": BASE},
              "allOf": [{"$ref": "#/definitions/Base"},
                        {"properties": {"weight": {"type": "number"}, "id": {"type": "integer"}}},
                        {"required": ["weight"]},
                        {"allOf": [{"type": "object", "properties": {"city": {"type": "string"}}}]}]}
    spark, arrow = json_schema_types(JsonDocument(schema))
    assert spark == "struct<`zone`: string, `id`: bigint, `weight`: double, `city`: string>"
    assert arrow == pa.struct([pa.field("zone", pa.string()), pa.field("id", pa.int64()),
                               pa.field("weight", pa.float64()), pa.field("city", pa.string())])
    # keywords beside allOf are a part; a part may be a schema reference
    beside = {"type": "object", "properties": {"note": {"type": "string"}},
              "allOf": [{"$ref": "base.json"}]}
    assert ddl({"type": "object", "properties": {"s": beside}}, ("base.json", BASE)) == \
        "struct<`s`: struct<`note`: string, `zone`: string, `id`: bigint>>"
    assert ddl({"allOf": [{"type": "string"}, {"maxLength": 9}]}) == "string"


@pytest.mark.parametrize(("schema", "message"), [
    ({"allOf": [BASE, {"properties": {"id": {"type": "string"}}}]},
     "value: allOf: property 'id' is bigint in one part and string in another"),
    ({"allOf": [BASE, {"type": "string"}]}, "value: allOf of an object and a non-object schema"),
    ({"allOf": [{"type": "string"}, {"type": "integer"}]},
     "value: allOf of 2 distinct types (bigint, string) has no single Spark type"),
    ({"allOf": [{"required": ["a"]}]}, "value: allOf whose parts only constrain"),
    ({"type": "array", "items": [{"type": "string"}]}, "value: a tuple (items as a list, prefixItems)"),
    ({"type": "array", "prefixItems": [{"type": "string"}]}, "value: a tuple (items as a list, prefixItems)"),
])
def test_refused_all_of_and_tuples_name_what_and_where(schema: Any, message: str) -> None:
    with pytest.raises(UnsupportedJsonSchema) as refused:
        ddl(schema)
    assert message in str(refused.value)
