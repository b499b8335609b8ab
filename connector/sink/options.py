"""Sink options and input checks, all done on the driver before any row is written.

Each option is declared once, as a field of :class:`SinkOptions` (name, kind, default,
meaning: ``broker_sim.common.options``); ``docs/options.md`` lists them all with their rules,
generated from the declarations. The ``kafka.*`` client settings are
:mod:`connector.kafka_options`' (security and timeouts for every connection, and
``kafka.acks`` (``all`` only), ``kafka.partitioner.class`` (Kafka's default partitioner
only), ``kafka.linger.ms``, ``kafka.batch.size``, ``kafka.delivery.timeout.ms``,
``kafka.transaction.timeout.ms``: exactlyOnce's transactions must outlive a micro-batch from
its first task to the driver's commit).

Every write uses acks=all. ``valueFormat``/``keyFormat=avro`` and their registry options:
:mod:`connector.sink.formats`. Input schema: ``value`` (string or binary) is required;
``key`` (string or binary), ``topic`` (string), ``partition`` (int) and ``headers``
(array<struct<key string, value binary>>) are optional; any other column is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from broker_sim.common import options as o
from broker_sim.common.options import option

from ..kafka_options import SINK_DEFAULT_BATCH_BYTES, KafkaOptions, parse_kafka_options
from ..option_values import OptionError
from .formats import OPTIONS as FORMAT_OPTIONS
from .formats import parse_sink_formats

TEXT_OR_BINARY = ("string", "binary")
COMPRESSION = o.choice(("none", "gzip", "snappy", "lz4", "zstd"),
                       allowed="none, gzip, snappy, lz4 or zstd")


@dataclass(frozen=True)
class SinkOptions:
    """The options of ``df.write`` / ``df.writeStream`` ``.format("pyq")``, each declared
    once; ``kafka.*`` client settings are :mod:`connector.kafka_options`' (the last four
    fields come from them), the formats' :mod:`.formats`'."""

    bootstrap_servers: str = option(
        "kafka.bootstrap.servers", kind=o.STRING,
        doc="`host:port[,host:port...]` of the cluster (required)")
    topic: str | None = option(
        "topic", None, o.OPTIONAL_STRING, default_doc="the `topic` column",
        doc="the topic of every row (wins over a `topic` column)")
    exactly_once: bool = option(
        "exactlyOnce", False, o.BOOL,
        doc="each micro-batch written in Kafka transactions the driver commits together")
    query_name: str | None = option(
        "queryName", None, o.OPTIONAL_STRING, default_doc="required with exactlyOnce",
        doc="with exactlyOnce: the stable identity of the query's transactions")
    compression: str = option(
        "compression.type", "none", COMPRESSION,
        doc="the record batches' compression (as `kafka.compression.type`)")
    kafka: KafkaOptions | None = None
    #: How long a partial batch waits for more rows (None: until it is full or the task ends).
    linger_ms: int | None = None
    batch_bytes: int = SINK_DEFAULT_BATCH_BYTES
    delivery_timeout_ms: int = 120_000
    transaction_timeout_ms: int = 60_000
    #: valueFormat/keyFormat=avro: a :class:`.formats.SinkFormats`
    formats: Any = None
    include_headers: bool = option(
        "includeHeaders", False, o.BOOL,
        doc="accepted as Spark's sink does, and as there without effect: a `headers` column "
        "is written whenever the input has one")
    checkpoint_location: str | None = option(
        "checkpointLocation", None, o.OPTIONAL_STRING,
        doc="Spark's own option (the query's checkpoint); Spark passes it to every sink")
    path: str | None = option(
        "path", None, o.OPTIONAL_STRING,
        doc="`save(path)`'s argument, accepted as Spark's Kafka sink does; pyq writes to topics")

    def client(self) -> dict[str, object]:
        """Options for the sink's connections: bootstrap servers plus the connection
        settings (security, timeouts) given as ``kafka.*``."""
        if self.kafka is None:
            return {"bootstrap.servers": self.bootstrap_servers}
        return self.kafka.client()


#: Every option name of the sink (the formats' and the registry's included).
KNOWN = {*o.declared(SinkOptions), *FORMAT_OPTIONS}


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """The declared options parsed, then the rules between them."""
    canonical = {k.lower(): k for k in KNOWN}  # Spark may hand options over lower-cased
    opts = {canonical.get(k.lower(), k): str(v) for k, v in options.items()}
    for k, v in opts.items():
        if k not in KNOWN and not k.lower().startswith("kafka."):
            raise OptionError(k, v, "a known pyq sink option: " + ", ".join(sorted(KNOWN)))
    kafka = parse_kafka_options(opts, "sink")
    out: dict[str, Any] = {}
    for name, spec in o.declared(SinkOptions).items():
        if name in opts and name != "kafka.bootstrap.servers":
            try:
                out[spec.attr] = o.parse_value(spec, opts[name])
            except ValueError as e:
                raise OptionError(name, opts[name], str(e)) from None
    if out.get("exactly_once") and not out.get("query_name"):
        raise OptionError("queryName", out.get("query_name"), "required with exactlyOnce=true (the "
                          "stable identity of the query's transactions, which lets a restarted "
                          "query resolve what its last run left open)")
    compression = out.get("compression", "none")
    specific = kafka.specific
    if "compression.type" in specific:
        given = specific["compression.type"].strip().lower()
        if "compression.type" in opts and given != compression:
            raise OptionError("kafka.compression.type", given,
                              f"the same as compression.type ({compression}), or only one of them")
        out["compression"] = given
    return SinkOptions(
        bootstrap_servers=kafka.bootstrap_servers, kafka=kafka, **out,
        linger_ms=int(specific["linger.ms"]) if "linger.ms" in specific else None,
        batch_bytes=int(specific.get("batch.size", SINK_DEFAULT_BATCH_BYTES)),
        delivery_timeout_ms=int(specific.get("delivery.timeout.ms", 120_000)),
        transaction_timeout_ms=int(specific.get("transaction.timeout.ms", 60_000)),
        formats=parse_sink_formats(opts, out.get("topic")))


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
