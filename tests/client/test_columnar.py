"""Columnar decoding gives exactly what the record-by-record reader gives, per codec, with
the C record scanner and with the numpy path alike (every test here runs with both)."""

from __future__ import annotations

import random

import google_crc32c
import numpy as np
import pyarrow as pa
import pytest

from broker_sim.protocol.errors import CorruptMessage
from broker_sim.protocol.records import (
    CODEC_NAMES,
    RecordBatchBuilder,
    assign_offsets,
    iter_records,
)
from connector.client import columnar
from connector.client.columnar import (
    KAFKA_SCHEMA,
    KAFKA_SCHEMA_WITH_HEADERS,
    RecordSetPart,
    decode_columns,
    decode_parts,
)

CODECS = sorted(CODEC_NAMES)
C_SCAN = columnar._SCAN


@pytest.fixture(autouse=True, params=["c", "numpy"])
def scanner(request, monkeypatch):
    """Each test once with the C scanner (built with the package) and once without it."""
    if request.param == "numpy":
        monkeypatch.setattr(columnar, "_SCAN", None)
    return request.param


def test_the_package_is_built_with_its_c_scanner(scanner):
    # `pip install` compiles connector/client/_record_scan.c; without it every read
    # silently takes the slower numpy path.
    assert C_SCAN is not None, "connector.client._record_scan is not built"


def batch(records: list[tuple], base_offset: int, codec: int = 0, log_append: bool = False,
          control: bool = False) -> bytes:
    b = RecordBatchBuilder(codec, timestamp_type=1 if log_append else 0, is_control=control)
    for ts, key, value, headers in records:
        b.append(ts, key, value, headers)
    out = bytearray(b.build())
    assign_offsets(out, 0, base_offset, 0)
    return bytes(out)


def random_records(rng: random.Random, n: int) -> list[tuple]:
    def blob(sizes):
        return None if rng.random() < 0.15 else rng.randbytes(rng.choice(sizes))
    out = []
    for _ in range(n):
        headers = [] if rng.random() < 0.7 else [("trace", rng.randbytes(3)), ("n\u00e9", None)]
        out.append((1_700_000_000_000 + rng.randrange(-10_000, 10_000_000),
                    blob([0, 1, 12, 13, 30]), blob([0, 5, 12, 13, 100, 5000]), headers))
    return out


def record_set(rng: random.Random, codec: int) -> bytes:
    parts, offset = [], 0
    for n in (40, 1, 90, 25):
        parts.append(batch(random_records(rng, n), offset, codec))
        offset += n
    return b"".join(parts)


def expected(rs: bytes, start: int, until: int) -> list:
    return [r for r in iter_records(rs) if start <= r.offset < until]


@pytest.mark.parametrize("codec", CODECS, ids=[CODEC_NAMES[c] for c in CODECS])
@pytest.mark.parametrize("start, until", [(0, 10**9), (17, 41), (40, 41), (60, 156)])
def test_columns_equal_the_record_reader(codec, start, until):
    rs = record_set(random.Random(codec * 100 + start), codec)
    want = expected(rs, start, until)
    cols = decode_columns("topic", 3, rs, start, until, with_headers=True)
    assert cols.offsets.tolist() == [r.offset for r in want]
    assert cols.timestamps.tolist() == [r.timestamp for r in want]
    assert cols.keys.to_pylist() == [r.key for r in want]
    assert cols.values.to_pylist() == [r.value for r in want]
    assert cols.headers == [[tuple(h) for h in r.headers] for r in want]
    assert cols.next_offset == want[-1].offset + 1


@pytest.mark.parametrize("codecs", [[0, 0, 0], [0, 4, 1]], ids=["plain", "mixed-codecs"])
def test_several_partitions_decode_in_one_pass_to_each_ones_rows(codecs):
    """decode_parts over three partitions' record sets (each with its own range) gives
    exactly the rows decode_columns gives for each alone, each row tagged with its own
    topic and partition, one partition's rows in offset order."""
    rng = random.Random(7)
    wanted = [("a", 0, 17, 41), ("a", 5, 0, 10**9), ("b", 0, 60, 156)]
    parts = [RecordSetPart(t, p, record_set(rng, codec), lo, hi)
             for (t, p, lo, hi), codec in zip(wanted, codecs, strict=True)]
    cols = decode_parts(parts, with_headers=True)
    batch = cols.to_arrow(include_headers=True)
    assert batch.schema == KAFKA_SCHEMA_WITH_HEADERS
    got = batch.to_pylist()
    alone = []
    for part in parts:
        one = decode_columns(part.topic, part.partition, part.records, part.start, part.until,
                             with_headers=True)
        alone += one.to_arrow(include_headers=True).to_pylist()
    assert sorted(got, key=lambda r: (r["topic"], r["partition"], r["offset"])) == alone
    for t, p, _, _ in wanted:
        offsets = [r["offset"] for r in got if (r["topic"], r["partition"]) == (t, p)]
        assert offsets == sorted(offsets) and offsets
    with pytest.raises(ValueError, match="several partitions"):
        _ = cols.next_offset


def test_decode_parts_skips_parts_with_nothing_in_range():
    rng = random.Random(3)
    rs = record_set(rng, 0)
    parts = [RecordSetPart("t", 0, rs, 500, 600), RecordSetPart("t", 1, rs, 10, 12)]
    batch = decode_parts(parts).to_arrow()
    assert [(r["partition"], r["offset"]) for r in batch.to_pylist()] == [(1, 10), (1, 11)]
    assert decode_parts([RecordSetPart("t", 0, rs, 500, 600)]) is None


def test_arrow_batch_has_sparks_kafka_schema():
    rs = batch([(1_000, b"k", b"v", [("h", b"x")]), (2_000, None, None, [])], 10)
    rb = decode_columns("events", 2, rs, 0, 100).to_arrow()
    assert rb.schema == KAFKA_SCHEMA
    assert rb.to_pylist()[0]["timestamp"].timestamp() == 1.0
    assert rb.column("topic").to_pylist() == ["events", "events"]
    assert rb.column("partition").to_pylist() == [2, 2]
    assert rb.column("offset").to_pylist() == [10, 11]
    assert rb.column("key").null_count == 1 and rb.column("value").to_pylist() == [b"v", None]
    with_headers = decode_columns("events", 2, rs, 0, 100, with_headers=True).to_arrow(True)
    assert with_headers.schema == KAFKA_SCHEMA_WITH_HEADERS
    assert with_headers.column("headers").to_pylist() == [[{"key": "h", "value": b"x"}], []]


def test_binary_columns_are_offsets_plus_one_data_buffer_plus_validity():
    rs = batch([(1, None, b"ab", []), (1, None, None, []), (1, None, b"cde" * 10, [])], 0)
    cols = decode_columns("t", 0, rs, 0, 10)
    validity, offsets, data = cols.binary_buffers(cols.values)
    assert offsets.dtype == np.int32 and offsets.tolist() == [0, 2, 2, 32]
    assert bytes(data[:32]) == b"ab" + b"cde" * 10
    assert np.unpackbits(validity, bitorder="little")[:3].tolist() == [1, 0, 1]
    assert isinstance(cols.values, pa.BinaryArray)


def test_log_append_time_applies_the_batch_max_timestamp():
    rs = batch([(5, None, b"a", []), (9, None, b"b", [])], 0, log_append=True)
    want = expected(rs, 0, 10)
    cols = decode_columns("t", 0, rs, 0, 10)
    assert cols.timestamps.tolist() == [r.timestamp for r in want] == [9, 9]
    assert cols.timestamp_types.tolist() == [1, 1]


def test_control_batches_and_out_of_range_batches_are_skipped():
    rs = (batch([(1, None, b"old", [])], 0) + batch([(1, b"\x00\x00", b"m", [])], 1, control=True)
          + batch([(1, None, b"new", [])], 2))
    cols = decode_columns("t", 0, rs, 1, 10)
    assert cols.offsets.tolist() == [2] and cols.values.to_pylist() == [b"new"]
    assert decode_columns("t", 0, rs, 5, 10) is None


def test_a_trailing_partial_batch_is_ignored():
    whole = batch([(1, None, b"a", [])], 0)
    cols = decode_columns("t", 0, whole + batch([(1, None, b"b", [])], 1)[:30], 0, 10)
    assert cols.offsets.tolist() == [0]


def test_corrupt_records_raise_corrupt_message():
    good = bytearray(batch([(1, None, b"abcdef", [])] * 3, 0))
    good[-4] ^= 0xFF  # flips a value byte: the CRC no longer matches
    with pytest.raises(CorruptMessage):
        decode_columns("t", 0, bytes(good), 0, 10)
    # a record count that does not match the records (CRC recomputed by the builder)
    b = RecordBatchBuilder()
    b.append(1, None, b"abc")
    rs = bytearray(b.build())
    rs[57:61] = (2).to_bytes(4, "big")
    rs[17:21] = google_crc32c.value(bytes(rs[21:])).to_bytes(4, "big")
    with pytest.raises(CorruptMessage):
        decode_columns("t", 0, bytes(rs), 0, 10)


@pytest.mark.parametrize("codec", [0, 4], ids=["none", "zstd"])
def test_runs_of_equal_sized_records_mixed_with_odd_ones(codec):
    # Equal sizes let the decoder check many record positions at once; the offset delta
    # changes width at 64 and 8192, and odd-sized or huge records break the runs.
    rng = random.Random(5)
    records = []
    for i in range(9000):
        if i % 1000 == 999:
            value = rng.randbytes(rng.randrange(300))
        elif i == 4321:
            value = b"h" * (2 * 1024 * 1024)  # a 4-byte length prefix
        else:
            value = b"%06d" % i
        records.append((1_000 + (i % 3), None, value, []))
    rs = batch(records[:8500], 0, codec) + batch(records[8500:], 8500, codec)
    want = expected(rs, 0, 10**9)
    cols = decode_columns("t", 0, rs, 0, 10**9)
    assert cols.offsets.tolist() == list(range(9000))
    assert cols.values.to_pylist() == [r.value for r in want]
    assert cols.timestamps.tolist() == [r.timestamp for r in want]


def test_crc_checks_can_be_turned_off():
    rs = bytearray(batch([(1, None, b"abcdef", [])], 0))
    rs[17] ^= 0xFF  # corrupt only the stored CRC
    with pytest.raises(CorruptMessage, match="CRC"):
        decode_columns("t", 0, bytes(rs), 0, 10)
    cols = decode_columns("t", 0, bytes(rs), 0, 10, check_crcs=False)
    assert cols.values.to_pylist() == [b"abcdef"]


def producer_like_records(rng: random.Random, n: int, value_sizes: list[int]) -> list[tuple]:
    """Records as a producer batches them: timestamps within a few seconds of the batch's
    first, short keys or none, values of a few sizes, now and then headers."""
    out = []
    for i in range(n):
        key = None if rng.random() < 0.5 else rng.randbytes(rng.choice([0, 3, 12, 13, 40]))
        value = None if rng.random() < 0.05 else rng.randbytes(rng.choice(value_sizes))
        headers = [("h", b"x")] if rng.random() < 0.02 else []
        out.append((1_700_000_000_000 + i // 7 + rng.randrange(3), key, value, headers))
    return out


@pytest.mark.parametrize("codec", [0, 4], ids=["none", "zstd"])
@pytest.mark.parametrize("value_sizes", [[100], [0, 1, 5, 12, 13, 100], [9000, 20000]],
                         ids=["fixed", "small", "3-byte-lengths"])
@pytest.mark.parametrize("start, until", [(0, 10**9), (5, 9000), (8191, 8300)])
def test_producer_like_batches_decode_in_words(codec, value_sizes, start, until):
    # Offset deltas past 8191 take 3 bytes, so a record's first fields no longer fit in
    # the 8-byte word read at its start; the decoder reads the key length again.
    rng = random.Random(len(value_sizes) * 1000 + start)
    n = 9000 if value_sizes != [9000, 20000] else 300
    rs = batch(producer_like_records(rng, n, value_sizes), 0, codec)
    rs += batch(producer_like_records(rng, 70, value_sizes), n, codec)
    want = expected(rs, start, until)
    cols = decode_columns("t", 0, rs, start, until, with_headers=True)
    if not want:  # the large values' set is shorter than the range's start
        assert cols is None
        return
    assert cols.offsets.tolist() == [r.offset for r in want]
    assert cols.timestamps.tolist() == [r.timestamp for r in want]
    assert cols.keys.to_pylist() == [r.key for r in want]
    assert cols.values.to_pylist() == [r.value for r in want]
    assert cols.headers == [[tuple(h) for h in r.headers] for r in want]


def test_word_reads_agree_with_field_by_field_reads():
    from connector.client.columnar_numpy import _fields, _fields_fast, _record_starts

    rng = random.Random(7)
    rs = batch(producer_like_records(rng, 9000, [0, 7, 100, 300]), 0)
    data = rs + b"\x00" * 16
    buf = np.frombuffer(data, np.uint8)
    starts = _record_starts(data, buf, [(61, len(rs))], [iter_batch_header(rs)])
    fast = _fields_fast(buf, starts)
    assert fast is not None  # the fast path is the one these records take
    for got, want in zip(fast, _fields(buf, starts), strict=True):
        assert got.tolist() == want.tolist()


def iter_batch_header(rs: bytes):
    from broker_sim.protocol.records import BatchHeader

    return BatchHeader.parse(rs, 0)


@pytest.mark.parametrize("last", [(1, None, b"", []), (1, None, b"ab", []),
                                  (1, None, b"v", [(f"h{i}", None) for i in range(70)])],
                         ids=["empty-value", "tiny-value", "70-headers"])
def test_record_sets_ending_in_tiny_or_header_heavy_records(last):
    # Decoded in place, reads of 8 bytes at the last record's start would reach past the
    # end of the record set (or a header count takes 2 bytes): decoded from a padded copy.
    rs = batch([(1, b"k", b"value-%d" % i, []) for i in range(100)] + [last], 0)
    want = expected(rs, 0, 10**9)
    for record_set in (rs, memoryview(rs), bytearray(rs)):
        cols = decode_columns("t", 0, record_set, 0, 10**9, with_headers=True)
        assert cols.values.to_pylist() == [r.value for r in want]
        assert cols.keys.to_pylist() == [r.key for r in want]
        assert cols.headers == [[tuple(h) for h in r.headers] for r in want]


def _as_rows(cols):
    if cols is None:
        return None
    return (cols.offsets.tolist(), cols.timestamps.tolist(), cols.keys.to_pylist(),
            cols.values.to_pylist(), cols.headers)


def test_c_scanner_and_numpy_agree_on_damaged_records(scanner):
    # Untrusted bytes: flip bytes of the records (CRC checks off, so the damage reaches the
    # scanners) and both paths must give the same rows or both raise CorruptMessage;
    # neither may read outside the buffer (the C one would crash the process).
    if scanner == "numpy" or C_SCAN is None:
        pytest.skip("compares the two paths once")
    rng = random.Random(7)
    records = [(1_700_000_000_000 + rng.randrange(10**7), rng.choice([None, b"k", b"key-%d" % i]),
                rng.choice([None, b"", b"v" * rng.randrange(1, 140)]),
                [] if i % 5 else [("h", b"x")]) for i in range(60)]
    rs = batch(records[:35], 0) + batch(records[35:], 35)  # small records: damage hits fields
    outcomes = {"same rows": 0, "both corrupt": 0}
    for trial in range(400):
        damaged = bytearray(rs)
        for _ in range(rng.choice([1, 1, 2, 4])):
            pos = rng.randrange(61, len(damaged))  # past the first batch header
            damaged[pos] = rng.randrange(256) if trial % 2 else damaged[pos] ^ 0x80
        got = []
        for scan in (C_SCAN, None):
            columnar._SCAN = scan
            try:
                got.append(_as_rows(decode_columns("t", 0, bytes(damaged), 0, 10**9,
                                                   with_headers=True, check_crcs=False)))
            except CorruptMessage:
                got.append("corrupt")
            finally:
                columnar._SCAN = C_SCAN
        assert got[0] == got[1], f"trial {trial}: C {got[0]!r:.200} numpy {got[1]!r:.200}"
        outcomes["both corrupt" if got[0] == "corrupt" else "same rows"] += 1
    assert min(outcomes.values()) > 20, outcomes  # both kinds of outcome were exercised
