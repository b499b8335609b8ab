"""The source's options: parsed from Spark's strings and validated once, in one place.

Every option arrives as a string. :func:`parse_source_options` turns them into a typed
:class:`SourceOptions` or raises :class:`OptionError` naming the option, the value given and
what is allowed, at ``load()`` (batch) or ``start()`` (streaming) time, before any data
moves.

Spark's Kafka source options (Spark's meaning unless said otherwise; the README has the
full comparison):

| option | meaning | default |
|---|---|---|
| kafka.bootstrap.servers | ``host:port[,host:port...]`` | required |
| subscribe / subscribePattern / assign | topics: a list, a regex, or ``{"t": [0, 1]}``; exactly one | required |
| startingOffsets | ``earliest``, ``latest`` (streaming only), ``committed`` (pyq: needs groupId) or ``{"t": {"0": 42}}`` (-2 earliest, -1 latest; -1 refused in batch) | streaming ``latest``, batch ``earliest`` |
| startingOffsetsByTimestamp | ``{"t": {"0": 1700000000000}}``, wins over startingOffsets | |
| startingTimestamp | one timestamp (ms) for every partition, wins over both | |
| startingOffsetsByTimestampStrategy | no offset at or after the timestamp: ``error`` fails the query, ``latest`` starts at the end | ``error`` |
| endingOffsets | batch only: ``latest`` or per-partition JSON (-1 latest; -2 refused) | ``latest`` |
| endingOffsetsByTimestamp | batch only: ``{"t": {"0": ts}}``, wins over endingOffsets; no match: latest | |
| endingTimestamp | batch only: one timestamp for every partition, wins over both | |
| failOnDataLoss | stop when offsets were deleted (retention) or truncated | ``true`` |
| maxOffsetsPerTrigger / minOffsetsPerTrigger | records per micro-batch, at most / at least | none |
| maxTriggerDelay | how long minOffsetsPerTrigger may hold a batch back (``15m``, ``30s``, ``500ms``) | ``15m`` |
| minPartitions / maxRecordsPerPartition | split ranges into more Spark tasks | none |
| kafkaConsumer.pollTimeoutMs | an executor's read fails after this long without a record | ``kafka.default.api.timeout.ms`` |
| fetchOffset.numRetries / fetchOffset.retryIntervalMs | the driver's offset lookups: attempts after a failed one, and the wait between them | ``3`` / ``10`` |
| groupIdPrefix / kafka.group.id | accepted; Spark names its consumers' group with them, but those consumers (and pyq's readers) read assigned partitions and never join or commit to a group, so they change nothing: ``groupId`` is pyq's committed group | |
| includeHeaders | add the ``headers`` column | ``false`` |
| kafka.* | client settings pyq's client implements (security, timeouts, fetch sizes: the table in :mod:`connector.kafka_options`) for the driver, every executor, failure reports and dead letters | client defaults |

pyq's own options (and ``valueFormat``/``keyFormat`` with their registry options:
:mod:`connector.source.formats`):

| option | meaning | default |
|---|---|---|
| maxOffsetBehind | skip ahead when a partition lags more than this | none |
| minRecordsPerPartition | pack ranges smaller than this, of partitions led by the same broker, into one Spark task until it holds this many records (``0``: one task per range; off when minPartitions is set) | ``10000`` |
| groupId | consumer group the query commits its progress to | none |
| queryName | the name stored with committed offsets | groupId |
| maxRetries / retryBackoffMs / maxRetryBackoffMs | failed-record redeliveries, their first backoff and the cap of its doubling | ``3`` / ``1000`` / ``60000`` |
| deadLetterTopic | where records go after maxRetries | none (dropped, counted) |
| outOfRangeReset | with ``failOnDataLoss=false``: where a partition whose next offset left the log resumes, ``earliest`` (as Spark) or ``latest`` | ``earliest`` |
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connector.kafka_options import KafkaOptions, parse_kafka_options
from connector.option_values import (  # OptionError: also this module's API
    OptionError,
    parse_bool,
    parse_duration_ms,
    parse_positive_int,
)

from .formats import OPTIONS as FORMAT_OPTIONS
from .formats import Formats, parse_formats


def _partition_json(option: str, raw: str) -> dict[str, dict[int, int]]:
    """``{"topic": {"0": 12, "1": -2}}`` -> {topic: {partition: value}}."""
    try:
        data = json.loads(raw)
        return {str(t): {int(p): int(v) for p, v in parts.items()} for t, parts in data.items()}
    except (ValueError, AttributeError, TypeError):
        raise OptionError(option, raw, 'JSON like {"topic": {"0": 23, "1": -2}}') from None


@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    assign: dict[str, tuple[int, ...]] | None = None
    starting: str | dict[str, dict[int, int]] = "latest"
    starting_by_timestamp: dict[str, dict[int, int]] | None = None
    starting_timestamp: int | None = None
    ending: str | dict[str, dict[int, int]] = "latest"
    fail_on_data_loss: bool = True
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    min_records_per_partition: int = 10_000
    max_offset_behind: int | None = None
    group_id: str | None = None
    query_name: str | None = None
    max_retries: int = 3
    retry_backoff_ms: int = 1000
    dead_letter_topic: str | None = None
    include_headers: bool = False
    kafka: KafkaOptions | None = None
    ending_by_timestamp: dict[str, dict[int, int]] | None = None
    ending_timestamp: int | None = None
    #: no offset at or after a starting timestamp: "error" (Spark's default) or "latest"
    starting_by_timestamp_strategy: str = "error"
    #: kafkaConsumer.pollTimeoutMs: an executor read without progress for this long fails
    poll_timeout_ms: int | None = None
    fetch_offset_num_retries: int = 3
    fetch_offset_retry_interval_ms: int = 10
    group_id_prefix: str | None = None
    kafka_group_id: str | None = None
    max_retry_backoff_ms: int = 60_000
    #: failOnDataLoss=false: where an out-of-range partition resumes ("earliest" or "latest")
    out_of_range_reset: str = "earliest"
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


KNOWN = {
    "kafka.bootstrap.servers", "subscribe", "subscribePattern", "assign", "startingOffsets",
    "startingOffsetsByTimestamp", "startingTimestamp", "endingOffsets", "failOnDataLoss",
    "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay", "minPartitions",
    "maxRecordsPerPartition", "minRecordsPerPartition", "maxOffsetBehind", "groupId", "queryName", "maxRetries",
    "retryBackoffMs", "deadLetterTopic", "includeHeaders", "path",
    "endingOffsetsByTimestamp", "endingTimestamp", "startingOffsetsByTimestampStrategy",
    "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
    "groupIdPrefix", "maxRetryBackoffMs", "outOfRangeReset", *FORMAT_OPTIONS,
}
#: ``kafka.*`` names that are options of the source itself, not of pyq's client.
SOURCE_KAFKA_NAMES = {"kafka.group.id"}


def check_names(options: Mapping[str, str]) -> KafkaOptions:
    """The checks that do not depend on batch or streaming: every option name is known and
    every ``kafka.*`` option is one the client implements (run at ``load()``)."""
    opts = {k: str(v) for k, v in options.items() if k.lower() not in SOURCE_KAFKA_NAMES}
    known = {n.lower() for n in KNOWN}
    unknown = [k for k in opts if k.lower() not in known and not k.lower().startswith("kafka.")]
    if unknown:
        raise OptionError(unknown[0], opts[unknown[0]], "a known pyq source option: " + ", ".join(sorted(KNOWN)))
    return parse_kafka_options(opts, "source")


def parse_source_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    opts = {k: str(v) for k, v in options.items()}
    lower = {k.lower(): k for k in opts}

    def get(name: str) -> str | None:
        key = lower.get(name.lower())
        return opts[key] if key is not None else None

    kafka = check_names(opts)
    out: dict = {"bootstrap_servers": kafka.bootstrap_servers, "kafka": kafka}

    chosen = [n for n in ("subscribe", "subscribePattern", "assign") if get(n) is not None]
    if len(chosen) != 1:
        raise OptionError("subscribe/subscribePattern/assign", chosen or None,
                          "exactly one of subscribe, subscribePattern and assign")
    if (subscribe := get("subscribe")) is not None:
        topics = tuple(t.strip() for t in subscribe.split(",") if t.strip())
        if not topics:
            raise OptionError("subscribe", subscribe, "a comma-separated list of topic names")
        out["subscribe"] = topics
    elif (pattern := get("subscribePattern")) is not None:
        try:
            re.compile(pattern)
        except re.error as e:
            raise OptionError("subscribePattern", pattern, f"a valid regex ({e})") from None
        out["subscribe_pattern"] = pattern
    else:
        raw = get("assign") or ""  # exactly one of the three is set: this one
        try:
            data = json.loads(raw)
            out["assign"] = {str(t): tuple(int(p) for p in ps) for t, ps in data.items()}
        except (ValueError, AttributeError, TypeError):
            raise OptionError("assign", raw, 'JSON like {"topic": [0, 1]}') from None

    starting = get("startingOffsets")
    if starting is None:
        out["starting"] = "latest" if streaming else "earliest"
    elif starting.strip().lower() in ("earliest", "latest", "committed"):
        out["starting"] = starting.strip().lower()
        if out["starting"] == "latest" and not streaming:
            raise OptionError("startingOffsets", starting, "earliest, committed or JSON for a batch query")
    else:
        out["starting"] = _partition_json("startingOffsets", starting)
        latest = [f"{t}-{p}" for t, ps in out["starting"].items() for p, v in ps.items() if v == -1]
        if latest and not streaming:
            raise OptionError("startingOffsets", starting, f"no -1 (latest, for {latest[0]}) in a batch "
                              "query, as in Spark: a batch read starting at the end would read nothing")
    if out["starting"] == "committed" and not get("groupId"):
        raise OptionError("startingOffsets", starting, "committed only together with groupId")
    if (value := get("startingOffsetsByTimestamp")) is not None:
        out["starting_by_timestamp"] = _partition_json("startingOffsetsByTimestamp", value)
    if (value := get("startingTimestamp")) is not None:
        out["starting_timestamp"] = parse_positive_int("startingTimestamp", value, 0)
    if (value := get("startingOffsetsByTimestampStrategy")) is not None:
        if value.strip().lower() not in ("error", "latest"):
            raise OptionError("startingOffsetsByTimestampStrategy", value,
                              "error (fail when no offset has a timestamp at or after the one "
                              "given) or latest (start such a partition at its end)")
        out["starting_by_timestamp_strategy"] = value.strip().lower()

    for name in ("endingOffsets", "endingOffsetsByTimestamp", "endingTimestamp"):
        if streaming and (value := get(name)) is not None:
            raise OptionError(name, value, "only for batch queries (spark.read): a stream has no end")
    ending = get("endingOffsets")
    if ending is not None:
        if ending.strip().lower() == "latest":
            out["ending"] = "latest"
        elif ending.strip().lower() == "earliest":
            raise OptionError("endingOffsets", ending, "latest or per-partition JSON")
        else:
            out["ending"] = _partition_json("endingOffsets", ending)
            earliest = [f"{t}-{p}" for t, ps in out["ending"].items() for p, v in ps.items() if v == -2]
            if earliest:
                raise OptionError("endingOffsets", ending, f"no -2 (earliest, for {earliest[0]}), as in "
                                  "Spark: offsets, or -1 for latest")
    if (value := get("endingOffsetsByTimestamp")) is not None:
        out["ending_by_timestamp"] = _partition_json("endingOffsetsByTimestamp", value)
    if (value := get("endingTimestamp")) is not None:
        out["ending_timestamp"] = parse_positive_int("endingTimestamp", value, 0)

    if (value := get("failOnDataLoss")) is not None:
        out["fail_on_data_loss"] = parse_bool("failOnDataLoss", value)
    for name, attr, minimum in [("maxOffsetsPerTrigger", "max_offsets_per_trigger", 1),
                                ("minOffsetsPerTrigger", "min_offsets_per_trigger", 1),
                                ("minPartitions", "min_partitions", 1),
                                ("maxRecordsPerPartition", "max_records_per_partition", 1),
                                ("minRecordsPerPartition", "min_records_per_partition", 0),
                                ("maxOffsetBehind", "max_offset_behind", 1),
                                ("maxRetries", "max_retries", 0),
                                ("retryBackoffMs", "retry_backoff_ms", 0),
                                ("maxRetryBackoffMs", "max_retry_backoff_ms", 0),
                                ("kafkaConsumer.pollTimeoutMs", "poll_timeout_ms", 1),
                                ("fetchOffset.numRetries", "fetch_offset_num_retries", 0),
                                ("fetchOffset.retryIntervalMs", "fetch_offset_retry_interval_ms", 0)]:
        if (value := get(name)) is not None:
            out[attr] = parse_positive_int(name, value, minimum)
    if (value := get("maxTriggerDelay")) is not None:
        out["max_trigger_delay_ms"] = parse_duration_ms("maxTriggerDelay", value)
    if (out.get("min_offsets_per_trigger") and out.get("max_offsets_per_trigger")
            and out["min_offsets_per_trigger"] > out["max_offsets_per_trigger"]):
        raise OptionError("minOffsetsPerTrigger", out["min_offsets_per_trigger"],
                          f"at most maxOffsetsPerTrigger ({out['max_offsets_per_trigger']})")
    for name, attr in [("groupId", "group_id"), ("queryName", "query_name"),
                       ("deadLetterTopic", "dead_letter_topic")]:
        value = get(name)
        if value is not None:
            if not re.match(r"^[A-Za-z0-9._-]+$", value):
                raise OptionError(name, value, "ASCII letters, digits, '.', '_' and '-'")
            out[attr] = value
    if out.get("max_retry_backoff_ms", 60_000) < out.get("retry_backoff_ms", 1000):
        raise OptionError("maxRetryBackoffMs", out.get("max_retry_backoff_ms", 60_000),
                          f"at least retryBackoffMs ({out.get('retry_backoff_ms', 1000)}): the cap "
                          "of the backoff that starts there")
    if (value := get("outOfRangeReset")) is not None:
        if value.strip().lower() not in ("earliest", "latest"):
            raise OptionError("outOfRangeReset", value, "earliest or latest")
        if out.get("fail_on_data_loss", True):
            raise OptionError("outOfRangeReset", value, "only with failOnDataLoss=false (with "
                              "failOnDataLoss=true an out-of-range partition stops the query)")
        out["out_of_range_reset"] = value.strip().lower()
    if (value := get("groupIdPrefix")) is not None:
        out["group_id_prefix"] = value
    group_key = lower.get("kafka.group.id")
    if group_key is not None:
        out["kafka_group_id"] = opts[group_key]
    if (value := get("includeHeaders")) is not None:
        out["include_headers"] = parse_bool("includeHeaders", value)
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
