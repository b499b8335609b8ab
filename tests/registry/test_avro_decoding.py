"""The Avro -> Spark/Arrow mapping and the batched decoder, without a registry: every value
here is written with the reader schema's own id, which the decoder never asks for."""

from __future__ import annotations

import datetime
import decimal
import io
import struct
import uuid

import fastavro
import pyarrow as pa
import pytest

from connector.registry.avro_decoding import AvroColumn, AvroDecoder
from connector.registry.avro_types import UnsupportedAvro, avro_types
from connector.registry.settings import RegistrySettings

UTC = datetime.timezone.utc
SCHEMA = fastavro.parse_schema({"type": "record", "name": "Event", "namespace": "t", "fields": [
    {"name": "t_ms", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "t_us", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "price", "type": {"type": "fixed", "name": "Price", "size": 8,
                               "logicalType": "decimal", "precision": 12, "scale": 3}},
    {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 2}},
    {"name": "maybe", "type": ["null", {"type": "array", "items": {
        "type": "int", "logicalType": "time-millis"}}], "default": None},
]})
ID = uuid.UUID("12345678-1234-5678-1234-567812345678")
DATUM = {"t_ms": datetime.time(1, 2, 3, 4000), "t_us": datetime.time(0, 0, 1, 5), "id": ID,
         "local": datetime.datetime(2026, 5, 6, 7, 8, 9), "price": decimal.Decimal("123.456"),
         "hash": b"\x01\x02", "maybe": [datetime.time(0, 0, 0, 7000)]}


def framed(datum: dict, schema_id: int = 7) -> bytes:
    out = io.BytesIO()
    out.write(struct.pack(">bI", 0, schema_id))
    fastavro.schemaless_writer(out, SCHEMA, datum)
    return out.getvalue()


def decoder() -> AvroDecoder:
    return AvroDecoder(AvroColumn("value", RegistrySettings("http://127.0.0.1:1"), SCHEMA, 7, "id 7"))


def test_types_and_values_as_spark_reads_them() -> None:
    ddl, arrow, nullable = avro_types(SCHEMA)
    assert ddl == ("struct<`t_ms`: int, `t_us`: bigint, `id`: string, `local`: timestamp_ntz, "
                   "`price`: decimal(12,3), `hash`: binary, `maybe`: array<int>>")
    assert not nullable
    column, reasons = decoder().decode([framed(DATUM), None])
    assert reasons == [None, None] and column.type == arrow
    assert column.to_pylist() == [{
        "t_ms": 3_723_004, "t_us": 1_000_005, "id": str(ID),
        "local": datetime.datetime(2026, 5, 6, 7, 8, 9), "price": decimal.Decimal("123.456"),
        "hash": b"\x01\x02", "maybe": [7]}, None]


def test_bad_values_are_null_with_their_reason() -> None:
    good = framed(DATUM)
    column, reasons = decoder().decode([b"{}", b"\x00\x00", good[:9], good + b"\x00", good])
    assert column.to_pylist()[:4] == [None] * 4 and column[4].is_valid
    assert reasons[0] == "value: no magic byte 0 (first bytes 7b7d)"
    assert reasons[1] == "value: too short for Confluent's 5-byte header (first bytes 0000)"
    assert (reasons[2] or "").startswith("value: does not decode with writer schema 7 into reader id 7: ")
    assert reasons[3] == "value: 1 byte(s) left after the datum of writer schema 7"
    assert reasons[4] is None


@pytest.mark.parametrize(("schema", "message"), [
    ({"type": "record", "name": "U", "fields": [{"name": "u", "type": [
        {"type": "map", "values": "int"}, {"type": "record", "name": "R", "fields": []}]}]},
     "value.u: a union of 2 non-null types (map, R) has members that read as the same Python type"),
    ({"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]},
     "value.next: record Node is recursive"),
    ("null", "value: a null type alone has no Spark column"),
])
def test_unmapped_schemas_are_refused_naming_the_field(schema, message) -> None:
    with pytest.raises(UnsupportedAvro, match=message.replace("(", r"\(").replace(")", r"\)")):
        avro_types(fastavro.parse_schema(schema))


def test_a_batch_is_one_arrow_column() -> None:
    column, _ = decoder().decode([framed(DATUM)] * 1000)
    assert isinstance(column, pa.StructArray) and len(column) == 1000


def test_a_union_of_several_types_is_a_struct_of_members() -> None:
    schema = fastavro.parse_schema({"type": "record", "name": "U", "fields": [
        {"name": "u", "type": ["null", "string", "long", {"type": "array", "items": "int"},
                               {"type": "int", "logicalType": "date"}]},
        {"name": "n", "type": ["int", "long"]}]})
    ddl, _, _ = avro_types(schema)
    assert ddl == ("struct<`u`: struct<`member0`: string, `member1`: bigint, `member2`: array<int>, "
                   "`member3`: date>, `n`: bigint>")
    spec = AvroColumn("value", RegistrySettings("http://127.0.0.1:1"), schema, 3, "id 3")
    values = []
    for u in ("x", 5, [1, 2], datetime.date(2026, 1, 2), None):
        out = io.BytesIO()
        out.write(struct.pack(">bI", 0, 3))
        fastavro.schemaless_writer(out, schema, {"u": u, "n": 7})
        values.append(out.getvalue())
    column, reasons = AvroDecoder(spec).decode(values)
    assert reasons == [None] * 5
    none = {"member0": None, "member1": None, "member2": None, "member3": None}
    assert [row["u"] for row in column.to_pylist()] == [
        {**none, "member0": "x"}, {**none, "member1": 5}, {**none, "member2": [1, 2]},
        {**none, "member3": datetime.date(2026, 1, 2)}, None]
    assert column.to_pylist()[0]["n"] == 7
