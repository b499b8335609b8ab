"""The broker's options are its declarations: every declared name is accepted with its
documented default, booleans take only true/false (as Kafka), secrets are what
DescribeConfigs hides, and the controller process takes its own declared options."""

from __future__ import annotations

import pytest

from broker_sim.common.options import declared
from broker_sim.controller.process_options import ControllerOptions
from broker_sim.server.config import BROKER_OPTIONS, SENSITIVE_PROPERTIES, BrokerConfig, ConfigError


@pytest.mark.parametrize("name", sorted(n for n, s in BROKER_OPTIONS.items()
                                         if s.default_doc is None and s.default_text))
def test_every_declared_option_takes_its_documented_default(name: str) -> None:
    spec = BROKER_OPTIONS[name]
    config = BrokerConfig.from_properties({name: spec.default_text})
    assert config == BrokerConfig(), f"{name}={spec.default_text} is not the default"


@pytest.mark.parametrize("name", sorted(n for n, s in BROKER_OPTIONS.items() if s.kind.name == "bool"))
@pytest.mark.parametrize("spelling", ["yes", "1", "no", "0"])
def test_a_boolean_takes_true_or_false_only(name: str, spelling: str) -> None:
    with pytest.raises(ConfigError, match=rf"{name}='{spelling}' is not allowed: .*true or false"):
        BrokerConfig.from_properties({name: spelling})
    assert BrokerConfig.from_properties({name: " TRUE "}) == BrokerConfig.from_properties({name: "true"})


def test_secrets_are_the_sensitive_configs_and_listed_without_their_value() -> None:
    assert SENSITIVE_PROPERTIES == {"ssl.keystore.password", "ssl.key.password",
                                    "ssl.truststore.password"}
    assert "hunter2" not in repr(BrokerConfig(ssl_key_password="hunter2"))


def test_the_unknown_option_message_lists_every_declared_name() -> None:
    with pytest.raises(ConfigError) as refused:
        BrokerConfig.from_properties({"num.io.thread": "4"})
    listed = str(refused.value).split("known options: ")[1].split(", ")
    assert sorted(listed) == sorted(BROKER_OPTIONS)


def test_static_properties_name_every_declared_option_and_alias() -> None:
    described = BrokerConfig.from_properties({"node.id": "3", "log.dir": "/data"}).static_properties()
    assert set(described) == set(BROKER_OPTIONS)  # node.id and log.dir too, as Kafka lists them
    assert described["node.id"] == described["broker.id"] == ("3", True)
    assert described["log.dir"] == described["log.dirs"] == ("/data", True)


@pytest.mark.parametrize("order", [("log.retention.hours", "log.retention.ms"),
                                   ("log.retention.ms", "log.retention.hours")])
def test_log_retention_ms_wins_over_hours_whatever_the_order(order: tuple[str, str]) -> None:
    given = {"log.retention.hours": "168", "log.retention.ms": "60000"}
    config = BrokerConfig.from_properties({name: given[name] for name in order})
    assert config.log.retention_ms == 60_000
    assert BrokerConfig.from_properties({"log.retention.hours": "2"}).log.retention_ms == 7_200_000


@pytest.mark.parametrize(("overrides", "message"), [
    ({"node.id": "0"}, "node.id='0' is invalid: a positive integer is allowed"),
    ({"cluster.id": " "}, "cluster.id=' ' is invalid: a non-empty id is allowed"),
    ({"node.id": "1"}, "node.id is invalid without controller.quorum.voters"),
    ({"node.id": "2", "controller.quorum.voters": "1@h:1"}, "node.id=2 is invalid: it must be one of"),
])
def test_the_controller_refuses_a_bad_option_naming_it(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ControllerOptions.from_overrides(overrides)
    assert set(overrides) <= set(declared(ControllerOptions))


@pytest.mark.parametrize("name", ["num.io.threads", "group.max.size", "offsets.topic.num.partitions",
                                  "transaction.max.timeout.ms", "transaction.state.log.min.isr"])
def test_an_out_of_range_integer_is_shown_as_one_by_every_part(name: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{name}=0 is not allowed: must be at least 1$"):
        BrokerConfig.from_properties({name: "0"})
    with pytest.raises(ConfigError, match=rf"^{name}='x' is not allowed: must be at least 1$"):
        BrokerConfig.from_properties({name: "x"})
