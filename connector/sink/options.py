"""Sink options and input checks, all done on the driver before any row is written.

| option | meaning | default |
|---|---|---|
| kafka.bootstrap.servers | ``host:port[,...]`` | required |
| topic | target topic for every row (wins over a ``topic`` column) | the ``topic`` column |
| exactlyOnce | each micro-batch is written in Kafka transactions the driver commits together: read_committed readers see a batch's rows once, all at once (:mod:`.transactions`) | ``false`` |
| queryName | with exactlyOnce: the stable identity of this pipeline's writes (names its transactional ids ``pyq-sink-<queryName>-<partition>`` and its decision group ``pyq-sink-<queryName>``) | required with exactlyOnce |
| compression.type | none, gzip, snappy, lz4, zstd (``kafka.compression.type`` is the same) | none |
| includeHeaders | listed among the sink options of Spark's guide, but Spark's sink never reads it: a ``headers`` column is written whenever the input has one. pyq does the same (the value must be true or false) | ``false`` |
| kafka.* | the client options of the table in :mod:`connector.kafka_options`: security and timeouts for every connection, and ``kafka.acks`` (``all`` only), ``kafka.partitioner.class`` (Kafka's default partitioner only: :mod:`connector.kafka_options`), ``kafka.linger.ms``, ``kafka.batch.size``, ``kafka.delivery.timeout.ms``, ``kafka.transaction.timeout.ms`` (exactlyOnce: longer than a micro-batch from its first task to the driver's commit; default 60000) | |

Every write uses acks=all. ``valueFormat``/``keyFormat=avro`` and their registry options:
:mod:`connector.sink.formats`. Input schema: ``value`` (string or binary) is required;
``key`` (string or binary), ``topic`` (string), ``partition`` (int) and ``headers``
(array<struct<key string, value binary>>) are optional; any other column is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..kafka_options import SINK_DEFAULT_BATCH_BYTES, KafkaOptions, parse_kafka_options
from ..option_values import OptionError, parse_bool
from .formats import OPTIONS as FORMAT_OPTIONS
from .formats import parse_sink_formats

TEXT_OR_BINARY = ("string", "binary")


@dataclass(frozen=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None = None
    exactly_once: bool = False
    query_name: str | None = None
    compression: str = "none"
    kafka: KafkaOptions | None = None
    #: How long a partial batch waits for more rows (None: until it is full or the task ends).
    linger_ms: int | None = None
    batch_bytes: int = SINK_DEFAULT_BATCH_BYTES
    delivery_timeout_ms: int = 120_000
    transaction_timeout_ms: int = 60_000
    #: valueFormat/keyFormat=avro: a :class:`.formats.SinkFormats`
    formats: Any = None

    def client(self) -> dict[str, object]:
        """Options for the sink's connections: bootstrap servers plus the connection
        settings (security, timeouts) given as ``kafka.*``."""
        if self.kafka is None:
            return {"bootstrap.servers": self.bootstrap_servers}
        return self.kafka.client()


KNOWN = {"kafka.bootstrap.servers", "topic", "exactlyOnce", "queryName", "compression.type",
         "checkpointLocation", "path", "includeHeaders", *FORMAT_OPTIONS}


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    canonical = {k.lower(): k for k in KNOWN}  # Spark may hand options over lower-cased
    opts = {canonical.get(k.lower(), k): str(v) for k, v in options.items()}
    for k, v in opts.items():
        if k not in KNOWN and not k.lower().startswith("kafka."):
            raise OptionError(k, v, "a known pyq sink option: " + ", ".join(sorted(KNOWN)))
    kafka = parse_kafka_options(opts, "sink")
    bootstrap = kafka.bootstrap_servers
    exactly_once = parse_bool("exactlyOnce", opts["exactlyOnce"]) if "exactlyOnce" in opts else False
    if "includeHeaders" in opts:  # Spark's sink ignores it: a headers column is always written
        parse_bool("includeHeaders", opts["includeHeaders"])
    query_name = opts.get("queryName")
    if exactly_once and not query_name:
        raise OptionError("queryName", query_name, "required with exactlyOnce=true (the stable "
                          "identity of the query's transactions, which lets a restarted query "
                          "resolve what its last run left open)")
    compression = opts.get("compression.type", "none").lower()
    if compression not in ("none", "gzip", "snappy", "lz4", "zstd"):
        raise OptionError("compression.type", compression, "none, gzip, snappy, lz4 or zstd")
    specific = kafka.specific
    if "compression.type" in specific:
        given = specific["compression.type"].strip().lower()
        if "compression.type" in opts and given != compression:
            raise OptionError("kafka.compression.type", given,
                              f"the same as compression.type ({compression}), or only one of them")
        compression = given
    return SinkOptions(
        bootstrap, opts.get("topic"), exactly_once, query_name, compression, kafka,
        linger_ms=int(specific["linger.ms"]) if "linger.ms" in specific else None,
        batch_bytes=int(specific.get("batch.size", SINK_DEFAULT_BATCH_BYTES)),
        delivery_timeout_ms=int(specific.get("delivery.timeout.ms", 120_000)),
        transaction_timeout_ms=int(specific.get("transaction.timeout.ms", 60_000)),
        formats=parse_sink_formats(opts, opts.get("topic")))


def check_schema(schema: Any, options: SinkOptions) -> None:
    """Refuse input the sink cannot write, naming the column and what it must be."""
    types = {f.name: f.dataType.simpleString() for f in schema.fields}
    if "value" not in types:
        raise ValueError(f"pyq sink: the input has no 'value' column (columns: {sorted(types)})")
    rules = {"value": TEXT_OR_BINARY, "key": TEXT_OR_BINARY, "topic": ("string",), "partition": ("int",),
             "headers": ("array<struct<key:string,value:binary>>",)}
    encoded = options.formats.writers if options.formats is not None else {}
    for name, type_ in types.items():
        if name in encoded:
            if not type_.startswith("struct<"):
                raise ValueError(f"pyq sink: column {name!r} has type {type_}; with "
                                 f"{name}Format={options.formats.formats[name]} it must be a "
                                 f"struct (its fields the record's, encoded with "
                                 f"{encoded[name].description})")
            continue
        if name not in rules:
            raise ValueError(f"pyq sink: column {name!r} is not one of {sorted(rules)}")
        if type_ not in rules[name]:
            raise ValueError(f"pyq sink: column {name!r} has type {type_}; it must be "
                             f"{' or '.join(rules[name])}")
    if options.topic is None and "topic" not in types:
        raise ValueError("pyq sink: no topic: set the 'topic' option or provide a 'topic' column")
