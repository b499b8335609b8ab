"""Tests of the record layer: RecordBatch v2 build/read, compression, CRC, interop."""

from __future__ import annotations

import gzip
import random
import struct
import types
import warnings
from collections.abc import Sequence
from typing import Any

import cramjam
import google_crc32c
import lz4.frame
import pytest
import zstandard

from broker_sim.protocol.errors import CorruptMessage, UnsupportedCompressionType
from broker_sim.protocol.primitives import write_varint
from broker_sim.protocol.records import (
    GZIP,
    HEADER_SIZE,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    BatchHeader,
    Header,
    Record,
    RecordBatchBuilder,
    assign_offsets,
    codec_id,
    codec_name,
    compress,
    decode_batch,
    decompress,
    iter_batches,
    iter_records,
    validate_batch,
)

with warnings.catch_warnings():  # kafka-python loads its schemas with deprecated importlib APIs
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.codec as kafka_codec
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
CODEC_IDS = ["none", "gzip", "snappy", "lz4", "zstd"]
TS = 1_700_000_000_000

codec_param = pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)


Sample = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]
"""(timestamp, key, value, headers) of one record to build."""


def build(records: Sequence[Sample], **kwargs: Any) -> bytes:
    b = RecordBatchBuilder(**kwargs)
    for ts, key, value, headers in records:
        b.append(ts, key, value, headers)
    return b.build()


def as_tuples(records: list[Record]) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]) for r in records]


def wrap_records(records: bytes, count: int, *, attributes: int = 0, last_offset_delta: int | None = None) -> bytes:
    """A batch with a valid CRC around arbitrary (possibly malformed) records bytes."""
    lod = count - 1 if last_offset_delta is None else last_offset_delta
    body = struct.pack(">hiqqqhii", attributes, max(lod, 0), TS, TS, -1, -1, -1, count) + records
    return struct.pack(">qiibI", 0, len(body) + 9, -1, 2, google_crc32c.value(body)) + body


SAMPLE: list[Sample] = [
    (TS, b"key-0", b"value-0", []),
    (TS + 3, None, b"value with null key", [("h1", b"a")]),
    (TS + 1, b"key with null value", None, [("h-null", None)]),
    (TS - 7, None, None, []),  # older than the first record: negative timestamp delta
    (TS + 70_000, b"", b"", [("\u00e9t\u00e9 \u2603 \U0001f600", b"\x00\xff"), ("", b""), ("dup", None), ("dup", b"2")]),
    (TS + 2, b"k" * 300, b"v" * 9000, [("x" * 200, b"y" * 70)]),  # 2- and 3-byte varints
]


# --- round trips ---------------------------------------------------------------------------


@codec_param
def test_round_trip_fields(codec: int) -> None:
    batch = build(
        SAMPLE, compression=codec, base_offset=1000, producer_id=42, producer_epoch=3,
        base_sequence=17, is_transactional=True, partition_leader_epoch=9,
    )
    header, records = decode_batch(batch)
    assert header.compression == codec
    assert header.magic == 2
    assert header.base_offset == 1000
    assert header.partition_leader_epoch == 9
    assert header.records_count == len(SAMPLE)
    assert header.last_offset_delta == len(SAMPLE) - 1
    assert header.base_timestamp == TS
    assert header.max_timestamp == TS + 70_000
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 3, 17)
    assert header.is_transactional and not header.is_control
    assert header.timestamp_type == 0
    assert header.size == len(batch)
    expected = [(1000 + i, ts, k, v, hs) for i, (ts, k, v, hs) in enumerate(SAMPLE)]
    assert as_tuples(records) == expected
    assert list(iter_records(batch)) == records
    # headers come back as Header named tuples, equal to plain tuples
    assert records[1].headers == [Header("h1", b"a")] == [("h1", b"a")]
    first = records[1].headers[0]
    assert isinstance(first, Header) and first.key == "h1"
    assert all(not r.is_control for r in records)


@codec_param
def test_null_and_empty_are_distinct(codec: int) -> None:
    batch = build([(TS, None, b"", []), (TS, b"", None, [("k", None), ("k", b"")])], compression=codec)
    _, records = decode_batch(batch)
    assert (records[0].key, records[0].value) == (None, b"")
    assert (records[1].key, records[1].value) == (b"", None)
    assert records[1].headers == [("k", None), ("k", b"")]


@codec_param
def test_large_value_1mib(codec: int) -> None:
    rng = random.Random(1)
    big = rng.randbytes(512 * 1024) + b"z" * (512 * 1024)  # half incompressible
    batch = build([(TS, b"big", big, [("h", big[:100])]), (TS, None, b"after", [])], compression=codec)
    _, records = decode_batch(batch)
    assert records[0].value == big
    assert records[0].headers == [("h", big[:100])]
    assert records[1].value == b"after"


@codec_param
def test_many_records_10k(codec: int) -> None:
    # offset deltas past 8191 and timestamp deltas past 8191 ms leave the varint table
    n = 10_000
    b = RecordBatchBuilder(compression=codec, base_offset=5)
    for i in range(n):
        assert b.append(TS + i * 3 - 500, str(i).encode(), b"v%06d" % i, [("i", str(i).encode())] if i % 7 == 0 else ()) == i
    assert b.record_count == n
    batch = b.build()
    header, records = decode_batch(batch)
    assert header.records_count == n and header.last_offset == n + 4
    assert header.max_timestamp == TS + (n - 1) * 3 - 500
    assert [r.offset for r in records] == list(range(5, n + 5))
    assert [r.timestamp for r in records] == [TS + i * 3 - 500 for i in range(n)]
    assert [r.value for r in records] == [b"v%06d" % i for i in range(n)]
    assert records[7].headers == [("i", b"7")] and records[8].headers == []


def test_wide_varints() -> None:
    # timestamp deltas of years either way: 4- to 6-byte varlongs
    far: list[Sample] = [(TS, b"a", b"1", []), (TS - 86_400_000 * 365, b"b", b"2", []), (TS + 10**10, b"c", b"3", [])]
    _, records = decode_batch(build(far, base_offset=2**40))
    assert [(r.offset, r.timestamp) for r in records] == [(2**40 + i, far[i][0]) for i in range(3)]
    # an offset delta of 2**21 (4-byte varint) written by hand: a batch left after compaction
    fields = bytearray(b"\x00")  # attributes
    for v in (0, 2**21, -1, -1, 0):  # ts delta, offset delta, null key, null value, no headers
        write_varint(fields, v)
    rec = bytearray()
    write_varint(rec, len(fields))
    rec += fields
    _, records = decode_batch(wrap_records(bytes(rec), 1, last_offset_delta=2**21))
    assert (records[0].offset, records[0].key, records[0].value) == (2**21, None, None)


def test_several_batches_mixed_codecs() -> None:
    batches = []
    offset = 0
    for codec in CODECS:
        batches.append(build([(TS + offset, b"c%d" % codec, b"x" * 100, [])] * 3, compression=codec, base_offset=offset))
        offset += 3
    records = list(iter_records(b"".join(batches)))
    assert [r.offset for r in records] == list(range(15))
    assert [r.key for r in records] == [b"c%d" % c for c in CODECS for _ in range(3)]
    assert [pos for pos, _ in iter_batches(b"".join(batches))][0] == 0


def test_iter_records_accepts_bytearray_and_memoryview() -> None:
    batch = build(SAMPLE)
    expected = list(iter_records(batch))
    assert list(iter_records(bytearray(batch))) == expected
    assert list(iter_records(memoryview(batch))) == expected
    framed = b"junk" + batch
    assert decode_batch(framed, 4)[1] == expected
    assert isinstance(expected[0].key, bytes)


def test_builder_size_and_count() -> None:
    b = RecordBatchBuilder()
    assert b.record_count == 0 and b.estimated_size() == HEADER_SIZE
    b.append(TS, b"k", b"v")
    assert b.record_count == 1
    assert b.estimated_size() == len(b.build())


def test_builder_rejects_bad_input_without_corrupting_the_batch() -> None:
    b = RecordBatchBuilder()
    b.append(TS, b"k", b"v")
    size = b.estimated_size()
    with pytest.raises(TypeError):
        b.append(TS, "str key", b"v")  # type: ignore[arg-type]  # the wrong types are the point
    with pytest.raises(TypeError):
        b.append(TS, b"k", 12)  # type: ignore[arg-type]  # (as above)
    with pytest.raises((TypeError, AttributeError)):
        b.append(TS, b"k", b"v", [(1, b"v")])  # type: ignore[list-item]  # (as above)
    assert b.estimated_size() == size and b.record_count == 1
    assert b.append(TS + 1, None, b"w") == 1
    _, records = decode_batch(b.build())
    assert [r.value for r in records] == [b"v", b"w"]
    with pytest.raises(UnsupportedCompressionType):
        RecordBatchBuilder(compression=5)
    with pytest.raises(ValueError):
        RecordBatchBuilder(timestamp_type=2)


# --- empty batches ---------------------------------------------------------------------------


@codec_param
def test_empty_builder_builds_an_empty_record_set(codec: int) -> None:
    b = RecordBatchBuilder(compression=codec)
    assert b.build() == b""
    assert list(iter_records(b"")) == []


@codec_param
def test_batch_with_zero_records(codec: int) -> None:
    # What compaction leaves behind: a header whose records are all gone (no body at all,
    # even when the attributes name a codec).
    batch = wrap_records(b"", 0, attributes=codec, last_offset_delta=4)
    header, records = decode_batch(batch)
    assert records == [] and header.records_count == 0 and header.next_offset == 5
    tail = build([(TS, b"k", b"v", [])], base_offset=5)
    assert [r.offset for r in iter_records(batch + tail)] == [5]


def test_empty_input_and_short_tails() -> None:
    assert list(iter_records(b"")) == []
    assert list(iter_records(b"\x00" * 11)) == []
    with pytest.raises(CorruptMessage):
        decode_batch(b"")


# --- timestamps and control batches ----------------------------------------------------------


@codec_param
def test_log_append_time_uses_max_timestamp(codec: int) -> None:
    batch = build([(TS + 5, b"a", b"1", []), (TS + 9, b"b", b"2", []), (TS, b"c", b"3", [])], compression=codec, timestamp_type=1)
    header, records = decode_batch(batch)
    assert header.timestamp_type == 1 and header.max_timestamp == TS + 9
    assert [r.timestamp for r in records] == [TS + 9] * 3


def test_control_batches_skipped_unless_asked() -> None:
    commit_key = struct.pack(">hh", 0, 1)  # version 0, type 1 = COMMIT
    marker = build([(TS, commit_key, struct.pack(">hi", 0, 0), [])], base_offset=3, producer_id=9,
                   producer_epoch=0, is_transactional=True, is_control=True)
    data = build([(TS, b"k", b"v", [])] * 3, producer_id=9, producer_epoch=0, base_sequence=0,
                 is_transactional=True) + marker
    assert [r.offset for r in iter_records(data)] == [0, 1, 2]
    records = list(iter_records(data, include_control=True))
    assert [(r.offset, r.is_control) for r in records] == [(0, False), (1, False), (2, False), (3, True)]
    assert records[3].key == commit_key
    header, control = decode_batch(marker)
    assert header.is_control and header.is_transactional and control[0].is_control


# --- corruption --------------------------------------------------------------------------------


@codec_param
def test_crc_detects_flipped_bytes(codec: int) -> None:
    batch = build(SAMPLE, compression=codec)
    for pos in (21, 22, 30, 60, 61, len(batch) // 2, len(batch) - 1):  # attributes .. last byte
        bad = bytearray(batch)
        bad[pos] ^= 0x01
        with pytest.raises(CorruptMessage):
            decode_batch(bytes(bad))
        with pytest.raises(CorruptMessage):
            list(iter_records(bytes(bad)))
        with pytest.raises(CorruptMessage):
            validate_batch(bytes(bad))


@codec_param
def test_assign_offsets_keeps_crc_valid(codec: int) -> None:
    first = build(SAMPLE, compression=codec)
    second = build(SAMPLE[:2], compression=codec)
    buf = bytearray(first + second)
    assign_offsets(buf, 0, 5000, 7)
    assign_offsets(buf, len(first), 5000 + len(SAMPLE), 7)
    headers = [h for _, h in iter_batches(buf)]  # validates each CRC
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(5000, 7), (5006, 7)]
    assert [r.offset for r in iter_records(buf)] == list(range(5000, 5008))
    assert headers[0].crc == BatchHeader.parse(first).crc


def test_truncated_trailing_batch_is_ignored() -> None:
    first = build(SAMPLE, base_offset=0)
    second = build(SAMPLE, base_offset=len(SAMPLE), compression=LZ4)
    whole = first + second
    expected = list(iter_records(first))
    for cut in (1, 8, 11, 12, 13, HEADER_SIZE, HEADER_SIZE + 1, len(second) - 1):
        assert list(iter_records(whole[: len(first) + cut])) == expected
        with pytest.raises(CorruptMessage):
            decode_batch(whole[: len(first) + cut], len(first))
    assert len(list(iter_records(whole))) == 2 * len(SAMPLE)


def _record_bytes(*fields: bytes) -> bytes:
    return b"".join(fields)


MALFORMED = {
    "length-past-end": (bytes([0x40, 0, 0, 0, 1, 1, 0]), 1),
    "negative-length": (bytes([0x03, 0, 0, 0, 1, 1, 0]), 1),
    "length-too-short": (bytes([0x08, 0, 0, 0, 1]), 1),
    "negative-key-length": (bytes([0x0C, 0, 0, 0, 0x03, 1, 0]), 1),
    "negative-value-length": (bytes([0x0C, 0, 0, 0, 1, 0x05, 0]), 1),
    "key-past-record": (bytes([0x0C, 0, 0, 0, 0x10, 1, 0]), 1),
    "truncated-varint": (bytes([0x0C, 0, 0x80, 0x80, 0x80, 0x80, 0x80]), 1),
    "count-too-high": (bytes([0x0C, 0, 0, 0, 1, 1, 0]), 2),
    "leftover-bytes": (bytes([0x0C, 0, 0, 0, 1, 1, 0, 0xAA]), 1),
    "length-mismatch": (bytes([0x0E, 0, 0, 0, 1, 1, 0, 0]), 1),
    "header-count-huge": (bytes([0x0C, 0, 0, 0, 1, 1, 0x7E]), 1),
    "negative-header-count": (bytes([0x10, 0, 0, 0, 1, 1, 0x03, 0, 1]), 1),
    "negative-header-key": (bytes([0x10, 0, 0, 0, 1, 1, 0x02, 0x03, 1]), 1),
    "header-key-not-utf8": (bytes([0x12, 0, 0, 0, 1, 1, 0x02, 0x02, 0xFF, 1]), 1),
    "header-value-past-record": (bytes([0x12, 0, 0, 0, 1, 1, 0x02, 0x02, 0x61, 0x40]), 1),
    "negative-header-value": (bytes([0x12, 0, 0, 0, 1, 1, 0x02, 0x02, 0x61, 0x05]), 1),
    "varint-too-long": (bytes([0x0C, 0]) + b"\xff" * 11 + b"\x00", 1),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_records_raise_corrupt_message(name: str) -> None:
    records, count = MALFORMED[name]
    batch = wrap_records(records, count)
    validate_batch(batch)  # the CRC is fine: only the records are bad
    with pytest.raises(CorruptMessage):
        decode_batch(batch)


@codec_param
def test_fuzzed_records_only_raise_corrupt_message(codec: int) -> None:
    rng = random.Random(codec)
    plain = build(SAMPLE[:5])[HEADER_SIZE:]
    section = compress(codec, plain)
    for _ in range(300):
        mutated = bytearray(section)
        for _ in range(rng.randint(1, 4)):
            if not mutated:
                break
            op = rng.random()
            pos = rng.randrange(len(mutated))
            if op < 0.6:
                mutated[pos] = rng.randrange(256)
            elif op < 0.8:
                del mutated[pos:]
            else:
                mutated.insert(pos, rng.randrange(256))
        batch = wrap_records(bytes(mutated), 5, attributes=codec)
        try:
            decode_batch(batch)
        except CorruptMessage:
            pass


def test_compressed_garbage_is_corrupt() -> None:
    for codec in (GZIP, SNAPPY, LZ4, ZSTD):
        with pytest.raises(CorruptMessage):
            decode_batch(wrap_records(b"definitely not compressed", 1, attributes=codec))
    with pytest.raises(UnsupportedCompressionType):
        decode_batch(wrap_records(b"xx", 1, attributes=5))


# --- compression module ----------------------------------------------------------------------


def test_codec_names() -> None:
    assert [codec_id(n) for n in CODEC_IDS] == CODECS
    assert [codec_name(c) for c in CODECS] == CODEC_IDS
    assert codec_id("ZSTD") == ZSTD
    with pytest.raises(ValueError, match="'none', 'gzip', 'snappy', 'lz4', 'zstd'"):
        codec_id("brotli")
    with pytest.raises(ValueError, match="allowed values"):
        codec_name(7)


@codec_param
def test_compress_round_trip(codec: int) -> None:
    for data in (b"", b"a", b"hello world " * 10_000, random.Random(2).randbytes(200_000)):
        assert decompress(codec, compress(codec, data)) == data
        assert decompress(codec, memoryview(compress(codec, data))) == data


def test_snappy_is_raw_and_xerial_is_accepted() -> None:
    data = b"snappy " * 20_000  # > 3 xerial blocks of 32 KiB
    assert compress(SNAPPY, data) == bytes(cramjam.snappy.compress_raw(data))
    framed = bytearray(b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1))
    for i in range(0, len(data), 32 * 1024):
        block = bytes(cramjam.snappy.compress_raw(data[i : i + 32 * 1024]))
        framed += struct.pack(">i", len(block)) + block
    assert decompress(SNAPPY, bytes(framed)) == data
    # version/compat written little-endian by some producers (redpanda): still accepted
    framed[8:16] = struct.pack("<ii", 1, 1)
    assert decompress(SNAPPY, bytes(framed)) == data
    with pytest.raises(CorruptMessage):
        decompress(SNAPPY, bytes(framed[:-3]))
    with pytest.raises(CorruptMessage):
        decompress(SNAPPY, bytes(framed[:18]))


def test_lz4_frame_matches_java_client() -> None:
    frame = compress(LZ4, b"x" * 200_000)
    assert frame[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic
    flg, bd = frame[4], frame[5]
    assert flg & 0xC0 == 0x40  # version 01
    assert flg & 0x20  # independent blocks: Java decompresses each block on its own
    assert not flg & 0x08  # no content size
    assert (bd >> 4) & 0x7 == 4  # 64 KiB maximum block size
    with pytest.raises(CorruptMessage):
        decompress(LZ4, frame[:-2])
    linked = lz4.frame.compress(b"y" * 100, block_linked=True, store_size=True, content_checksum=True)
    assert decompress(LZ4, linked) == b"y" * 100


def test_zstd_without_content_size_and_multiple_frames() -> None:
    no_size = zstandard.ZstdCompressor(write_content_size=False).compress(b"z" * 3_000_000)
    assert zstandard.frame_content_size(no_size) == -1
    assert decompress(ZSTD, no_size) == b"z" * 3_000_000
    two = no_size + zstandard.ZstdCompressor().compress(b"tail")
    assert decompress(ZSTD, two) == b"z" * 3_000_000 + b"tail"
    with pytest.raises(CorruptMessage):
        decompress(ZSTD, no_size[:-4])


def test_gzip_members_and_truncation() -> None:
    two = gzip.compress(b"one ") + gzip.compress(b"two")
    assert decompress(GZIP, two) == b"one two"
    with pytest.raises(CorruptMessage):
        decompress(GZIP, two[:-5])


def test_unknown_codec() -> None:
    with pytest.raises(UnsupportedCompressionType):
        compress(6, b"x")
    with pytest.raises(UnsupportedCompressionType):
        decompress(6, b"x")


# --- golden bytes --------------------------------------------------------------------------------

# Two records, uncompressed, written out by hand from the RecordBatch layout of the Kafka
# protocol guide (https://kafka.apache.org/documentation/#recordbatch). Varints are zig-zag.
GOLDEN = bytes.fromhex(
    "0000000000000000"  # baseOffset: int64 = 0
    "00000052"  # batchLength: int32 = 82 (bytes after this field: 61 - 12 + 33)
    "ffffffff"  # partitionLeaderEpoch: int32 = -1
    "02"  # magic: int8 = 2
    "6f6a776c"  # crc: uint32 = CRC-32C of everything from attributes to the end
    "0000"  # attributes: int16 = 0 (no compression, CREATE_TIME, not transactional/control)
    "00000001"  # lastOffsetDelta: int32 = 1
    "0000018bcfe56800"  # baseTimestamp: int64 = 1700000000000
    "0000018bcfe56805"  # maxTimestamp: int64 = 1700000000005
    "0000000000000007"  # producerId: int64 = 7
    "0001"  # producerEpoch: int16 = 1
    "00000000"  # baseSequence: int32 = 0
    "00000002"  # records count: int32 = 2
    # record 0
    "22"  # length: varint = 17
    "00"  # attributes: int8 = 0
    "00"  # timestampDelta: varlong = 0
    "00"  # offsetDelta: varint = 0
    "04" "6b31"  # keyLength: varint = 2, key = "k1"
    "0a" "68656c6c6f"  # valueLength: varint = 5, value = "hello"
    "02"  # headers count: varint = 1
    "02" "68"  # headerKeyLength: varint = 1, headerKey = "h"
    "02" "76"  # headerValueLength: varint = 1, value = "v"
    # record 1
    "1c"  # length: varint = 14
    "00"  # attributes: int8 = 0
    "0a"  # timestampDelta: varlong = 5
    "02"  # offsetDelta: varint = 1
    "01"  # keyLength: varint = -1 (null key)
    "0a" "776f726c64"  # valueLength: varint = 5, value = "world"
    "02"  # headers count: varint = 1
    "02" "74"  # headerKeyLength: varint = 1, headerKey = "t"
    "01"  # headerValueLength: varint = -1 (null value)
)
GOLDEN_RECORDS = [
    (0, TS, b"k1", b"hello", [("h", b"v")]),
    (1, TS + 5, None, b"world", [("t", None)]),
]


def test_golden_bytes() -> None:
    assert len(GOLDEN) == 12 + 82
    assert google_crc32c.value(GOLDEN[21:]) == 0x6F6A776C  # the hand-written CRC is right
    b = RecordBatchBuilder(producer_id=7, producer_epoch=1, base_sequence=0)
    assert b.append(TS, b"k1", b"hello", [("h", b"v")]) == 0
    assert b.append(TS + 5, None, b"world", [("t", None)]) == 1
    assert b.build() == GOLDEN
    header, records = decode_batch(GOLDEN)
    assert (header.batch_length, header.crc, header.producer_id, header.producer_epoch) == (82, 0x6F6A776C, 7, 1)
    assert as_tuples(records) == GOLDEN_RECORDS


# --- interop with kafka-python 3 ----------------------------------------------------------------

@pytest.fixture
def kafka_snappy(monkeypatch: pytest.MonkeyPatch) -> None:
    """kafka-python wants python-snappy for its snappy codec; give it cramjam's raw snappy.

    kafka-python then writes xerial-framed snappy (32 KiB blocks) like the Java client.
    """
    if kafka_codec.snappy is None:
        shim = types.SimpleNamespace(
            compress=lambda data: bytes(cramjam.snappy.compress_raw(data)),
            decompress=lambda data: bytes(cramjam.snappy.decompress_raw(data)),
        )
        monkeypatch.setattr(kafka_codec, "snappy", shim)


def interop_records(n: int = 200) -> list[tuple[int, bytes | None, bytes | None, list]]:
    out = []
    for i in range(n):
        key = None if i % 5 == 0 else b"key-%d" % i
        value = None if i % 11 == 3 else (b"payload %d " % i) * (1 + i % 40)
        headers = [] if i % 3 else [("tr\u00e4ce-id", b"%08d" % i), ("null", None)]
        ts = TS + i * 37 - (100 if i % 4 == 0 else 0)
        out.append((ts, key, value, headers))
    out.append((TS, b"big", b"B" * 300_000, []))  # more than one xerial/lz4 block
    return out


@codec_param
def test_kafka_python_batches_decode_with_our_reader(codec: int, kafka_snappy: None) -> None:
    records = interop_records()
    kb = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=False, producer_id=77,
        producer_epoch=2, base_sequence=10, batch_size=16 * 1024 * 1024,
    )
    for i, (ts, key, value, headers) in enumerate(records):
        assert kb.append(i, ts, key, value, headers) is not None
    data = bytes(kb.build())
    header, ours = decode_batch(data)
    assert header.compression == codec  # the data compresses, so kafka-python kept the codec
    if codec == SNAPPY:
        assert data[HEADER_SIZE : HEADER_SIZE + 8] == b"\x82SNAPPY\x00"  # xerial framing
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 2, 10)
    expected = [(i, ts, k, v, hs) for i, (ts, k, v, hs) in enumerate(records)]
    assert as_tuples(ours) == expected
    assert as_tuples(list(iter_records(data))) == expected


@codec_param
@pytest.mark.parametrize("timestamp_type", [0, 1], ids=["create-time", "log-append-time"])
def test_our_batches_decode_with_kafka_python(codec: int, timestamp_type: int, kafka_snappy: None) -> None:
    records = interop_records()
    data = build(records, compression=codec, base_offset=300, timestamp_type=timestamp_type,
                 producer_id=5, producer_epoch=1, base_sequence=0)
    kbatch = DefaultRecordBatch(data)
    assert kbatch.validate_crc()
    assert kbatch.compression_type == codec
    assert (kbatch.base_offset, kbatch.records_count, kbatch.last_offset) == (300, len(records), 300 + len(records) - 1)
    assert kbatch.timestamp_type == timestamp_type
    theirs = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in kbatch]
    assert theirs == as_tuples(decode_batch(data)[1])
    if timestamp_type == 0:
        assert theirs == [(300 + i, ts, k, v, hs) for i, (ts, k, v, hs) in enumerate(records)]


def test_kafka_python_memory_records_reads_our_record_set(kafka_snappy: None) -> None:
    batches = []
    offset = 0
    for codec in CODECS:
        batches.append(build(SAMPLE, compression=codec, base_offset=offset))
        offset += len(SAMPLE)
    data = b"".join(batches)
    truncated = data + batches[0][:40]  # a fetch cut mid-batch
    theirs: list[tuple] = []
    mr = MemoryRecords(truncated)
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        theirs.extend((r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch)
    assert mr.valid_bytes() == len(data)
    assert theirs == as_tuples(list(iter_records(truncated)))
    assert [t[0] for t in theirs] == list(range(offset))


def test_kafka_python_golden_bytes_agree() -> None:
    kb = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=7, producer_epoch=1,
        base_sequence=0, batch_size=1 << 20,
    )
    kb.append(0, TS, b"k1", b"hello", [("h", b"v")])
    kb.append(1, TS + 5, None, b"world", [("t", None)])
    theirs = bytes(kb.build())
    # kafka-python writes partitionLeaderEpoch 0 where we write -1 (outside the CRC)
    assert theirs[:12] == GOLDEN[:12] and theirs[16:] == GOLDEN[16:]
