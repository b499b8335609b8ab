"""The source's options: parsed from Spark's strings and validated once, in one place.

Every option arrives as a string. :func:`parse_source_options` turns them into a typed
:class:`SourceOptions` or raises :class:`OptionError` naming the option, the value given and
what is allowed, at ``load()`` (batch) or ``start()`` (streaming) time, before any data
moves.

| option | meaning | default |
|---|---|---|
| kafka.bootstrap.servers | ``host:port[,host:port...]`` | required |
| subscribe / subscribePattern / assign | topics: a list, a regex, or ``{"t": [0, 1]}``; exactly one | required |
| startingOffsets | ``earliest``, ``latest``, ``committed`` (needs groupId) or ``{"t": {"0": 42}}`` (-2 earliest, -1 latest) | streaming ``latest``, batch ``earliest`` |
| startingOffsetsByTimestamp | ``{"t": {"0": 1700000000000}}``, wins over startingOffsets | |
| startingTimestamp | one timestamp (ms) for every partition, wins over both | |
| endingOffsets | batch only: ``latest`` or per-partition JSON | ``latest`` |
| failOnDataLoss | stop when offsets were deleted (retention) or truncated | ``true`` |
| maxOffsetsPerTrigger / minOffsetsPerTrigger | records per micro-batch, at most / at least | none |
| maxTriggerDelay | how long minOffsetsPerTrigger may hold a batch back (``15m``, ``30s``, ``500ms``) | ``15m`` |
| minPartitions / maxRecordsPerPartition | split ranges into more Spark tasks | none |
| minRecordsPerPartition | pack ranges smaller than this, of partitions led by the same broker, into one Spark task until it holds this many records (``0``: one task per range; off when minPartitions is set) | ``10000`` |
| maxOffsetBehind | skip ahead when a partition lags more than this | none |
| groupId | consumer group the query commits its progress to | none |
| queryName | the name stored with committed offsets | groupId |
| maxRetries / retryBackoffMs | failed-record redeliveries and their first backoff | ``3`` / ``1000`` |
| deadLetterTopic | where records go after maxRetries | none (dropped, counted) |
| includeHeaders | add the ``headers`` column | ``false`` |
| kafka.* | client settings pyq's client implements (security, timeouts, fetch sizes: the table in :mod:`connector.kafka_options`) for the driver, every executor, failure reports and dead letters | client defaults |
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from connector.kafka_options import KafkaOptions


class OptionError(ValueError):
    """An invalid source or sink option; the message names the option, value and rule."""

    def __init__(self, option: str, value: object, allowed: str) -> None:
        super().__init__(f"pyq option {option}={value!r} is not allowed: {allowed}")
        self.option = option
        self.value = value


_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)?\s*$")
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, None: 1}


def parse_duration_ms(option: str, raw: str) -> int:
    m = _DURATION.match(raw)
    if not m:
        raise OptionError(option, raw, "a duration such as 500ms, 30s, 15m or 1h")
    return int(m.group(1)) * _UNITS_MS[m.group(2)]


def parse_bool(option: str, raw: str) -> bool:
    low = raw.strip().lower()
    if low not in ("true", "false"):
        raise OptionError(option, raw, "true or false")
    return low == "true"


def parse_positive_int(option: str, raw: str, minimum: int = 1) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise OptionError(option, raw, f"an integer of at least {minimum}") from None
    if value < minimum:
        raise OptionError(option, raw, f"an integer of at least {minimum}")
    return value


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
}


def check_names(options: Mapping[str, str]) -> KafkaOptions:
    """The checks that do not depend on batch or streaming: every option name is known and
    every ``kafka.*`` option is one the client implements (run at ``load()``)."""
    from connector.kafka_options import parse_kafka_options

    opts = {k: str(v) for k, v in options.items()}
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
    if out["starting"] == "committed" and not get("groupId"):
        raise OptionError("startingOffsets", starting, "committed only together with groupId")
    if (value := get("startingOffsetsByTimestamp")) is not None:
        out["starting_by_timestamp"] = _partition_json("startingOffsetsByTimestamp", value)
    if (value := get("startingTimestamp")) is not None:
        out["starting_timestamp"] = parse_positive_int("startingTimestamp", value, 0)

    ending = get("endingOffsets")
    if ending is not None:
        if streaming:
            raise OptionError("endingOffsets", ending, "only for batch queries (spark.read)")
        if ending.strip().lower() == "latest":
            out["ending"] = "latest"
        elif ending.strip().lower() == "earliest":
            raise OptionError("endingOffsets", ending, "latest or per-partition JSON")
        else:
            out["ending"] = _partition_json("endingOffsets", ending)

    if (value := get("failOnDataLoss")) is not None:
        out["fail_on_data_loss"] = parse_bool("failOnDataLoss", value)
    for name, attr, minimum in [("maxOffsetsPerTrigger", "max_offsets_per_trigger", 1),
                                ("minOffsetsPerTrigger", "min_offsets_per_trigger", 1),
                                ("minPartitions", "min_partitions", 1),
                                ("maxRecordsPerPartition", "max_records_per_partition", 1),
                                ("minRecordsPerPartition", "min_records_per_partition", 0),
                                ("maxOffsetBehind", "max_offset_behind", 1),
                                ("maxRetries", "max_retries", 0),
                                ("retryBackoffMs", "retry_backoff_ms", 0)]:
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
    if (value := get("includeHeaders")) is not None:
        out["include_headers"] = parse_bool("includeHeaders", value)
    return SourceOptions(**out)
