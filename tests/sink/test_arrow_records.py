"""The sink's column-wise encoding matches the record-at-a-time encoder and Kafka's partitioner.

Whatever the keys and values (nulls, empty, long, strings), the records section built
from Arrow arrays is byte for byte what :class:`RecordBatchBuilder` builds one record at a
time, and the vectorized murmur2 puts every key in the partition Kafka's Java client
(``Utils.toPositive(Utils.murmur2(key)) % n``) would choose.
"""

from __future__ import annotations

import doctest

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from broker_sim.protocol.records import RecordBatchBuilder, iter_records
from connector.client.partitioner import murmur2
from connector.sink import arrow_records
from connector.sink.arrow_records import (
    build_batch,
    encode_batch,
    encode_records,
    murmur2_partitions,
)

blobs = st.one_of(st.none(), st.binary(max_size=300))


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(blobs, blobs), min_size=1, max_size=60), start=st.integers(0, 5))
def test_column_wise_records_equal_the_record_at_a_time_builder(rows, start) -> None:
    keys = pa.array([None] * start + [k for k, _ in rows], pa.binary()).slice(start)
    values = pa.array([None] * start + [v for _, v in rows], pa.binary()).slice(start)
    builder = RecordBatchBuilder(producer_id=9, producer_epoch=2, base_sequence=40)
    for k, v in rows:
        builder.append(1_700_000_000_000, k, v)
    built = build_batch(encode_records(keys, values), len(rows), 1_700_000_000_000, 9, 2, 40)
    assert built == builder.build()
    assert encode_batch(keys, values, 1_700_000_000_000, 9, 2, 40) == built  # the one-copy path
    assert [(r.key, r.value) for r in iter_records(built)] == rows


def test_string_columns_and_missing_keys_encode_as_utf8_and_null() -> None:
    values = pa.array(["héllo", None, ""])
    batch = build_batch(encode_records(None, values), 3, 5, -1, -1, -1)
    assert encode_batch(None, values, 5, -1, -1, -1) == batch
    assert [(r.key, r.value) for r in iter_records(batch)] == [(None, "héllo".encode()), (None, None),
                                                             (None, b"")]


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.binary(max_size=300), min_size=1, max_size=80), n=st.integers(1, 64))
def test_key_partitions_are_kafkas(keys, n) -> None:
    expected = [(murmur2(k) & 0x7FFFFFFF) % n for k in keys]
    assert murmur2_partitions(pa.array(keys, pa.binary()), n).tolist() == expected


def test_murmur2_matches_the_java_client_reference_values() -> None:
    # Values from Kafka's UtilsTest.testMurmur2 (as signed 32-bit ints there).
    cases = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829,
             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}
    for key, signed in cases.items():
        assert murmur2_partitions(pa.array([key]), 1 << 31).tolist() == [(signed & 0xFFFFFFFF) & 0x7FFFFFFF]


def test_module_examples() -> None:
    assert doctest.testmod(arrow_records).failed == 0
