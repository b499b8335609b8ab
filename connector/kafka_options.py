"""The ``kafka.*`` options of the source and the sink: one table, checked once, shared.

A Spark job passes Kafka client settings as ``kafka.<name>`` options (Spark's Kafka
connector does the same). pyq accepts exactly the names its own client implements and
refuses every other at ``load()`` / ``save()`` / ``start()`` with the option, its value and
the allowed names, so nothing is silently ignored (a ``kafka.security.protocol`` pyq did not
understand would otherwise send credentials nowhere and data in the clear).

Which names each side takes is read from the client's declarations
(:mod:`connector.client.config`; ``docs/options.md`` lists them with their defaults and
rules), and each value is checked by the client's own parser:

* both: every option of :class:`~connector.client.config.ClientConfig` — bootstrap.servers
  (required), security.protocol, ssl.*, sasl.*, client.id, the timeouts and backoffs. These
  connection settings reach every client a query opens: the driver's admin client, the
  executors' fetchers and writers, failure reports and dead letters, so a secured cluster
  is reached the same secured way by all of them;
* the source: also :class:`~connector.client.config.FetcherConfig`'s own (fetch.max.wait.ms,
  fetch.min.bytes, fetch.max.bytes, max.partition.fetch.bytes, check.crcs,
  isolation.level: read_committed plans to the last stable offset and drops aborted data);
* the sink: also the producer options of :data:`SINK_ONLY` (acks — ``all`` / ``-1`` only,
  the sink is acks=all —, compression.type, linger.ms, batch.size — default 921600 bytes,
  in [1024, 67108864] —, delivery.timeout.ms, and transaction.timeout.ms: with exactlyOnce,
  how long a task's transaction may wait for the driver's commit). The producer's other
  options (retries, enable.idempotence, transactional.id, buffers) the sink sets itself.

The Kafka settings Spark's connector refuses are refused here with Spark's reason
(:data:`REFUSED`): ``auto.offset.reset``, ``enable.auto.commit``, ``interceptor.classes``
and the (de)serializers. ``kafka.partitioner.class`` (sink) is a Java class pyq cannot run:
only Kafka's default partitioner is accepted, since it is what the sink does anyway (the
``partition`` column, else murmur2 of the key); any other is refused. ``kafka.group.id`` is
an option of the source itself (:mod:`connector.source.options`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from broker_sim.common.options import declared
from connector.client.config import ClientConfig, FetcherConfig, ProducerConfig
from connector.client.errors import ConfigError

from .option_values import OptionError

#: The producer options the sink takes besides the connection settings (each one a
#: :class:`ProducerConfig` declaration: a name it does not declare fails at import).
SINK_ONLY = tuple(declared(ProducerConfig)[name].name for name in (
    "acks", "compression.type", "linger.ms", "batch.size", "delivery.timeout.ms",
    "transaction.timeout.ms"))
SINK_DEFAULT_BATCH_BYTES = 900 * 1024


#: Kafka settings refused as Spark's connector refuses them, with the reason.
REFUSED = {
    "auto.offset.reset": "not supported, as in Spark: startingOffsets says where a new query "
                         "starts, and with failOnDataLoss=false outOfRangeReset where a "
                         "partition whose next offset left the log resumes",
    "enable.auto.commit": "not supported, as in Spark: the source commits nothing by itself; "
                          "pyq's groupId option commits a query's progress to a group",
    "interceptor.classes": "not supported, as in Spark: interceptors could change the records "
                           "(and pyq cannot load Java classes)",
    "key.deserializer": "not supported, as in Spark: keys are read as bytes; cast them with "
                        "DataFrame operations",
    "value.deserializer": "not supported, as in Spark: values are read as bytes; cast them "
                          "with DataFrame operations",
    "key.serializer": "not supported, as in Spark: a string or binary key column is written "
                      "as its bytes",
    "value.serializer": "not supported, as in Spark: a string or binary value column is "
                        "written as its bytes",
}
#: The one ``partitioner.class`` the sink accepts: what it does anyway.
DEFAULT_PARTITIONER = "org.apache.kafka.clients.producer.internals.DefaultPartitioner"


def _connection_names() -> set[str]:
    return set(declared(ClientConfig)) - {"bootstrap.servers"}


def _source_names() -> set[str]:
    return set(declared(FetcherConfig)) - {"bootstrap.servers"}


def allowed(role: str) -> list[str]:
    """Every ``kafka.*`` name the source (``role="source"``) or the sink accepts."""
    names = _source_names() if role == "source" else _connection_names() | set(SINK_ONLY)
    return sorted(["kafka.bootstrap.servers", *(f"kafka.{n}" for n in names)])


def _check_servers(raw: str | None) -> str:
    if not raw or not all(re.match(r"^[^:,\s]+:\d+$", s.strip()) for s in raw.split(",")):
        raise OptionError("kafka.bootstrap.servers", raw, "host:port[,host:port...] (required)")
    return raw


@dataclass(frozen=True)
class KafkaOptions:
    """The checked ``kafka.*`` options of one query (names without the ``kafka.`` prefix)."""

    bootstrap_servers: str
    connection: dict[str, str] = field(default_factory=dict)  # every client of the query
    specific: dict[str, str] = field(default_factory=dict)    # the role's own (fetch or sink)

    def client(self, **extra: Any) -> dict[str, Any]:
        """Options for an admin client, producer or sync client of this query."""
        return {**self.connection, **extra, "bootstrap.servers": self.bootstrap_servers}

    def fetcher(self) -> dict[str, Any]:
        return {**self.specific, **self.client()}


def parse_kafka_options(opts: Mapping[str, str], role: str) -> KafkaOptions:
    """Check every ``kafka.*`` option of ``opts`` for ``role`` ("source" or "sink")."""
    given = {k: str(v) for k, v in opts.items() if k.lower().startswith("kafka.")}
    lower = {k.lower(): k for k in given}
    servers = _check_servers(given.get(lower.get("kafka.bootstrap.servers", ""), None))
    names = {n.lower(): n for n in (_source_names() if role == "source"
                                    else _connection_names() | set(SINK_ONLY))}
    connection_names = _connection_names()
    connection: dict[str, str] = {}
    specific: dict[str, str] = {}
    for key, value in given.items():
        bare = key[len("kafka."):]
        if bare.lower() == "bootstrap.servers":
            continue
        if bare.lower() in REFUSED:
            raise OptionError(key, value, REFUSED[bare.lower()])
        if bare.lower() == "partitioner.class" and role == "sink":
            if value.strip() != DEFAULT_PARTITIONER:
                raise OptionError(key, value, f"only {DEFAULT_PARTITIONER}: pyq cannot run a Java "
                                  "partitioner; it places a row by its partition column, else by "
                                  "murmur2 of its key (Kafka's default partitioner), else round "
                                  "robin, so add a partition column to choose partitions yourself")
            continue
        name = names.get(bare.lower())
        if name is None:
            raise OptionError(key, value, f"a client option pyq implements for the {role}: "
                                          + ", ".join(n for n in allowed(role)))
        (connection if name in connection_names else specific)[name] = value
    try:
        if role == "source":
            FetcherConfig.from_options({"bootstrap.servers": "127.0.0.1:9092", **connection, **specific})
        else:
            _check_sink(connection, specific)
    except OptionError:
        raise
    except ConfigError as e:
        key = next((k for k in given if k[len("kafka."):] in str(e)), next(iter(given)))
        raise OptionError(key, given[key], str(e)) from None
    return KafkaOptions(servers, connection, specific)


def _check_sink(connection: dict[str, str], specific: dict[str, str]) -> None:
    acks = specific.get("acks")
    if acks is not None and acks.strip().lower() not in ("all", "-1"):
        raise OptionError("kafka.acks", acks, "all or -1: the sink always waits for the in-sync "
                                              "replicas (acks=all), so a row acknowledged is never lost")
    producer = {k: v for k, v in specific.items() if k != "batch.size"}
    ProducerConfig.from_options({"bootstrap.servers": "127.0.0.1:9092", **connection, **producer})
    if "batch.size" in specific:
        raw = specific["batch.size"]
        if not raw.strip().isdigit() or not 1024 <= int(raw) <= 64 * 1024 * 1024:
            raise OptionError("kafka.batch.size", raw, "an integer of bytes in [1024, 67108864]")


def connection_options(bootstrap_servers: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Client options from a bootstrap address and connection settings given with or
    without the ``kafka.`` prefix (what :func:`connector.source.failures.report_failed`
    takes from a user)."""
    out = {k.removeprefix("kafka."): v for k, v in (options or {}).items()}
    out["bootstrap.servers"] = bootstrap_servers
    return out
