"""The source's options: parsed from Spark's strings and validated once, in one place.

Every option arrives as a string. :func:`parse_source_options` turns them into a typed
:class:`SourceOptions` or raises :class:`OptionError` naming the option, the value given and
what is allowed, at ``load()`` (batch) or ``start()`` (streaming) time, before any data
moves.

Each option is declared once, as a field of :class:`SourceOptions` (its name as Spark
spells it, its kind, default and meaning: ``broker_sim.common.options``); the list with
every rule is ``docs/options.md``, generated from the declarations, and the README compares
them with Spark's. The decoding options (``valueFormat``, ``keyFormat``, ``mode`` ...) are
:class:`.formats.FormatOptions`', the registry's :class:`~connector.registry.settings.RegistrySettings`',
the ``kafka.*`` client settings :mod:`connector.kafka_options`'.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from broker_sim.common import options as o
from broker_sim.common.options import option
from connector.kafka_options import KafkaOptions, parse_kafka_options
from connector.option_values import OptionError  # also this module's API

from .formats import OPTIONS as FORMAT_OPTIONS
from .formats import Formats, parse_formats

_PARTITION_JSON = 'JSON like {"topic": {"0": 23, "1": -2}}'


def _partition_json(raw: Any) -> dict[str, dict[int, int]]:
    """``{"topic": {"0": 12, "1": -2}}`` -> {topic: {partition: value}}."""
    try:
        data = json.loads(raw)
        return {str(t): {int(p): int(v) for p, v in parts.items()} for t, parts in data.items()}
    except (ValueError, AttributeError, TypeError):
        raise o.Refused(_PARTITION_JSON) from None


def _topics(raw: Any) -> tuple[str, ...]:
    topics = tuple(t.strip() for t in str(raw).split(",") if t.strip())
    if not topics:
        raise ValueError(raw)
    return topics


def _regex(raw: Any) -> str:
    try:
        re.compile(raw)
    except re.error as e:
        raise o.Refused(f"a valid regex ({e})") from None
    return str(raw)


def _assign(raw: Any) -> dict[str, tuple[int, ...]]:
    data = json.loads(raw)
    return {str(t): tuple(int(p) for p in ps) for t, ps in data.items()}


def _starting(raw: Any) -> str | dict[str, dict[int, int]]:
    word = str(raw).strip().lower()
    return word if word in ("earliest", "latest", "committed") else _partition_json(raw)


def _ending(raw: Any) -> str | dict[str, dict[int, int]]:
    word = str(raw).strip().lower()
    if word == "latest":
        return word
    if word == "earliest":
        raise o.Refused("latest or per-partition JSON")
    return _partition_json(raw)


def _name(raw: Any) -> str | None:
    if raw is None:
        return None
    if not re.match(r"^[A-Za-z0-9._-]+$", str(raw)):
        raise ValueError(raw)
    return str(raw)


TOPICS = o.custom("topics", _topics, "a comma-separated list of topic names")
REGEX = o.custom("regex", _regex, "a valid regex (Python's, matching the whole topic name)")
ASSIGN = o.custom("assign", _assign, 'JSON like {"topic": [0, 1]}')
PARTITION_JSON = o.custom("partition JSON", _partition_json, _PARTITION_JSON)
STARTING = o.custom("starting offsets", _starting,
                    "earliest, latest, committed or " + _PARTITION_JSON)
ENDING = o.custom("ending offsets", _ending, "latest or " + _PARTITION_JSON)
NAME = o.custom("name", _name, "ASCII letters, digits, '.', '_' and '-'")
#: An optional count with a floor (Spark's integer options).
COUNT_0, COUNT_1 = o.integer(0, None, optional=True), o.integer(1, None, optional=True)


@dataclass(frozen=True)
class SourceOptions:
    """The options of ``spark.read`` / ``spark.readStream`` ``.format("pyq")``, each
    declared once (name as Spark spells it, kind, default, meaning); ``kafka.*`` client
    settings are :mod:`connector.kafka_options`', the formats' :mod:`.formats`'."""

    bootstrap_servers: str = option(
        "kafka.bootstrap.servers", kind=o.STRING,
        doc="`host:port[,host:port...]` of the cluster (required)")
    subscribe: tuple[str, ...] = option(
        "subscribe", (), TOPICS, doc="the topics to read; exactly one of subscribe, "
        "subscribePattern and assign")
    subscribe_pattern: str | None = option(
        "subscribePattern", None, REGEX, doc="the topics whose whole name matches this regex")
    assign: dict[str, tuple[int, ...]] | None = option(
        "assign", None, ASSIGN, doc="these partitions of these topics")
    starting: str | dict[str, dict[int, int]] = option(
        "startingOffsets", "latest", STARTING, default_doc="latest (streaming), earliest (batch)",
        doc="where a query starts: -2 earliest, -1 latest (refused in a batch query); "
        "committed resumes from groupId's commits")
    starting_by_timestamp: dict[str, dict[int, int]] | None = option(
        "startingOffsetsByTimestamp", None, PARTITION_JSON,
        doc="per-partition start timestamps (ms); wins over startingOffsets")
    starting_timestamp: int | None = option(
        "startingTimestamp", None, COUNT_0,
        doc="one start timestamp (ms) for every partition; wins over both")
    ending: str | dict[str, dict[int, int]] = option(
        "endingOffsets", "latest", ENDING,
        doc="batch only: where the read ends (-1 latest; -2 refused)")
    fail_on_data_loss: bool = option(
        "failOnDataLoss", True, o.BOOL,
        doc="stop the query when offsets were deleted (retention) or truncated")
    max_offsets_per_trigger: int | None = option(
        "maxOffsetsPerTrigger", None, COUNT_1,
        doc="at most this many records per micro-batch, split by lag")
    min_offsets_per_trigger: int | None = option(
        "minOffsetsPerTrigger", None, COUNT_1,
        doc="hold a micro-batch back until this many records are ready (up to maxTriggerDelay)")
    max_trigger_delay_ms: int = option(
        "maxTriggerDelay", 15 * 60_000, o.DURATION_MS, default_doc="15m",
        doc="how long minOffsetsPerTrigger may hold a batch back")
    min_partitions: int | None = option(
        "minPartitions", None, COUNT_1, doc="split ranges into at least this many Spark tasks")
    max_records_per_partition: int | None = option(
        "maxRecordsPerPartition", None, COUNT_1,
        doc="split ranges so no Spark task reads more records than this")
    min_records_per_partition: int = option(
        "minRecordsPerPartition", 10_000, o.integer(0, None),
        doc="pack ranges smaller than this, of partitions led by the same broker, into one "
        "Spark task (0: one task per range; off when minPartitions is set)")
    max_offset_behind: int | None = option(
        "maxOffsetBehind", None, COUNT_1,
        doc="a partition lagging more than this skips ahead (the skipped offsets counted)")
    group_id: str | None = option(
        "groupId", None, NAME, doc="the consumer group the query commits its progress to")
    query_name: str | None = option(
        "queryName", None, NAME, default_doc="groupId",
        doc="the name stored with committed offsets")
    max_retries: int = option(
        "maxRetries", 3, o.integer(0, None), doc="redeliveries of a reported failed record")
    retry_backoff_ms: int = option(
        "retryBackoffMs", 1000, o.integer(0, None),
        doc="the first backoff before a redelivery (doubling)")
    dead_letter_topic: str | None = option(
        "deadLetterTopic", None, NAME,
        doc="where a record goes after maxRetries (else dropped and counted)")
    include_headers: bool = option(
        "includeHeaders", False, o.BOOL, doc="add the `headers` column")
    kafka: KafkaOptions | None = None
    ending_by_timestamp: dict[str, dict[int, int]] | None = option(
        "endingOffsetsByTimestamp", None, PARTITION_JSON,
        doc="batch only: per-partition end timestamps; wins over endingOffsets")
    ending_timestamp: int | None = option(
        "endingTimestamp", None, COUNT_0,
        doc="batch only: one end timestamp for every partition; wins over both")
    #: no offset at or after a starting timestamp: "error" (Spark's default) or "latest"
    starting_by_timestamp_strategy: str = option(
        "startingOffsetsByTimestampStrategy", "error", o.choice(
            ("error", "latest"), allowed="error (fail when no offset has a timestamp at or "
            "after the one given) or latest (start such a partition at its end)"),
        doc="what a partition with no record at or after its start timestamp does")
    #: kafkaConsumer.pollTimeoutMs: an executor read without progress for this long fails
    poll_timeout_ms: int | None = option(
        "kafkaConsumer.pollTimeoutMs", None, COUNT_1, default_doc="kafka.default.api.timeout.ms",
        doc="an executor's read fails after this long without a record")
    fetch_offset_num_retries: int = option(
        "fetchOffset.numRetries", 3, o.integer(0, None),
        doc="the driver's offset lookups: attempts after a failed one")
    fetch_offset_retry_interval_ms: int = option(
        "fetchOffset.retryIntervalMs", 10, o.integer(0, None),
        doc="the driver's offset lookups: the wait between attempts")
    group_id_prefix: str | None = option(
        "groupIdPrefix", None, o.OPTIONAL_STRING,
        doc="accepted as Spark does; changes nothing (Spark's consumers never join a group)")
    kafka_group_id: str | None = option(
        "kafka.group.id", None, o.OPTIONAL_STRING,
        doc="accepted as Spark does; changes nothing (not pyq's groupId)")
    max_retry_backoff_ms: int = option(
        "maxRetryBackoffMs", 60_000, o.integer(0, None),
        doc="the cap of the redelivery backoff's doubling")
    #: failOnDataLoss=false: where an out-of-range partition resumes ("earliest" or "latest")
    out_of_range_reset: str = option(
        "outOfRangeReset", "earliest", o.choice(("earliest", "latest"),
                                                allowed="earliest or latest"),
        doc="with failOnDataLoss=false: where a partition whose next offset left the log resumes")
    path: str | None = option(
        "path", None, o.OPTIONAL_STRING,
        doc="`load(path)`'s argument, accepted as Spark's Kafka source does; pyq reads topics, "
        "not paths")
    #: valueFormat/keyFormat avro, protobuf, json-schema: the decoded columns (a :class:`.formats.Formats`)
    formats: Any = None

    @property
    def read_committed(self) -> bool:
        """``kafka.isolation.level=read_committed``: plan up to the last stable offset."""
        return self.kafka is not None and \
            self.kafka.specific.get("isolation.level", "").strip().lower() == "read_committed"

    @property
    def extra(self) -> dict[str, str]:
        """The ``kafka.*`` options besides bootstrap servers, prefix kept."""
        if self.kafka is None:
            return {}
        return {f"kafka.{k}": v for k, v in {**self.kafka.connection, **self.kafka.specific}.items()}

    def client(self, **extra: object) -> dict[str, object]:
        """Options for a client of this query: bootstrap servers plus the connection
        settings (security, timeouts) every client of the query shares."""
        if self.kafka is None:
            return {**extra, "bootstrap.servers": self.bootstrap_servers}
        return self.kafka.client(**extra)

    @property
    def failures_topic(self) -> str | None:
        """Where failed-record reports for this query's group go (see :mod:`.failures`)."""
        return f"{self.group_id}.pyq-failures" if self.group_id else None


#: Every option name of the source (the formats' and the registry's included).
KNOWN = {*o.declared(SourceOptions), *FORMAT_OPTIONS}
#: ``kafka.*`` names that are options of the source itself, not of pyq's client.
SOURCE_KAFKA_NAMES = {"kafka.group.id"}
#: Options read by the formats (:func:`.formats.parse_formats`) or by kafka_options.
_PARSED_ELSEWHERE = {"kafka.bootstrap.servers", *FORMAT_OPTIONS}


def check_names(options: Mapping[str, str]) -> KafkaOptions:
    """The checks that do not depend on batch or streaming: every option name is known and
    every ``kafka.*`` option is one the client implements (run at ``load()``)."""
    opts = {k: str(v) for k, v in options.items() if k.lower() not in SOURCE_KAFKA_NAMES}
    known = {n.lower() for n in KNOWN}
    unknown = [k for k in opts if k.lower() not in known and not k.lower().startswith("kafka.")]
    if unknown:
        raise OptionError(unknown[0], opts[unknown[0]], "a known pyq source option: " + ", ".join(sorted(KNOWN)))
    return parse_kafka_options(opts, "source")


def _parse_declared(opts: Mapping[str, str]) -> dict[str, Any]:
    """Each declared option given (Spark may lower-case names), parsed by its kind."""
    lower = {k.lower(): v for k, v in opts.items()}
    out: dict[str, Any] = {}
    for name, spec in o.declared(SourceOptions).items():
        raw = lower.get(name.lower())
        if raw is None or name in _PARSED_ELSEWHERE:
            continue
        try:
            out[spec.attr] = o.parse_value(spec, raw)
        except ValueError as e:
            raise OptionError(name, raw, str(e)) from None
    return out


def parse_source_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    """The declared options parsed, then the rules between them (exactly one of subscribe,
    subscribePattern and assign; what a batch query may not ask; groupId's needs)."""
    opts = {k: str(v) for k, v in options.items()}
    kafka = check_names(opts)
    chosen = [n for n in ("subscribe", "subscribePattern", "assign")
              if any(k.lower() == n.lower() for k in opts)]
    if len(chosen) != 1:
        raise OptionError("subscribe/subscribePattern/assign", chosen or None,
                          "exactly one of subscribe, subscribePattern and assign")
    out = _parse_declared(opts)
    out.update(bootstrap_servers=kafka.bootstrap_servers, kafka=kafka)
    given = {k.lower(): v for k, v in opts.items()}

    starting = given.get("startingoffsets")
    out.setdefault("starting", "latest" if streaming else "earliest")
    if out["starting"] == "latest" and not streaming:
        raise OptionError("startingOffsets", starting, "earliest, committed or JSON for a batch query")
    if isinstance(out["starting"], dict):
        latest = [f"{t}-{p}" for t, ps in out["starting"].items() for p, v in ps.items() if v == -1]
        if latest and not streaming:
            raise OptionError("startingOffsets", starting, f"no -1 (latest, for {latest[0]}) in a batch "
                              "query, as in Spark: a batch read starting at the end would read nothing")
    if out["starting"] == "committed" and not out.get("group_id"):
        raise OptionError("startingOffsets", starting, "committed only together with groupId")
    for name in ("endingOffsets", "endingOffsetsByTimestamp", "endingTimestamp"):
        if streaming and (value := given.get(name.lower())) is not None:
            raise OptionError(name, value, "only for batch queries (spark.read): a stream has no end")
    if isinstance(out.get("ending"), dict):
        earliest = [f"{t}-{p}" for t, ps in out["ending"].items() for p, v in ps.items() if v == -2]
        if earliest:
            raise OptionError("endingOffsets", given.get("endingoffsets"), f"no -2 (earliest, for "
                              f"{earliest[0]}), as in Spark: offsets, or -1 for latest")
    if (out.get("min_offsets_per_trigger") and out.get("max_offsets_per_trigger")
            and out["min_offsets_per_trigger"] > out["max_offsets_per_trigger"]):
        raise OptionError("minOffsetsPerTrigger", out["min_offsets_per_trigger"],
                          f"at most maxOffsetsPerTrigger ({out['max_offsets_per_trigger']})")
    if out.get("max_retry_backoff_ms", 60_000) < out.get("retry_backoff_ms", 1000):
        raise OptionError("maxRetryBackoffMs", out.get("max_retry_backoff_ms", 60_000),
                          f"at least retryBackoffMs ({out.get('retry_backoff_ms', 1000)}): the cap "
                          "of the backoff that starts there")
    if "out_of_range_reset" in out and out.get("fail_on_data_loss", True):
        raise OptionError("outOfRangeReset", given.get("outofrangereset"), "only with "
                          "failOnDataLoss=false (with failOnDataLoss=true an out-of-range "
                          "partition stops the query)")
    named: tuple[str, ...] | None = out.get("subscribe") or (
        tuple(out["assign"]) if out.get("assign") else None)
    out["formats"] = parse_formats(opts, named, out.get("group_id"), out.get("dead_letter_topic"),
                                   kafka.client())
    return SourceOptions(**out)


def formats_of(options: Mapping[str, str]) -> Formats | None:
    """The decoded columns of a query (for its schema at ``load()``), from its
    subscribe/assign topics and format options; None when key and value are binary."""
    opts = {k: str(v) for k, v in options.items()}
    lower = {k.lower(): v for k, v in opts.items()}
    topics: tuple[str, ...] | None = None
    if "subscribe" in lower:
        topics = tuple(t.strip() for t in lower["subscribe"].split(",") if t.strip())
    elif "assign" in lower:
        try:
            topics = tuple(json.loads(lower["assign"]))
        except (ValueError, TypeError):
            topics = None
    return parse_formats(opts, topics, lower.get("groupid"), lower.get("deadlettertopic"), {})
