from __future__ import annotations

import pytest

from broker_sim.log import LogConfig
from broker_sim.protocol.errors import InvalidConfig


def test_defaults_are_kafkas() -> None:
    c = LogConfig()
    assert c.segment_bytes == 1 << 30
    assert c.segment_ms == 7 * 24 * 3600 * 1000
    assert c.retention_bytes == -1
    assert c.retention_ms == 7 * 24 * 3600 * 1000
    assert c.index_interval_bytes == 4096
    assert c.max_message_bytes == 1024 * 1024 + 12


@pytest.mark.parametrize(
    ("field", "value", "prop", "allowed"),
    [
        ("segment_bytes", 0, "segment.bytes", "[14, 2147483647]"),
        ("segment_bytes", 2**31, "segment.bytes", "[14, 2147483647]"),
        ("segment_ms", 0, "segment.ms", ">= 1"),
        ("retention_bytes", -2, "retention.bytes", "-1 (unlimited)"),
        ("retention_ms", -5, "retention.ms", "-1 (unlimited)"),
        ("index_interval_bytes", -1, "index.interval.bytes", "[0, 2147483647]"),
        ("max_message_bytes", -1, "max.message.bytes", "[0, 2147483647]"),
    ],
)
def test_invalid_values_name_option_value_and_allowed(field: str, value: int, prop: str, allowed: str) -> None:
    with pytest.raises(InvalidConfig) as e:
        LogConfig(**{field: value})  # type: ignore[arg-type]  # one int field, named by the case
    msg = str(e.value)
    assert prop in msg and field in msg and repr(value) in msg and allowed in msg


def test_non_integer_rejected() -> None:
    with pytest.raises(InvalidConfig, match="segment.bytes"):
        LogConfig(segment_bytes="100")  # type: ignore[arg-type]  # the wrong type is the point
    with pytest.raises(InvalidConfig, match="retention.ms"):
        LogConfig(retention_ms=True)


def test_from_properties_dotted_names() -> None:
    c = LogConfig.from_properties(
        {
            "segment.bytes": "2048",
            "segment.ms": "60000",
            "retention.bytes": "-1",
            "retention.ms": "3600000",
            "index.interval.bytes": "64",
            "max.message.bytes": "5000",
        }
    )
    assert (c.segment_bytes, c.segment_ms, c.retention_bytes, c.retention_ms) == (2048, 60000, -1, 3600000)
    assert (c.index_interval_bytes, c.max_message_bytes) == (64, 5000)
    assert LogConfig.from_properties({"message.max.bytes": "77"}).max_message_bytes == 77


def test_from_properties_layers_on_defaults_and_round_trips() -> None:
    base = LogConfig(segment_bytes=4096)
    c = LogConfig.from_properties({"retention.ms": "-1"}, base)
    assert c.segment_bytes == 4096 and c.retention_ms == -1
    assert LogConfig.from_properties(c.to_properties()) == c
    assert c.overrides_from(LogConfig()) == {"segment.bytes": "4096", "retention.ms": "-1"}


def test_from_properties_errors() -> None:
    with pytest.raises(InvalidConfig, match=r"'lots' for configuration segment\.bytes"):
        LogConfig.from_properties({"segment.bytes": "lots"})
    with pytest.raises(InvalidConfig, match=r"Unknown configuration flush\.messages"):
        LogConfig.from_properties({"flush.messages": "1"})
    assert LogConfig.from_properties({"flush.messages": "1"}, ignore_unknown=True) == LogConfig()
    with pytest.raises(InvalidConfig, match=r"Invalid value 3 for configuration segment\.bytes"):
        LogConfig.from_properties({"segment.bytes": "3"})


def test_replace_validates() -> None:
    assert LogConfig().replace(segment_bytes=100).segment_bytes == 100
    with pytest.raises(InvalidConfig, match="segment.ms"):
        LogConfig().replace(segment_ms=-1)


@pytest.mark.parametrize(("raw", "policy", "deletes"), [
    ("delete", "delete", True), ("compact", "compact", False),
    ("compact,delete", "compact,delete", True), ("delete, compact", "compact,delete", True),
    ("DELETE", "delete", True),
])
def test_cleanup_policy_is_a_list_kept_in_canonical_order(raw: str, policy: str, deletes: bool) -> None:
    c = LogConfig.from_properties({"cleanup.policy": raw})
    assert (c.cleanup_policy, c.deletes) == (policy, deletes)
    assert LogConfig.from_properties(c.to_properties()) == c
    assert c.overrides_from(LogConfig()) == ({} if policy == "delete" else {"cleanup.policy": policy})


@pytest.mark.parametrize("raw", ["", "remove", "delete,delete", "compact,", "delete;compact"])
def test_cleanup_policy_refuses_anything_else(raw: str) -> None:
    with pytest.raises(InvalidConfig, match=r"for configuration cleanup\.policy .*delete and compact"):
        LogConfig.from_properties({"cleanup.policy": raw})
