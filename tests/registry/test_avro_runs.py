"""The Avro fast path (a run of one writer schema read by polars as one container) against
the per-record fastavro path: the same Arrow column over every type the fast path takes,
and a corrupt value inside a run named exactly as the per-record path names it."""

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
from connector.registry.avro_runs import RunReader, eligible, expanded
from connector.registry.avro_types import avro_types
from connector.registry.settings import RegistrySettings

UTC = datetime.timezone.utc
SCHEMA = fastavro.parse_schema({"type": "record", "name": "Every", "namespace": "t", "fields": [
    {"name": "b", "type": "boolean"},
    {"name": "i", "type": "int"},
    {"name": "l", "type": "long"},
    {"name": "f", "type": "float"},
    {"name": "d", "type": "double"},
    {"name": "s", "type": "string"},
    {"name": "raw", "type": "bytes"},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["VIEW", "BUY", "ZAP"]}},
    {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 3}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "local_ms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "local_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "price", "type": {"type": "fixed", "name": "Price", "size": 9,
                               "logicalType": "decimal", "precision": 20, "scale": 3}},
    {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "note", "type": ["null", "string"]},
    {"name": "last", "type": ["long", "null"]},
    {"name": "tags", "type": {"type": "array", "items": ["null", "string"]}},
    {"name": "grid", "type": {"type": "array", "items": {"type": "array", "items": "int"}}},
    {"name": "device", "type": ["null", {"type": "record", "name": "Device", "fields": [
        {"name": "os", "type": "string"},
        {"name": "seen", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]}]}]},
]})
ID = 7


def datum(i: int) -> dict:
    return {
        "b": i % 2 == 0, "i": (-1) ** i * i * 1_000_003 % 2**31, "l": (-1) ** i * 7**(i % 23),
        "f": i / 4, "d": -i / 3, "s": "é" * (i % 5) + "x" * (i % 200), "raw": bytes(range(i % 7)),
        "kind": ["VIEW", "BUY", "ZAP"][i % 3], "hash": bytes([i % 256, 1, 2]),
        "day": datetime.date(1969, 12, 1) + datetime.timedelta(days=i),
        "at_ms": datetime.datetime(1960, 1, 1, tzinfo=UTC) + datetime.timedelta(milliseconds=i * 997_001),
        "at_us": datetime.datetime(2026, 1, 1, tzinfo=UTC) + datetime.timedelta(microseconds=i * 13),
        "local_ms": datetime.datetime(2026, 1, 1) + datetime.timedelta(milliseconds=i),
        "local_us": datetime.datetime(1900, 1, 1) + datetime.timedelta(microseconds=i),
        "price": decimal.Decimal(f"{(-1) ** i * i * 12345}.{i % 1000:03d}"),
        "id": str(uuid.UUID(int=i * 7919)),
        "note": None if i % 3 == 0 else f"note {i}", "last": None if i % 4 == 1 else -i,
        "tags": [None if j % 2 else f"t{j}" for j in range(i % 4)],
        "grid": [[j] * j for j in range(i % 3)],
        "device": None if i % 5 == 0 else {"os": "linux",
                                            "seen": None if i % 2 else datetime.datetime(2026, 2, 3, tzinfo=UTC)},
    }


def framed(d: dict, schema_id: int = ID) -> bytes:
    out = io.BytesIO()
    out.write(struct.pack(">bI", 0, schema_id))
    fastavro.schemaless_writer(out, SCHEMA, d)
    return out.getvalue()


def decoder() -> AvroDecoder:
    return AvroDecoder(AvroColumn("value", RegistrySettings("http://127.0.0.1:1"), SCHEMA, ID, "id 7"))


def per_record(values: list[bytes | None]) -> list[object]:
    """What the per-record (fastavro) path reads: each datum, or the reason it does not decode."""
    d = decoder()
    out: list[object] = []
    for v in values:
        try:
            out.append(None if v is None else d.decode_one(v))
        except ValueError as e:
            out.append(f"value: {e}")
    return out


def test_the_fast_path_gives_the_per_record_paths_arrow_column() -> None:
    assert eligible(expanded(SCHEMA))
    arrow = avro_types(SCHEMA)[1]
    values = [framed(datum(i)) for i in range(600)]
    fast = RunReader(expanded(SCHEMA), arrow).read(values)
    assert fast is not None, "polars did not read the run"
    slow = pa.array(per_record(list(values)), type=arrow)
    assert fast.type == arrow
    assert fast.equals(slow)
    column, reasons = decoder().decode([*values, None])  # the decoder takes the fast path too
    assert reasons == [None] * 601 and column.equals(pa.concat_arrays([slow, pa.nulls(1, arrow)]))


@pytest.mark.parametrize("schema", [
    {"type": "map", "values": "long"},
    ["null", "int", "string"],
    {"type": "int", "logicalType": "time-millis"},
    {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
    {"type": "array", "items": {"type": "enum", "name": "K", "symbols": ["A"]}},
    ["null", {"type": "enum", "name": "K", "symbols": ["A"]}],
])
def test_what_polars_does_not_read_exactly_keeps_the_per_record_path(schema) -> None:
    record = fastavro.parse_schema({"type": "record", "name": "R", "fields": [{"name": "x", "type": schema}]})
    assert not eligible(expanded(record))
    assert not eligible(expanded(fastavro.parse_schema(schema)))  # nor at the top, as it is


def test_a_value_that_is_not_a_record_keeps_the_per_record_path() -> None:
    assert not eligible("string") and not eligible(["null", "long"])
    assert eligible(expanded(fastavro.parse_schema({"type": "record", "name": "R", "fields": []})))


def test_a_corrupt_value_inside_a_run_is_named_as_the_per_record_path_names_it() -> None:
    good = [framed(datum(i)) for i in range(6)]
    cases = {
        "bytes left over": good[1] + b"\x00",
        "truncated": good[1][:-3],
        "bad utf-8": good[1][:5] + good[1][5:].replace(b"x", b"\xff", 1),
        "enum index out of range": framed({**datum(1), "kind": "ZAP"}).replace(b"\x04" + bytes([1, 1, 2]), b"\x0a" + bytes([1, 1, 2]), 1),
    }
    arrow = avro_types(SCHEMA)[1]
    for what, bad in cases.items():
        assert bad != good[1], what
        values = [good[0], bad, None, good[2], b"plain", good[3], good[4]]
        assert RunReader(expanded(SCHEMA), arrow).read([bad]) is None, what
        expected = per_record(values)
        column, reasons = decoder().decode(values)
        assert isinstance(expected[1], str) and reasons[1] == expected[1], what
        assert reasons[4] == "value: no magic byte 0 (first bytes 706c61696e)"
        assert [r is None for r in reasons] == [True, False, True, True, False, True, True], what
        data = [None if isinstance(e, str) else e for e in expected]
        assert column.equals(pa.array(data, type=arrow)), what
