"""Client configuration: Kafka names and defaults, parsing, and errors that say what is wrong."""

from __future__ import annotations

import re

import pytest

from connector.client.config import ClientConfig, ConsumerConfig, FetcherConfig, ProducerConfig
from connector.client.errors import ConfigError

SERVERS = {"bootstrap.servers": "localhost:9092"}


def test_kafka_defaults():
    c = ProducerConfig(bootstrap_servers="h")
    assert (c.acks, c.batch_size, c.linger_ms, c.buffer_memory, c.max_block_ms) == (
        -1, 16384, 5, 32 * 1024 * 1024, 60_000)
    assert (c.max_request_size, c.delivery_timeout_ms, c.retries, c.compression_type) == (
        1024 * 1024, 120_000, 2**31 - 1, "none")
    assert (c.request_timeout_ms, c.retry_backoff_ms, c.metadata_max_age_ms,
            c.max_in_flight_requests_per_connection) == (30_000, 100, 300_000, 5)
    assert c.enable_idempotence is True
    f = FetcherConfig(bootstrap_servers="h")
    assert (f.fetch_max_wait_ms, f.fetch_min_bytes, f.fetch_max_bytes,
            f.max_partition_fetch_bytes) == (500, 1, 50 * 1024 * 1024, 1024 * 1024)


def test_spark_style_string_options_and_python_keywords_mean_the_same():
    from_strings = ProducerConfig.from_options({
        "bootstrap.servers": "a:1, b:2,c", "acks": "all", "linger.ms": "20",
        "enable.idempotence": "false", "compression.type": "LZ4", "retries": "3"})
    from_keywords = ProducerConfig(bootstrap_servers=[("a", 1), ("b", 2), ("c", 9092)], acks=-1,
                                   linger_ms=20, enable_idempotence=False,
                                   compression_type="lz4", retries=3)
    assert from_strings == from_keywords
    assert from_strings.bootstrap_servers == (("a", 1), ("b", 2), ("c", 9092))
    assert ProducerConfig.from_options(SERVERS, linger_ms=7).linger_ms == 7
    assert ProducerConfig.coerce(SERVERS, **{"batch.size": "100"}).batch_size == 100


@pytest.mark.parametrize("acks, expected", [("all", -1), ("-1", -1), (-1, -1), ("0", 0), (1, 1)])
def test_acks_forms(acks, expected):
    assert ProducerConfig.from_options(SERVERS, acks=acks, enable_idempotence=False).acks == expected


@pytest.mark.parametrize("name, value, allowed", [
    ("acks", "2", "one of 0, 1, all"),
    ("batch.size", "-1", "an integer in [0, 2147483647]"),
    ("linger.ms", "soon", "an integer in"),
    ("compression.type", "brotli", "one of none, gzip, snappy, lz4, zstd"),
    ("max.in.flight.requests.per.connection", "0", "an integer in [1,"),
    ("enable.idempotence", "maybe", "true or false"),
    ("request.timeout.ms", 1.5, "an integer in"),
    ("bootstrap.servers", "host:notaport", "host:port"),
])
def test_an_invalid_value_names_the_option_the_value_and_what_is_allowed(name, value, allowed):
    with pytest.raises(ConfigError) as e:
        ProducerConfig.from_options({**SERVERS, name: value})
    message = str(e.value)
    assert name in message and repr(value) in message and allowed in message


def test_fetcher_values_are_checked_too():
    with pytest.raises(ConfigError, match=r"Invalid value '0' for configuration max\.partition"
                                          r"\.fetch\.bytes: must be an integer in \[1, "):
        FetcherConfig.from_options({**SERVERS, "max.partition.fetch.bytes": "0"})


def test_bootstrap_servers_is_required():
    with pytest.raises(ConfigError, match="bootstrap.servers"):
        ClientConfig()


def test_unknown_options_are_refused_with_a_suggestion_unless_ignored():
    with pytest.raises(ConfigError, match=r"Unknown configuration 'linger\.mss'.*linger\.ms"):
        ProducerConfig.from_options({**SERVERS, "linger.mss": "5"})
    cfg = ProducerConfig.from_options({**SERVERS, "fetch.min.bytes": "5"}, ignore_unknown=True)
    assert cfg.linger_ms == 5


def test_delivery_timeout_must_cover_linger_plus_request_timeout():
    with pytest.raises(ConfigError) as e:
        ProducerConfig(bootstrap_servers="h", delivery_timeout_ms=30_000, linger_ms=10)
    assert str(e.value) == (
        "Invalid value 30000 for configuration delivery.timeout.ms: must be at least "
        "linger.ms + request.timeout.ms = 10 + 30000 = 30010")


@pytest.mark.parametrize("conflict, text", [
    ({"acks": "1"}, "acks=1"),
    ({"retries": "0"}, "retries=0"),
    ({"max.in.flight.requests.per.connection": "6"}, "max.in.flight.requests.per.connection=6"),
])
def test_idempotence_conflicts(conflict, text):
    with pytest.raises(ConfigError, match="enable.idempotence") as e:
        ProducerConfig.from_options({**SERVERS, "enable.idempotence": "true", **conflict})
    assert text in str(e.value)
    # Left unset, idempotence is simply off when it would conflict (as in Kafka).
    assert ProducerConfig.from_options({**SERVERS, **conflict}).enable_idempotence is False


def test_fetcher_request_timeout_must_exceed_the_long_poll():
    with pytest.raises(ConfigError, match="request.timeout.ms.*fetch.max.wait.ms"):
        FetcherConfig(bootstrap_servers="h", request_timeout_ms=500, fetch_max_wait_ms=500)


def test_configs_are_frozen_and_report_their_options() -> None:
    cfg = ProducerConfig.from_options(SERVERS)
    with pytest.raises(AttributeError):
        cfg.acks = 0  # type: ignore[misc]  # frozen: the point of the test
    assert cfg.to_options()["delivery.timeout.ms"] == 120_000


GROUP = {"bootstrap.servers": "h:1", "group.id": "g"}


@pytest.mark.parametrize(("options", "says"), [
    ({"group.protocol": "cooperative"},
     "Invalid value 'cooperative' for configuration group.protocol: must be one of classic, consumer"),
    ({"group.protocol": "consumer", "group.remote.assignor": "sticky"},
     "Invalid value 'sticky' for configuration group.remote.assignor: must be one of uniform, range"),
    ({"group.protocol": "consumer", "session.timeout.ms": "45000"},
     "group.protocol=consumer: session.timeout.ms=45000 may not be set"),
    ({"group.protocol": "consumer", "heartbeat.interval.ms": 300, "partition.assignment.strategy": "range"},
     "group.protocol=consumer: partition.assignment.strategy=range, heartbeat.interval.ms=300 may not be set"),
    ({"group.remote.assignor": "uniform"},
     "Invalid value uniform for configuration group.remote.assignor: it applies only with "
     "group.protocol=consumer"),
])
def test_each_group_protocol_refuses_the_others_options(options, says):
    with pytest.raises(ConfigError, match=re.escape(says)):
        ConsumerConfig.from_options({**GROUP, **options})


def test_the_consumer_protocol_leaves_the_session_to_the_coordinator():
    cfg = ConsumerConfig.from_options({**GROUP, "group.protocol": "CONSUMER",
                                       "group.remote.assignor": "Range"})
    assert (cfg.group_protocol, cfg.group_remote_assignor, cfg.uses_consumer_protocol) == (
        "consumer", "range", True)
    assert (cfg.session_timeout_ms, cfg.heartbeat_interval_ms, cfg.partition_assignment_strategy) == (
        None, None, None)
    classic = ConsumerConfig.from_options(GROUP)
    assert (classic.group_protocol, classic.session_timeout, classic.heartbeat_interval,
            classic.assignment_strategy) == ("classic", 45_000, 3000, "range")
    assert ConsumerConfig.coerce(cfg, group_id="other").group_protocol == "consumer"


def test_each_option_is_declared_once_with_a_doc_and_a_default_its_own_rule_accepts():
    """The declarations are what docs/options.md, ``kafka.*`` and ``pyq -X`` read: every
    option says what it does, and its default written as a properties file would write it
    parses back to the same value."""
    from broker_sim.common.options import declared, format_value, parse_value

    specs = {**declared(ProducerConfig), **declared(ConsumerConfig)}
    assert len(specs) > 60
    for name, spec in specs.items():
        assert spec.doc.endswith("."), name
        if name in ("bootstrap.servers",):  # required: no default to parse
            continue
        text = None if spec.default is None else format_value(spec.default)
        assert parse_value(spec, text) == spec.default, name


@pytest.mark.parametrize("name", ["check.crcs", "enable.auto.commit", "enable.idempotence"])
@pytest.mark.parametrize("value", ["yes", "1", "on"])
def test_a_boolean_is_true_or_false_only(name, value):
    cls, base = ((ProducerConfig, SERVERS) if name == "enable.idempotence"
                 else (ConsumerConfig, {**SERVERS, "group.id": "g"}))
    with pytest.raises(ConfigError, match=f"Invalid value '{value}' for configuration {name}: "
                                          "must be true or false"):
        cls.from_options({**base, name: value})
    assert ConsumerConfig.from_options({**SERVERS, "group.id": "g", "check.crcs": " FALSE "}).check_crcs is False
