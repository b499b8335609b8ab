"""Sink options and input checks, all done on the driver before any row is written.

| option | meaning | default |
|---|---|---|
| kafka.bootstrap.servers | ``host:port[,...]`` | required |
| topic | target topic for every row (wins over a ``topic`` column) | the ``topic`` column |
| exactlyOnce | a retried task or restarted query never writes a row of a batch twice | ``false`` |
| queryName | with exactlyOnce: the stable identity of this pipeline's writes | required with exactlyOnce |
| compression.type | none, gzip, snappy, lz4, zstd | none |

Every write uses acks=all. Input schema: ``value`` (string or binary) is required;
``key`` (string or binary), ``topic`` (string), ``partition`` (int) and ``headers``
(array<struct<key string, value binary>>) are optional; any other column is an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..source.options import OptionError, parse_bool

TEXT_OR_BINARY = ("string", "binary")


@dataclass(frozen=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None = None
    exactly_once: bool = False
    query_name: str | None = None
    compression: str = "none"


KNOWN = {"kafka.bootstrap.servers", "topic", "exactlyOnce", "queryName", "compression.type",
         "checkpointLocation", "path"}


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    canonical = {k.lower(): k for k in KNOWN}  # Spark may hand options over lower-cased
    opts = {canonical.get(k.lower(), k): str(v) for k, v in options.items()}
    for k, v in opts.items():
        if k not in KNOWN and not k.startswith("kafka."):
            raise OptionError(k, v, "a known pyq sink option: " + ", ".join(sorted(KNOWN)))
    bootstrap = opts.get("kafka.bootstrap.servers")
    if not bootstrap or not all(re.match(r"^[^:,\s]+:\d+$", s.strip()) for s in bootstrap.split(",")):
        raise OptionError("kafka.bootstrap.servers", bootstrap, "host:port[,host:port...] (required)")
    exactly_once = parse_bool("exactlyOnce", opts["exactlyOnce"]) if "exactlyOnce" in opts else False
    query_name = opts.get("queryName")
    if exactly_once and not query_name:
        raise OptionError("queryName", query_name, "required with exactlyOnce=true (the stable "
                          "identity that lets the broker recognise a replayed write)")
    compression = opts.get("compression.type", "none").lower()
    if compression not in ("none", "gzip", "snappy", "lz4", "zstd"):
        raise OptionError("compression.type", compression, "none, gzip, snappy, lz4 or zstd")
    return SinkOptions(bootstrap, opts.get("topic"), exactly_once, query_name, compression)


def check_schema(schema: Any, options: SinkOptions) -> None:
    """Refuse input the sink cannot write, naming the column and what it must be."""
    types = {f.name: f.dataType.simpleString() for f in schema.fields}
    if "value" not in types:
        raise ValueError(f"pyq sink: the input has no 'value' column (columns: {sorted(types)})")
    rules = {"value": TEXT_OR_BINARY, "key": TEXT_OR_BINARY, "topic": ("string",), "partition": ("int",),
             "headers": ("array<struct<key:string,value:binary>>",)}
    for name, type_ in types.items():
        if name not in rules:
            raise ValueError(f"pyq sink: column {name!r} is not one of {sorted(rules)}")
        if type_ not in rules[name]:
            raise ValueError(f"pyq sink: column {name!r} has type {type_}; it must be "
                             f"{' or '.join(rules[name])}")
    if options.topic is None and "topic" not in types:
        raise ValueError("pyq sink: no topic: set the 'topic' option or provide a 'topic' column")
