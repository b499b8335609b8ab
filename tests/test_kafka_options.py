"""The ``kafka.*`` options of the source and the sink: one table, nothing silently ignored."""

from __future__ import annotations

import doctest
import importlib

import pyarrow as pa
import pytest

from connector.client import Admin, Fetcher
from connector.client.columnar import iter_batch_headers
from connector.kafka_options import allowed, parse_kafka_options
from connector.sink.options import parse_sink_options
from connector.sink.writer import write_batches
from connector.source.options import OptionError, parse_source_options

SECURED = {"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "PLAIN",
           "kafka.sasl.username": "u", "kafka.sasl.password": "p"}


def test_both_sides_take_the_connection_settings_and_each_its_own() -> None:
    source, sink = set(allowed("source")), set(allowed("sink"))
    shared = {"kafka.security.protocol", "kafka.sasl.jaas.config", "kafka.ssl.ca.location",
              "kafka.request.timeout.ms", "kafka.client.id"}
    assert shared <= source & sink
    assert {"kafka.fetch.max.bytes", "kafka.max.partition.fetch.bytes"} <= source - sink
    assert {"kafka.acks", "kafka.linger.ms", "kafka.batch.size", "kafka.compression.type"} <= sink - source

    opts = {"kafka.bootstrap.servers": "h:1", "kafka.fetch.max.bytes": "1048576", **SECURED}
    parsed = parse_source_options({**opts, "subscribe": "t"}, streaming=True)
    assert parsed.client()["security.protocol"] == "SASL_SSL"  # reaches every client of the query
    assert "fetch.max.bytes" not in parsed.client() and parsed.kafka is not None
    assert parsed.kafka.fetcher()["fetch.max.bytes"] == "1048576"
    sink_options = parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "t", **SECURED})
    assert sink_options.client()["sasl.username"] == "u"


@pytest.mark.parametrize(("role", "name", "value", "says"), [
    ("sink", "kafka.acks", "1", "kafka.acks='1' is not allowed: all or -1"),
    ("sink", "kafka.acks", "0", "all or -1"),
    ("sink", "kafka.fetch.max.bytes", "100", "a client option pyq implements for the sink"),
    ("source", "kafka.linger.ms", "5", "a client option pyq implements for the source"),
    ("source", "kafka.sasl.kerberos.service.name", "kafka", "kafka.sasl.kerberos.service.name"),
    ("sink", "kafka.security.protocol", "SSL", None),
    ("sink", "kafka.compression.type", "brotli", "compression.type"),
    ("sink", "kafka.batch.size", "10", "kafka.batch.size='10' is not allowed"),
    ("sink", "kafka.linger.ms", "-1", "linger.ms"),
    ("source", "kafka.sasl.mechanism", "PLAIN", "sasl.mechanism is set but PLAINTEXT does not use it"),
])
def test_each_bad_option_is_refused_naming_it(role: str, name: str, value: str, says: str | None) -> None:
    opts = {"kafka.bootstrap.servers": "h:1", name: value}
    if says is None:  # allowed
        parse_kafka_options(opts, role)
        return
    with pytest.raises(OptionError, match=says.replace("(", r"\(").replace(")", r"\)")) as info:
        parse_kafka_options(opts, role)
    assert name in str(info.value)


def test_the_sink_takes_compression_from_either_name_but_not_two_different() -> None:
    base = {"kafka.bootstrap.servers": "h:1", "topic": "t"}
    assert parse_sink_options({**base, "kafka.compression.type": "zstd"}).compression == "zstd"
    assert parse_sink_options({**base, "compression.type": "lz4"}).compression == "lz4"
    with pytest.raises(OptionError, match="the same as compression.type"):
        parse_sink_options({**base, "compression.type": "lz4", "kafka.compression.type": "zstd"})


def _batches(bootstrap: str, topic: str, until: int) -> int:
    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        return sum(1 for rs in fetcher.fetch_record_sets(topic, 0, 0, until)
                   for _ in iter_batch_headers(rs, True))


def test_the_sink_honours_batch_size_linger_and_compression(shared_broker) -> None:
    bootstrap = shared_broker.bootstrap_servers
    rows = pa.record_batch({"value": pa.array([b"x" * 100] * 400, pa.binary())})
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        for t in ("opt-default", "opt-small", "opt-linger"):
            admin.create_topic(t, 1, 1)
    write_batches([rows], parse_sink_options({"kafka.bootstrap.servers": bootstrap,
                                              "topic": "opt-default"}), 0, 0)
    assert _batches(bootstrap, "opt-default", 400) == 1  # 40 KB fit one default batch
    write_batches([rows], parse_sink_options({"kafka.bootstrap.servers": bootstrap, "topic": "opt-small",
                                              "kafka.batch.size": "8192",
                                              "kafka.compression.type": "gzip"}), 0, 0)
    assert _batches(bootstrap, "opt-small", 400) >= 5  # about 8 KB each
    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        headers = [h for rs in fetcher.fetch_record_sets("opt-small", 0, 0, 400)
                   for _, h in iter_batch_headers(rs, True)]
    assert {h.attributes & 0x7 for h in headers} == {1}  # gzip
    # linger.ms=0: each Arrow batch goes out as it comes, instead of filling up across them
    small = [pa.record_batch({"value": pa.array([b"y" * 10] * 10, pa.binary())}) for _ in range(4)]
    write_batches(small, parse_sink_options({"kafka.bootstrap.servers": bootstrap, "topic": "opt-linger",
                                             "kafka.linger.ms": "0"}), 0, 0)
    assert _batches(bootstrap, "opt-linger", 40) == 4


@pytest.mark.parametrize("name", ["connector.client.properties",
                                  "connector.client.config", "connector.client.option_kinds",
                                  "broker_sim.network.listener",
                                  "broker_sim.controller.scram_credentials"])
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
