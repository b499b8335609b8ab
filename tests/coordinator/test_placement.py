"""Coordinator placement matches Kafka's (Java's String.hashCode, abs, modulo)."""

from broker_sim.coordinator.placement import java_string_hash, partition_for


def test_java_string_hash_matches_java():
    # values of "...".hashCode() in Java
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2147483648  # Integer.MIN_VALUE
    assert java_string_hash("é€") == 233 * 31 + 8364  # UTF-16 code units


def test_partition_for_is_kafkas_abs_modulo():
    assert partition_for("hello", 50) == 99162322 % 50
    # Kafka's Utils.abs maps Integer.MIN_VALUE to 0 (it masks the sign bit)
    assert partition_for("polygenelubricants", 50) == 0
    assert 0 <= partition_for("any-group", 7) < 7
