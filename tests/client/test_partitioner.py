"""The default partitioner agrees with the Java client and kafka-python, key for key."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from connector.client.partitioner import DefaultPartitioner, murmur2, to_positive

# Kafka's own test vectors (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java)
JAVA_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


@pytest.mark.parametrize("data, java", JAVA_VECTORS)
def test_murmur2_matches_the_java_client(data, java):
    assert murmur2(data) == java & 0xFFFFFFFF
    assert murmur2(data) == kafka_python_murmur2(data)


@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python_on_any_bytes(data):
    assert murmur2(data) == kafka_python_murmur2(data)


@pytest.mark.parametrize("partitions", [1, 3, 7, 64])
def test_keys_land_where_kafka_python_puts_them(partitions):
    rng = random.Random(partitions)
    p = DefaultPartitioner(batch_size=16384)
    for _ in range(500):
        key = rng.randbytes(rng.randrange(0, 40))
        expected = (kafka_python_murmur2(key) & 0x7FFFFFFF) % partitions
        assert p.partition("t", key, partitions, list(range(partitions))) == expected


def test_to_positive_masks_the_sign_bit_like_java():
    assert to_positive(0xFFFFFFFF) == 0x7FFFFFFF and to_positive(0x80000000) == 0


def test_null_keys_stick_to_a_partition_until_a_batch_worth_of_bytes():
    p = DefaultPartitioner(batch_size=100, rng=random.Random(1))
    chosen = [p.partition("t", None, 4, [0, 1, 2, 3], record_size=60) for _ in range(6)]
    assert chosen[0] == chosen[1] != chosen[2] == chosen[3] != chosen[4] == chosen[5]


def test_sticky_partitions_prefer_available_ones():
    p = DefaultPartitioner(batch_size=1, rng=random.Random(2))
    assert {p.partition("t", None, 5, [3], record_size=10) for _ in range(20)} == {3}
