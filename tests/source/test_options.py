"""Every option of Spark's Kafka integration guide, as ``format("pyq")`` parses it: accepted
with Spark's meaning, or refused with a message that says why pyq differs (the README's
option tables list the same names; ``test_readme_tables_name_every_option`` keeps them in step).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from connector.kafka_options import DEFAULT_PARTITIONER, parse_kafka_options
from connector.sink.options import parse_sink_options
from connector.source.options import KNOWN, OptionError, SourceOptions, parse_source_options

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"}


def batch(**options: str) -> SourceOptions:
    return parse_source_options({**BASE, **options}, streaming=False)


def stream(**options: str) -> SourceOptions:
    return parse_source_options({**BASE, **options}, streaming=True)


def refused(streaming: bool, says: str, **options: str) -> OptionError:
    with pytest.raises(OptionError, match=says) as info:
        parse_source_options({**BASE, **options}, streaming=streaming)
    return info.value


# ---- where to read: subscribe, subscribePattern, assign -------------------------------------
def test_exactly_one_of_subscribe_pattern_and_assign() -> None:
    assert stream(subscribe="a, b,").subscribe == ("a", "b")
    opts = parse_source_options({"kafka.bootstrap.servers": "h:1", "subscribePattern": "topic.*"}, True)
    assert opts.subscribe_pattern == "topic.*" and opts.subscribe == ()
    opts = parse_source_options({"kafka.bootstrap.servers": "h:1",
                                 "assign": '{"topicA": [0, 1], "topicB": [2, 4]}'}, False)
    assert opts.assign == {"topicA": (0, 1), "topicB": (2, 4)}
    refused(True, "exactly one of subscribe, subscribePattern and assign", assign='{"t": [0]}')
    with pytest.raises(OptionError, match="exactly one"):
        parse_source_options({"kafka.bootstrap.servers": "h:1"}, True)
    refused(True, "a comma-separated list of topic names", subscribe=" , ")
    with pytest.raises(OptionError, match=r'JSON like \{"topic": \[0, 1\]\}'):
        parse_source_options({"kafka.bootstrap.servers": "h:1", "assign": "t:0"}, True)
    with pytest.raises(OptionError, match="a valid regex"):
        parse_source_options({"kafka.bootstrap.servers": "h:1", "subscribePattern": "("}, True)
    with pytest.raises(OptionError, match=r"kafka.bootstrap.servers.*host:port"):
        parse_source_options({"subscribe": "t"}, True)


# ---- where to start ---------------------------------------------------------------------------
def test_starting_offsets_defaults_and_forms() -> None:
    assert stream().starting == "latest" and batch().starting == "earliest"
    assert stream(startingOffsets="EARLIEST").starting == "earliest"
    spec = '{"topicA": {"0": 23, "1": -1}, "topicB": {"0": -2}}'
    assert stream(startingOffsets=spec).starting == {"topicA": {0: 23, 1: -1}, "topicB": {0: -2}}
    refused(False, "earliest, committed or JSON for a batch query", startingOffsets="latest")
    refused(True, "committed only together with groupId", startingOffsets="committed")
    assert stream(startingOffsets="committed", groupId="g").starting == "committed"


def test_batch_starting_offsets_json_may_not_say_latest() -> None:
    """Spark refuses -1 in a batch query's startingOffsets; so does pyq, naming the partition."""
    error = refused(False, r"no -1 \(latest, for topicA-1\) in a batch query",
                    startingOffsets='{"topicA": {"0": 23, "1": -1}}')
    assert error.option == "startingOffsets"
    assert batch(startingOffsets='{"topicA": {"0": 23, "1": -2}}').starting == {"topicA": {0: 23, 1: -2}}


def test_starting_timestamps_and_the_no_match_strategy() -> None:
    opts = stream(startingOffsetsByTimestamp='{"topicA": {"0": 1000, "1": 1000}}')
    assert opts.starting_by_timestamp == {"topicA": {0: 1000, 1: 1000}}
    assert opts.starting_by_timestamp_strategy == "error"  # Spark's default
    assert batch(startingTimestamp="1000").starting_timestamp == 1000
    assert stream(startingTimestamp="1000", startingOffsetsByTimestampStrategy="Latest"
                  ).starting_by_timestamp_strategy == "latest"
    assert batch(startingOffsetsByTimestampStrategy="error").starting_by_timestamp_strategy == "error"
    refused(True, "error .* or latest", startingOffsetsByTimestampStrategy="earliest")
    refused(True, "an integer of at least 0", startingTimestamp="yesterday")
    refused(False, r'JSON like \{"topic"', startingOffsetsByTimestamp="[1000]")


# ---- where a batch read ends ------------------------------------------------------------------
def test_ending_offsets_and_timestamps_are_for_batch_queries() -> None:
    assert batch().ending == "latest"
    assert batch(endingOffsets='{"topicA": {"0": 50, "1": -1}}').ending == {"topicA": {0: 50, 1: -1}}
    assert batch(endingOffsetsByTimestamp='{"topicA": {"0": 2000}}').ending_by_timestamp == {"topicA": {0: 2000}}
    assert batch(endingTimestamp="2000").ending_timestamp == 2000
    for name, value in [("endingOffsets", "latest"), ("endingOffsetsByTimestamp", '{"t": {"0": 1}}'),
                        ("endingTimestamp", "1")]:
        assert refused(True, "only for batch queries .*a stream has no end", **{name: value}).option == name
    refused(False, "latest or per-partition JSON", endingOffsets="earliest")
    refused(False, r"no -2 \(earliest, for topicA-0\)", endingOffsets='{"topicA": {"0": -2}}')
    refused(False, "an integer of at least 0", endingTimestamp="-5")


# ---- reading ----------------------------------------------------------------------------------
def test_reading_options() -> None:
    opts = batch(failOnDataLoss="false", minPartitions="8", maxRecordsPerPartition="1000",
                 includeHeaders="true")
    assert (opts.fail_on_data_loss, opts.min_partitions, opts.max_records_per_partition,
            opts.include_headers) == (False, 8, 1000, True)
    refused(True, "true or false", failOnDataLoss="maybe")
    refused(True, "an integer of at least 1", minPartitions="0")
    refused(True, "an integer of at least 1", maxRecordsPerPartition="0")
    refused(True, "true or false", includeHeaders="yes")


def test_trigger_limits() -> None:
    opts = stream(maxOffsetsPerTrigger="1000", minOffsetsPerTrigger="100", maxTriggerDelay="30s")
    assert (opts.max_offsets_per_trigger, opts.min_offsets_per_trigger,
            opts.max_trigger_delay_ms) == (1000, 100, 30_000)
    assert stream().max_trigger_delay_ms == 15 * 60_000
    refused(True, r"at most maxOffsetsPerTrigger \(10\)", maxOffsetsPerTrigger="10", minOffsetsPerTrigger="20")
    refused(True, "a duration such as", maxTriggerDelay="soon")


def test_poll_timeout_and_offset_fetch_retries() -> None:
    opts = stream(**{"kafkaConsumer.pollTimeoutMs": "5000", "fetchOffset.numRetries": "5",
                     "fetchOffset.retryIntervalMs": "250"})
    assert (opts.poll_timeout_ms, opts.fetch_offset_num_retries,
            opts.fetch_offset_retry_interval_ms) == (5000, 5, 250)
    plain = stream()
    assert (plain.poll_timeout_ms, plain.fetch_offset_num_retries,
            plain.fetch_offset_retry_interval_ms) == (None, 3, 10)  # Spark's defaults for the two
    refused(True, "an integer of at least 1", **{"kafkaConsumer.pollTimeoutMs": "0"})
    refused(True, "an integer of at least 0", **{"fetchOffset.numRetries": "-1"})
    refused(True, "an integer of at least 0", **{"fetchOffset.retryIntervalMs": "ten"})
    # Spark's options are case-insensitive; so are pyq's
    assert stream(**{"kafkaconsumer.polltimeoutms": "7"}).poll_timeout_ms == 7


def test_group_id_prefix_and_kafka_group_id_are_accepted_and_commit_nothing() -> None:
    opts = stream(groupIdPrefix="etl", **{"kafka.group.id": "authorized-group"})
    assert (opts.group_id_prefix, opts.kafka_group_id, opts.group_id) == ("etl", "authorized-group", None)
    assert "group.id" not in opts.client() and opts.failures_topic is None  # pyq's groupId is separate
    both = stream(groupId="progress", **{"kafka.group.id": "authorized-group"})
    assert (both.group_id, both.kafka_group_id) == ("progress", "authorized-group")


# ---- pyq's own options ------------------------------------------------------------------------
def test_pyq_options() -> None:
    opts = stream(groupId="clicks-etl", queryName="etl", maxRetries="5", retryBackoffMs="100",
                  maxRetryBackoffMs="5000", deadLetterTopic="dlq", maxOffsetBehind="1000")
    assert (opts.group_id, opts.query_name, opts.max_retries, opts.retry_backoff_ms,
            opts.max_retry_backoff_ms, opts.dead_letter_topic, opts.max_offset_behind) == \
        ("clicks-etl", "etl", 5, 100, 5000, "dlq", 1000)
    assert stream().max_retry_backoff_ms == 60_000
    refused(True, r"at least retryBackoffMs \(1000\)", maxRetryBackoffMs="500")
    refused(True, "ASCII letters", groupId="a b")


def test_out_of_range_reset_needs_fail_on_data_loss_false() -> None:
    assert stream().out_of_range_reset == "earliest"
    assert stream(failOnDataLoss="false", outOfRangeReset="LATEST").out_of_range_reset == "latest"
    refused(True, "only with failOnDataLoss=false", outOfRangeReset="latest")
    refused(True, "earliest or latest", failOnDataLoss="false", outOfRangeReset="committed")


def test_unknown_options_are_refused_naming_the_known_ones() -> None:
    error = refused(True, "a known pyq source option: .*startingOffsetsByTimestampStrategy", startOffset="0")
    assert error.option == "startOffset"


# ---- kafka.* settings Spark refuses ----------------------------------------------------------
@pytest.mark.parametrize(("name", "says"), [
    ("kafka.auto.offset.reset", "startingOffsets says where a new query starts"),
    ("kafka.enable.auto.commit", "groupId option commits"),
    ("kafka.interceptor.classes", "interceptors"),
    ("kafka.key.deserializer", "keys are read as bytes"),
    ("kafka.value.deserializer", "values are read as bytes"),
])
def test_kafka_settings_spark_refuses_are_refused_with_its_reason(name: str, says: str) -> None:
    error = refused(True, says, **{name: "x"})
    assert error.option == name and "as in Spark" in str(error)


# ---- the sink ---------------------------------------------------------------------------------
def test_sink_takes_spark_options() -> None:
    sink = parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "topic1", "includeHeaders": "true"})
    assert sink.topic == "topic1"
    assert parse_sink_options({"kafka.bootstrap.servers": "h:1", "includeheaders": "false"}).topic is None
    with pytest.raises(OptionError, match="true or false"):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", "includeHeaders": "1"})
    for name in ("kafka.key.serializer", "kafka.value.serializer"):
        with pytest.raises(OptionError, match="as in Spark"):
            parse_sink_options({"kafka.bootstrap.servers": "h:1", name: "x"})


def test_sink_partitioner_class_only_kafkas_default() -> None:
    ok = parse_sink_options({"kafka.bootstrap.servers": "h:1", "kafka.partitioner.class": DEFAULT_PARTITIONER})
    assert ok.kafka is not None and "partitioner.class" not in ok.kafka.specific
    with pytest.raises(OptionError, match="pyq cannot run a Java partitioner.*add a partition column"):
        parse_sink_options({"kafka.bootstrap.servers": "h:1",
                            "kafka.partitioner.class": "org.apache.kafka.clients.producer.RoundRobinPartitioner"})
    with pytest.raises(OptionError, match="a client option pyq implements for the source"):
        parse_kafka_options({"kafka.bootstrap.servers": "h:1", "kafka.partitioner.class": DEFAULT_PARTITIONER},
                            "source")


# ---- the README tables ------------------------------------------------------------------------
SPARK_SOURCE = ["assign", "subscribe", "subscribePattern", "kafka.bootstrap.servers", "startingTimestamp",
                "startingOffsetsByTimestamp", "startingOffsets", "endingTimestamp",
                "endingOffsetsByTimestamp", "endingOffsets", "failOnDataLoss",
                "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
                "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay", "minPartitions",
                "maxRecordsPerPartition", "groupIdPrefix", "kafka.group.id", "includeHeaders",
                "startingOffsetsByTimestampStrategy"]


def test_readme_tables_name_every_option() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("### Spark's Kafka options"):]
    section = section[:section.index("\n## ")]
    named = {name for cell in re.findall(r"^\| ([^|]+)\|", section, re.M)
             for name in re.findall(r"`([^`=]+)[`=]", cell)}
    assert set(SPARK_SOURCE) <= named, set(SPARK_SOURCE) - named
    own = {"groupId", "queryName", "maxRetries", "retryBackoffMs", "maxRetryBackoffMs",
           "deadLetterTopic", "maxOffsetBehind", "outOfRangeReset", "minRecordsPerPartition"}
    assert own <= named and own <= KNOWN, own - named
    for name in ("topic", "kafka.partitioner.class", "exactlyOnce", "queryName"):
        assert name in named


def test_registry_options_are_options_of_the_source_and_the_sink() -> None:
    """``schemaRegistry.*`` is accepted by name by both sides; without a schema format
    it is refused for that reason, not as an unknown option."""
    from connector.source.options import check_names

    check_names({**BASE, "schemaRegistry.url": "http://127.0.0.1:1", "valueFormat": "avro"})
    refused(True, "only with valueFormat or keyFormat", **{"schemaRegistry.url": "http://h:1"})
    with pytest.raises(OptionError, match="only with valueFormat or keyFormat"):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "t",
                            "schemaRegistry.request.timeout.ms": "5"})
