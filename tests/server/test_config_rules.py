"""Config changes without a network: the change rules, validation, the controller's store.

The rules of :mod:`broker_sim.controller.configs` (AlterConfigs replaces, IncrementalAlterConfigs
sets / deletes / appends / subtracts), what a topic and a broker may take, and
:meth:`Controller.alter_configs` persisting changes across a controller restart.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_sim.controller.configs import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    AlterOp,
    broker_log_overrides,
    check_broker_resource,
    default_min_isr,
    effective_min_isr,
    incremental,
    normalize_topic_configs,
    replace_all,
    validate_broker_configs,
    validate_topic_configs,
)
from broker_sim.controller.controller import Controller
from broker_sim.protocol.errors import InvalidConfig, InvalidRequest, UnknownTopicOrPartition
from broker_sim.server.config import BrokerConfig
from broker_sim.timer import SystemTimer


def _default(name: str) -> str | None:
    return {"cleanup.policy": "delete"}.get(name)


def test_replace_all_makes_the_given_set_the_whole_set() -> None:
    change = replace_all([("retention.ms", "1000")])
    assert change({"segment.bytes": "2048", "retention.ms": "5"}) == {"retention.ms": "1000"}


@pytest.mark.parametrize(("items", "match"), [
    ([("retention.ms", "1"), ("retention.ms", "2")], "retention.ms appears more than once"),
    ([("retention.ms", None)], "retention.ms: a null value"),
])
def test_replace_all_refuses_duplicates_and_nulls(items: list, match: str) -> None:
    with pytest.raises(InvalidRequest, match=match):
        replace_all(items)


def test_incremental_sets_and_deletes_leaving_the_rest() -> None:
    change = incremental([("retention.ms", AlterOp.SET, "1000"), ("segment.ms", AlterOp.DELETE, None),
                          ("cleanup.policy", AlterOp.DELETE, None)], _default)
    assert change({"segment.ms": "5", "segment.bytes": "2048"}) == {
        "segment.bytes": "2048", "retention.ms": "1000"}


def test_incremental_appends_to_and_subtracts_from_lists() -> None:
    append = incremental([("cleanup.policy", AlterOp.APPEND, "compact")], _default)
    assert append({}) == {"cleanup.policy": "delete,compact"}  # from the default
    assert append({"cleanup.policy": "compact"}) == {"cleanup.policy": "compact"}  # already there
    subtract = incremental([("cleanup.policy", AlterOp.SUBTRACT, "delete")], _default)
    assert subtract({"cleanup.policy": "compact,delete"}) == {"cleanup.policy": "compact"}
    assert subtract({}) == {"cleanup.policy": ""}  # then refused by validation
    with pytest.raises(InvalidConfig, match="cleanup.policy"):
        validate_topic_configs(subtract({}))


@pytest.mark.parametrize(("items", "error", "match"), [
    ([("retention.ms", AlterOp.APPEND, "5")], InvalidConfig, "append is not allowed for config retention.ms"),
    ([("retention.ms", 7, "5")], InvalidRequest, "unknown operation 7"),
    ([("retention.ms", AlterOp.SET, None)], InvalidRequest, "SET needs a value"),
    ([("a", AlterOp.SET, "1"), ("a", AlterOp.DELETE, None)], InvalidRequest, "more than once"),
])
def test_incremental_refuses(items: list, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        incremental(items, _default)


@pytest.mark.parametrize(("configs", "match"), [
    ({"retention.ms": "soon"}, r"'soon' for configuration retention\.ms"),
    ({"segment.bytes": "3"}, r"segment\.bytes"),
    ({"no.such.config": "1"}, r"Unknown configuration no\.such\.config"),
    ({"min.insync.replicas": "0"}, r"min\.insync\.replicas"),
    ({"cleanup.policy": "forever"}, r"cleanup\.policy"),
])
def test_topic_validation_names_the_config(configs: dict, match: str) -> None:
    with pytest.raises(InvalidConfig, match=match):
        validate_topic_configs(configs)


def test_topic_configs_accepted_and_normalized() -> None:
    configs = {"cleanup.policy": "delete,compact", "min.insync.replicas": "2", "retention.ms": "-1"}
    validate_topic_configs(configs)
    assert normalize_topic_configs(configs)["cleanup.policy"] == "compact,delete"


def test_broker_validation_names_the_broker_option() -> None:
    validate_broker_configs({"log.retention.ms": "1000", "log.segment.bytes": "4096"})
    with pytest.raises(InvalidConfig, match=r"'x' for configuration log\.retention\.ms "):
        validate_broker_configs({"log.retention.ms": "x"})
    with pytest.raises(InvalidConfig, match=r"Cannot change broker config num\.io\.threads at runtime"):
        validate_broker_configs({"num.io.threads": "8"})


def test_broker_overrides_layer_cluster_default_then_broker() -> None:
    stored = {"": {"log.retention.ms": "1", "log.roll.ms": "7"}, "2": {"log.retention.ms": "2"}}
    assert broker_log_overrides(stored, 2) == {"retention.ms": "2", "segment.ms": "7"}
    assert broker_log_overrides(stored, 1) == {"retention.ms": "1", "segment.ms": "7"}


def test_broker_resource_names() -> None:
    check_broker_resource("")
    check_broker_resource("3")
    with pytest.raises(InvalidRequest, match="neither a broker id"):
        check_broker_resource("three")


def test_min_isr_default_is_two_capped_at_the_replication_factor() -> None:
    assert [default_min_isr(rf) for rf in (1, 2, 3)] == [1, 2, 2]
    assert effective_min_isr({"min.insync.replicas": "3"}, 1) == 3
    assert effective_min_isr({}, 3) == 2


def test_static_properties_flag_changed_options_and_list_every_kind() -> None:
    props = BrokerConfig.from_properties({"log.retention.ms": "1000", "ssl.key.password": "s3cret",
                                          "group.max.size": "7"}).static_properties()
    assert props["log.retention.ms"] == ("1000", True)
    assert props["log.segment.bytes"] == (str(1024 ** 3), False)
    assert props["ssl.key.password"] == ("s3cret", True)
    assert props["group.max.size"] == ("7", True)
    assert props["num.io.threads"] == ("4", False)
    assert "transaction.max.timeout.ms" in props and "listeners" in props


@pytest.fixture
def timer() -> Iterator[SystemTimer]:
    t = SystemTimer("test-config-controller")
    yield t
    t.shutdown(wait=False)


def test_controller_stores_changes_and_a_restarted_controller_has_them(tmp_path: Path,
                                                                      timer: SystemTimer) -> None:
    c = Controller(tmp_path, timer)
    c.heartbeat(0, "127.0.0.1", 1, "inc")
    c.create_topic("t", 1, 1, {})
    assert c.image.topics["t"].configs == {}  # min.insync.replicas: the default, not stored
    version = c.image.version
    c.alter_configs(RESOURCE_TOPIC, "t", replace_all([("retention.ms", "1000")]),
                    validate_only=True, propagation_timeout_s=0)
    assert c.image.version == version and c.image.topics["t"].configs == {}
    c.alter_configs(RESOURCE_TOPIC, "t", incremental(
        [("retention.ms", AlterOp.SET, "1000"), ("cleanup.policy", AlterOp.SET, "delete,compact")],
        _default), propagation_timeout_s=0)
    c.alter_configs(RESOURCE_BROKER, "", replace_all([("log.retention.ms", "5000")]),
                    propagation_timeout_s=0)
    c.alter_configs(RESOURCE_BROKER, "0", replace_all([("log.segment.bytes", "4096")]),
                    propagation_timeout_s=0)
    with pytest.raises(UnknownTopicOrPartition):
        c.alter_configs(RESOURCE_TOPIC, "nope", replace_all([]), propagation_timeout_s=0)
    with pytest.raises(InvalidConfig, match="retention.ms"):
        c.alter_configs(RESOURCE_TOPIC, "t", replace_all([("retention.ms", "-7")]),
                        propagation_timeout_s=0)
    with pytest.raises(InvalidRequest):
        c.alter_configs(8, "logger", replace_all([]), propagation_timeout_s=0)

    again = Controller(tmp_path, timer)
    assert again.image.topics["t"].configs == {"retention.ms": "1000", "cleanup.policy": "compact,delete"}
    assert again.image.broker_configs == {"": {"log.retention.ms": "5000"},
                                          "0": {"log.segment.bytes": "4096"}}
    again.alter_configs(RESOURCE_BROKER, "0", replace_all([]), propagation_timeout_s=0)
    assert "0" not in again.image.broker_configs  # an empty set is not kept
